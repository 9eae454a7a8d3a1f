import Foundation
import Testing
@testable import Switchboard
import SwitchboardTestSupport

/// A download into a directory takes the name the server gives, but never a file already there: the name gets a
/// number, as browsers do (the existing file was replaced, on both engines). A `.file` destination, named by the
/// caller, is still replaced.
@Suite struct DownloadNameTests {
    static let content = Data("the report\n".utf8)

    static func server() throws -> LoopbackServer {
        try LoopbackServer { _ in
            ServerResponse(
                headers: [
                    ("Content-Type", "text/plain"), ("Content-Disposition", "attachment; filename=\"report.txt\""),
                ],
                body: content)
        }
    }

    @Test(arguments: bothEngines)
    func aDownloadIntoADirectoryNeverReplacesAFileThere(engineName: String) async throws {
        let server = try Self.server()
        defer { server.stop() }
        let center = try loopbackCenter(engineName, server: server)
        let scratch = Scratch()
        let directory = scratch.file("downloads")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let mine = Data("mine, not the server's\n".utf8)
        try mine.write(to: directory.appendingPathComponent("report.txt"))
        var names: [String] = []
        for _ in 0..<2 {
            let response = try await center.send { request in
                request.kind = .download
                request.api = "report"
                request.destination = .directory(directory)
            }
            let file = try #require(response.fileURL, "\(engineName)")
            names.append(file.lastPathComponent)
            #expect(try Data(contentsOf: file) == Self.content, "\(engineName)")
        }
        #expect(names == ["report (1).txt", "report (2).txt"], "\(engineName)")
        #expect(try Data(contentsOf: directory.appendingPathComponent("report.txt")) == mine, "\(engineName)")
        let left = try FileManager.default.contentsOfDirectory(atPath: directory.path).sorted()
        #expect(left == ["report (1).txt", "report (2).txt", "report.txt"], "\(engineName): \(left)")
    }

    @Test(arguments: bothEngines)
    func aDownloadIntoANamedFileReplacesIt(engineName: String) async throws {
        let server = try Self.server()
        defer { server.stop() }
        let scratch = Scratch()
        let file = scratch.file("named.txt")
        try Data("old\n".utf8).write(to: file)
        let response = try await loopbackCenter(engineName, server: server).send { request in
            request.kind = .download
            request.api = "report"
            request.destination = .file(file)
        }
        #expect(response.fileURL == file)
        #expect(try Data(contentsOf: file) == Self.content, "\(engineName)")
    }

    @Test func aNumberGoesBeforeTheLastExtension() {
        #expect(DownloadPlan.numbered("photo.jpg", 1) == "photo (1).jpg")
        #expect(DownloadPlan.numbered("notes", 2) == "notes (2)")
        #expect(DownloadPlan.numbered("archive.tar.gz", 3) == "archive.tar (3).gz")
        #expect(DownloadPlan.numbered(".hidden", 1) == ".hidden (1)")
    }
}
