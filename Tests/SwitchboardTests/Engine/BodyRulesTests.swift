import Foundation
import Testing
@testable import Switchboard
import SwitchboardTestSupport

/// A request body that is not what it says (a stream longer than it announced, one that fails, a file that cannot
/// be read) fails alike on both engines, and never reaches the server as a whole request, which it would act on.
///
/// Before: a stream that yielded its announced length in one read and more in the next went out whole on both engines
/// (URLSessionEngine reported the error after the server had answered; CurlEngine never saw the rest); URLSession on
/// Linux sent a stream that failed to open as an empty body, and the request succeeded; CurlEngine reported a file it
/// could not open as a transport failure.
@Suite struct BodyRulesTests {
    /// Yields its pieces one read at a time, each after the first a moment later (so that an engine has sent the
    /// first before the next comes), then its end, or fails.
    final class PiecewiseStream: InputStream {
        struct Failed: Error {}
        private var pieces: [Data]
        private let fails: Bool
        private var status: Stream.Status = .notOpen
        private var first = true

        init(_ pieces: [String], thenFails fails: Bool = false) {
            self.pieces = pieces.map { Data($0.utf8) }
            self.fails = fails
            super.init(data: Data())
        }

        override func open() { status = .open }
        override func close() { status = .closed }
        override var streamStatus: Stream.Status { status }
        override var hasBytesAvailable: Bool { status == .open }
        override var streamError: (any Error)? { status == .error ? Failed() : nil }

        override func read(_ buffer: UnsafeMutablePointer<UInt8>, maxLength: Int) -> Int {
            // Read on an engine's own thread (CurlEngine's body pump, URLSession's work queue), never a task's.
            if !first { Thread.sleep(forTimeInterval: 0.05) }
            first = false
            guard !pieces.isEmpty else {
                status = fails ? .error : .atEnd
                return fails ? -1 : 0
            }
            let piece = pieces[0]
            let count = min(maxLength, piece.count)
            piece.copyBytes(to: buffer, count: count)
            if count == piece.count { pieces.removeFirst() } else { pieces[0] = piece.dropFirst(count) }
            return count
        }
    }

    @Test(arguments: bothEngines)
    func aBodyThatIsNotWhatItSaysFailsAndNeverArrivesWhole(engineName: String) async throws {
        let received = Locked<[String]>([])
        let server = try LoopbackServer { request in
            received.withLock { $0.append(String(decoding: request.body, as: UTF8.self)) }
            return Httpbin.route(request)
        }
        defer { server.stop() }
        let engine = try namedEngine(engineName)
        let missing = URL(fileURLWithPath: "/nonexistent/switchboard-upload")
        let scratch = Scratch()
        // A FIFO nobody writes to: opening it to read waited forever, holding the request (and on CurlEngine every
        // other request) with it. `/dev/zero` never ends; `/proc/self/status` is a regular file that measures 0
        // bytes and has more (CurlEngine sent it as empty; URLSessionEngine sent it as empty, then failed).
        let fifo = scratch.file("fifo")
        #expect(mkfifo(fifo.path, 0o600) == 0)
        let cases: [(EngineRequest.Body, HTTPError.Code, String)] = [
            (.stream(.init(length: 5) { PiecewiseStream(["01234", "56789"]) }), .encoding, "yielded more than the 5"),
            (.stream(.init(length: 5) { PiecewiseStream(["01234", "5"]) }), .encoding, "yielded more than the 5"),
            (.stream(.init(length: 10) { PiecewiseStream(["01234"]) }), .encoding, "ended after 5 of the 10"),
            (.stream(.init(length: nil) { PiecewiseStream(["01234"], thenFails: true) }), .fileSystem, "failed"),
            (.stream(.init(length: 10) { PiecewiseStream(["01234"], thenFails: true) }), .fileSystem, "failed"),
            (.stream(.init(length: nil) { InputStream(url: missing)! }), .fileSystem, "the body stream failed"),
            (.stream(.init(length: 10) { InputStream(url: missing)! }), .fileSystem, "the body stream failed"),
            (.file(missing), .fileSystem, "does not exist or cannot be read"),
            (.file(scratch.url), .fileSystem, "does not exist or cannot be read"),
            (.file(fifo), .fileSystem, "is not a regular file"),
            (.file(URL(fileURLWithPath: "/dev/zero")), .fileSystem, "is not a regular file"),
            (.file(URL(fileURLWithPath: "/proc/self/status")), .fileSystem, "measures 0 bytes but has more"),
        ]
        for (body, code, words) in cases {
            let request = EngineRequest(method: .put, url: URL(string: server.baseURL + "/anything")!, body: body)
            do {
                let response = try await engine.perform(request) { _ in }
                Issue.record("\(engineName) sent \(body): \(response.status)")
            } catch {
                let error = HTTPError.from(error)
                #expect(error.code == code, "\(engineName), \(body): \(error)")
                #expect(error.message.contains(words), "\(engineName), \(body): \(error.message)")
            }
        }
        // What the server would have taken as a whole request: nothing of the bodies above.
        try await Task.sleep(for: .milliseconds(100))
        #expect(received.withLock { $0 } == [])
        // A stream that yields its announced length in pieces, and ends there, goes whole.
        for length: Int64? in [10, nil] {
            let body = EngineRequest.Body.stream(.init(length: length) { PiecewiseStream(["01234", "56789"]) })
            let request = EngineRequest(method: .put, url: URL(string: server.baseURL + "/anything")!, body: body)
            let response = try await engine.perform(request) { _ in }
            #expect(response.status == 200)
        }
        #expect(received.withLock { $0 } == ["0123456789", "0123456789"])
    }

