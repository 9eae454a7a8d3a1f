import Foundation
import Testing
@testable import Switchboard
import SwitchboardTestSupport

/// A resumable download keeps its partial file beside its destination (named after it, or into a directory after the
/// URL), so that a later download continues from it; two running at once would share it. A second download of another
/// URL to the same file removed the first's partial file, and the first failed with "the download has 1062912 of
/// 4000000 bytes" (finishing just after the second had written all of its own, it took the second's file for its
/// own); two of one URL whose content changed between them wrote both versions into one file. The second is refused
/// before anything is sent, the same way on both engines, and the partial file is free again once the first ends.
@Suite struct SharedPartialFileTests {
    static let length = 4_000_000

    @Test(arguments: bothEngines, ["file", "file spelled otherwise", "directory"])
    func aSecondResumableDownloadIntoTheSamePartialFileIsRefused(engineName: String, into: String) async throws {
        let paths = Locked<[String]>([])
        let server = try LoopbackServer { request in
            paths.withLock { $0.append(request.path) }
            return Httpbin.route(request)
        }
        defer { server.stop() }
        let center = try loopbackCenter(engineName, server: server)
        let scratch = Scratch()
        let directory = scratch.file("downloads")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let target = directory.appendingPathComponent("out.bin")
        // The same file by another path: `downloads/../downloads/out.bin`.
        let otherSpelling = directory.appendingPathComponent("..").appendingPathComponent("downloads")
            .appendingPathComponent("out.bin")
        // Into one file, two URLs; into a directory, one URL (its partial file is named after the URL).
        let intoFile = into != "directory"
        let first = "files/\(Self.length)?pause_at=1000000&pause=0.5"
        let second = intoFile ? "files/\(Self.length)?seed=2" : first
        @Sendable func download(_ api: String, to file: URL) async -> Result<Response, HTTPError> {
            do {
                return .success(
                    try await center.send { request in
                        request.kind = .download
                        request.api = api
                        request.resumable = true
                        request.destination = intoFile ? .file(file) : .directory(directory)
                    })
            } catch {
                return .failure(error)
            }
        }
        async let running = download(first, to: target)
        // The first has its partial file once the server has its request.
        await waitUntil { paths.snapshot.count == 1 }
        let refused = await download(second, to: into == "file" ? target : otherSpelling)
        guard case .failure(let error) = refused else {
            Issue.record("\(engineName), \(into): the second download was not refused")
            return
        }
        #expect(error.code == .fileSystem)
        #expect(error.message.contains("another resumable download into"), "\(error.message)")
        #expect(paths.snapshot.count == 1, "the refused download sent nothing")
        let finished = try await running.get()
        let expected = GeneratedContent(seed: 1).bytes(offset: 0, count: Self.length)
        #expect(try Data(contentsOf: try #require(finished.fileURL)) == expected)
        // Free again once the first ended: the same download now runs, to its own bytes.
        let again = try await download(second, to: target).get()
        let secondSeed: UInt64 = intoFile ? 2 : 1
        let secondBytes = GeneratedContent(seed: secondSeed).bytes(offset: 0, count: Self.length)
        #expect(try Data(contentsOf: try #require(again.fileURL)) == secondBytes)
    }
}
