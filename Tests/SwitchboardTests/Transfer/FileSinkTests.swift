import Foundation
import Testing
@testable import Switchboard

/// `EngineRequest.fileSink(for:)`, the public way an engine writes a download's body where the built-in engines do.
@Suite struct FileSinkTests {
    private func folder() throws -> URL {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("filesink-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        return folder
    }

    private func request(to file: URL, offset: Int64 = 0) -> EngineRequest {
        var request = EngineRequest(url: URL(string: "https://files.example.com/blob")!)
        request.destination = .file(file, offset: offset)
        return request
    }

    private func head(_ status: Int, _ headers: HTTPHeaders = [:]) -> EngineResponse {
        EngineResponse(status: status, url: nil, headers: headers, body: Data())
    }

    @Test func aTwoHundredReplacesTheFile() throws {
        let folder = try folder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let file = folder.appendingPathComponent("blob")
        try Data("old content, longer than the new".utf8).write(to: file)
        let sink = try #require(try request(to: file, offset: 5).fileSink(for: head(200)))
        try sink.write(Data("new".utf8))
        #expect(try sink.close() == 3)
        #expect(try Data(contentsOf: file) == Data("new".utf8))
    }

    @Test func aTwoHundredSixContinuesFromTheOffset() throws {
        let folder = try folder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let file = folder.appendingPathComponent("blob")
        try Data("0123456789junk".utf8).write(to: file)
        let sink = try #require(
            try request(to: file, offset: 10).fileSink(
                for: head(206, ["Content-Range": "bytes 10-14/15"]), synchronous: true))
        try sink.write(Data("abcde".utf8))
        #expect(try sink.close() == 15)
        #expect(try String(contentsOf: file, encoding: .utf8) == "0123456789abcde")
    }

    @Test func aTwoHundredSixFromAnotherOffsetIsRefusedAndTheFileKept() throws {
        let folder = try folder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let file = folder.appendingPathComponent("blob")
        try Data("0123456789".utf8).write(to: file)
        #expect {
            _ = try request(to: file, offset: 10).fileSink(for: head(206, ["Content-Range": "bytes 0-14/15"]))
        } throws: { error in
            (error as? HTTPError)?.code == .transport
        }
        #expect(try String(contentsOf: file, encoding: .utf8) == "0123456789")
    }

    @Test func otherStatusesAndMemoryDestinationsKeepTheBodyInMemory() throws {
        let folder = try folder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let file = folder.appendingPathComponent("blob")
        #expect(try request(to: file).fileSink(for: head(404)) == nil)
        #expect(!FileManager.default.fileExists(atPath: file.path), "the file is not touched")
        let inMemory = EngineRequest(url: URL(string: "https://files.example.com/blob")!)
        #expect(try inMemory.fileSink(for: head(200)) == nil)
    }

    @Test func aFileThatCannotBeOpenedIsAFileSystemError() throws {
        let missing = URL(fileURLWithPath: "/nonexistent-\(UUID().uuidString)/blob")
        #expect {
            _ = try request(to: missing).fileSink(for: head(200))
        } throws: { error in
            (error as? HTTPError)?.code == .fileSystem
        }
    }

    /// Every mode writes the same bytes, in order, whatever the chunk sizes (a chunk of over 1 MiB among small ones).
    @Test(arguments: [FileSink.Mode.queued, .buffered, .direct])
    func everyModeWritesTheSameBytes(mode: FileSink.Mode) throws {
        let folder = try folder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let file = folder.appendingPathComponent("blob")
        let sink = try #require(try request(to: file).sink(for: head(200), mode: mode))
        var expected = Data()
        for size in [1, 70_000, (1 << 20) + 3, 5, 300_000] {
            let chunk = Data((0..<size).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ size) })
            expected.append(chunk)
            try sink.write(chunk)
        }
        #expect(try sink.close() == Int64(expected.count))
        #expect(try Data(contentsOf: file) == expected)
    }
}