    /// A download file that cannot be opened or cut (a directory, a device) is a file-system failure on both engines,
    /// not a transport one (both reported Foundation's error as `.transport`).
    @Test(arguments: bothEngines)
    func aDownloadFileThatCannotBeOpenedIsAFileSystemFailure(engineName: String) async throws {
        let engine = try namedEngine(engineName)
        let scratch = Scratch()
        for (file, words) in [
            (scratch.url, "cannot be opened"), (URL(fileURLWithPath: "/dev/null"), "cannot be cut to 0 bytes"),
            (scratch.file("missing/x.bin"), "cannot create"),
        ] {
            var request = EngineRequest(url: URL(string: LoopbackServer.shared.baseURL + "/bytes/100")!)
            request.destination = .file(file, offset: 0)
            do {
                _ = try await engine.perform(request) { _ in }
                Issue.record("\(engineName) wrote the download to \(file.path)")
            } catch {
                let error = HTTPError.from(error)
                #expect(error.code == .fileSystem, "\(engineName), \(file.path): \(error)")
                #expect(error.message.contains(words), "\(engineName): \(error.message)")
            }
        }
        #expect(scratch.contents == [])
    }

    /// Upload progress counts the body's bytes on both engines, a chunked one too (CurlEngine reported libcurl's count,
    /// which adds the chunks' sizes and line ends: 100,021 of a 100,000-byte body).
    @Test(arguments: bothEngines)
    func uploadProgressCountsTheBodysBytes(engineName: String) async throws {
        let engine = try namedEngine(engineName)
        let body = Data(repeating: 0x61, count: 100_000)
        let bodies: [(EngineRequest.Body, Int64?)] = [
            (.data(body), 100_000), (.stream(.init(length: 100_000) { InputStream(data: body) }), 100_000),
            (.stream(.init(length: nil) { InputStream(data: body) }), nil),
        ]
        for (requestBody, expected) in bodies {
            let reports = Locked<[TransferProgress]>([])
            var request = EngineRequest(
                method: .post, url: URL(string: LoopbackServer.shared.baseURL + "/anything")!, body: requestBody)
            request.observesProgress = true
            _ = try await engine.perform(request) { report in reports.withLock { $0.append(report) } }
            let uploads = reports.withLock { $0 }.filter { $0.direction == .upload }
            #expect(uploads.last?.completed == 100_000, "\(engineName), \(requestBody): \(uploads)")
            #expect(uploads.last?.expected == expected, "\(engineName), \(requestBody)")
            #expect(uploads.allSatisfy { $0.completed <= 100_000 }, "\(engineName): \(uploads)")
        }
    }
}
