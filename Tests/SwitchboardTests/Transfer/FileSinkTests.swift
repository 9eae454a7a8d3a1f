import Foundation
import Testing
@testable import Switchboard
import SwitchboardTestSupport

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
            let chunk = GeneratedContent(seed: UInt64(size)).bytes(offset: 0, count: size)
            expected.append(chunk)
            try sink.write(chunk)
        }
        #expect(try sink.close() == Int64(expected.count))
        #expect(try Data(contentsOf: file) == expected)
    }

    /// An engine of the app's own that writes a download only through `fileSink(for:)`: the first exchange is cut off
    /// after `cut` bytes, later ones honour `Range` when `If-Range` matches the entity's `ETag`.
    private struct CuttingEngine: Engine {
        let body: Data
        let cut: Int
        let seen = Locked<[HTTPHeaders]>([])

        func perform(
            _ request: EngineRequest, progress: @escaping @Sendable (TransferProgress) -> Void
        ) async throws -> EngineResponse {
            let first = seen.withLock { seen in
                seen.append(request.headers)
                return seen.count == 1
            }
            var start = 0
            var head = EngineResponse(
                status: 200, url: request.url, headers: ["ETag": "\"v7\"", "Content-Length": "\(body.count)"],
                body: Data())
            if let range = request.headers["Range"], request.headers["If-Range"] == "\"v7\"",
                let from = Int(range.dropFirst("bytes=".count).dropLast())
            {
                start = from
                head = EngineResponse(
                    status: 206, url: request.url,
                    headers: [
                        "ETag": "\"v7\"", "Content-Range": "bytes \(from)-\(body.count - 1)/\(body.count)",
                        "Content-Length": "\(body.count - from)",
                    ], body: Data())
            }
            guard let sink = try request.fileSink(for: head, synchronous: true) else { return head }
            if first {
                try sink.write(body.prefix(cut))
                _ = try sink.close()
                throw URLError(.networkConnectionLost)
            }
            try sink.write(body.suffix(from: start))
            head.fileLength = try sink.close()
            return head
        }
    }

    @Test func aDownloadThroughAnEngineOfTheAppsOwnResumesWithIfRange() async throws {
        let folder = try folder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let body = Data((0..<50_000).map { UInt8(truncatingIfNeeded: $0 &* 7) })
        let engine = CuttingEngine(body: body, cut: 20_000)
        let center = Center { config in
            config.engine = engine
            config.server = "https://files.example.com/"
        }
        let destination = folder.appendingPathComponent("blob.bin")
        func download() async throws(HTTPError) -> Response {
            try await center.send { request in
                request.api = "blob.bin"
                request.kind = .download
                request.destination = .file(destination)
                request.resumable = true
            }
        }
        await #expect(throws: HTTPError.self) { try await download() }
        // The engine reported nothing but opening the file; the record of the head is there all the same.
        let record = try String(
            contentsOf: URL(fileURLWithPath: destination.path + ".switchboard-resume"), encoding: .utf8)
        #expect(record.contains("v7"))
        let response = try await download()
        #expect(response.fileURL == destination)
        #expect(try Data(contentsOf: destination) == body)
        let second = try #require(engine.seen.snapshot.last)
        #expect(second["Range"] == "bytes=20000-")
        #expect(second["If-Range"] == "\"v7\"")
    }
}
