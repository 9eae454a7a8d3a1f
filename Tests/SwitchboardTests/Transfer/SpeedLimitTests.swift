import Foundation
import Testing
@testable import Switchboard
import SwitchboardTestSupport

/// `maxBytesPerSecond` and `maxUploadBytesPerSecond`: CurlEngine holds them exactly, URLSessionEngine paces the
/// segments of a download into a file and refuses what it cannot limit, and an engine that does not honour limits
/// never runs a limited request unlimited. Each limited transfer here would take a few milliseconds on loopback
/// without its limit; the tests check only that it took at least most of the time the limit sets (a limit cannot be
/// beaten by a slow machine), and that the bytes arrived whole.
@Suite struct SpeedLimitTests {
    @Test(arguments: bothEngines)
    func aDownloadIntoAFileKeepsTheLimit(engineName: String) async throws {
        let center = try loopbackCenter(engineName)
        let scratch = Scratch()
        let destination = scratch.file("limited.bin")
        let length = 256 << 10
        let start = ContinuousClock.now
        let response = try await center.send { request in
            request.kind = .download
            request.api = "files/\(length)"
            request.destination = .file(destination)
            request.maxBytesPerSecond = 256 << 10  // one second for the file
        }
        let elapsed = ContinuousClock.now - start
        #expect(response.fileURL == destination)
        #expect(await Scratch.sha256(of: destination) == GeneratedContent(seed: 1).digest(length: length))
        #expect(elapsed >= .milliseconds(700), "\(engineName) took \(elapsed) for one second's worth at the limit")
    }

    @Test(arguments: bothEngines)
    func aLimitedDownloadIsCancelledWhileItWaits(engineName: String) async throws {
        let center = try loopbackCenter(engineName)
        let scratch = Scratch()
        let destination = scratch.file("slow.bin")
        let length = 1 << 20
        // Cancelled once the first bytes are in: at the limit the rest takes 15 s, so the cancel lands on the way
        // however busy the machine (a cancel after a fixed delay came after the whole file when a busy run held up
        // the task that sent it, and then had nothing left to cancel).
        let outcome = await center.sendCancelling { request in
            request.kind = .download
            request.api = "files/\(length)"
            request.destination = .file(destination)
            request.maxBytesPerSecond = 64 << 10  // 16 seconds for the file
        } when: {
            $0.completed > 0
        }
        #expect(outcome.failureCode == .cancelled, "\(engineName)")
        #expect(!FileManager.default.fileExists(atPath: destination.path))
        #expect(scratch.contents.isEmpty, "a download that is not resumable leaves nothing behind")
    }

    @Test(arguments: bothEngines)
    func aDownloadIntoMemoryIsLimitedOrRefused(engineName: String) async throws {
        let center = try loopbackCenter(engineName)
        let length = 128 << 10
        let start = ContinuousClock.now
        let outcome = await center.sendRecording { request in
            request.api = "files/\(length)"
            request.responseSerializer = .raw
            request.maxBytesPerSecond = 128 << 10
        }
        let elapsed = ContinuousClock.now - start
        if engineName == "CurlEngine" {
            let response = try outcome.result.get()
            #expect(response.data == GeneratedContent(seed: 1).bytes(offset: 0, count: length))
            #expect(elapsed >= .milliseconds(700), "took \(elapsed) for one second's worth at the limit")
        } else {
            #expect(outcome.error?.code == .unsupported, "URLSession has no way to slow a body into memory")
        }
    }

    @Test(arguments: bothEngines)
    func anUploadIsLimitedOrRefused(engineName: String) async throws {
        let center = try loopbackCenter(engineName)
        let body = GeneratedContent(seed: 3).bytes(offset: 0, count: 128 << 10)
        let start = ContinuousClock.now
        let outcome = await center.sendRecording { request in
            request.api = "sink"
            request.method = .post
            request.body = .data(body, contentType: "application/octet-stream")
            request.maxUploadBytesPerSecond = 128 << 10
        }
        let elapsed = ContinuousClock.now - start
        if engineName == "CurlEngine" {
            let response = try outcome.result.get()
            #expect(response.json?["length"]?.int == body.count)
            #expect(elapsed >= .milliseconds(700), "took \(elapsed) for one second's worth at the limit")
        } else {
            #expect(outcome.error?.code == .unsupported, "URLSession cannot slow what it sends")
        }
    }

    @Test func aLimitBelowOneByteASecondIsAnEncodingError() async {
        let center = testCenter {
            $0.engine = StubEngine(); $0.server = "https://api.example.com/"
        }
        let outcome = await center.sendRecording {
            $0.api = "x"; $0.maxBytesPerSecond = 0
        }
        #expect(outcome.error?.code == .encoding)
        let upload = await center.sendRecording {
            $0.api = "x"; $0.maxUploadBytesPerSecond = -5
        }
        #expect(upload.error?.code == .encoding)
    }

    /// An engine of the app's own that does not say it honours limits.
    private struct PlainEngine: Engine {
        func perform(
            _ request: EngineRequest, progress: @escaping @Sendable (TransferProgress) -> Void
        ) async throws -> EngineResponse {
            EngineResponse(status: 200, url: request.url, headers: [:], body: Data("{}".utf8))
        }
    }

    @Test func anEngineThatDoesNotHonourLimitsNeverRunsALimitedRequest() async {
        let center = Center {
            $0.engine = PlainEngine(); $0.server = "https://api.example.com/"
        }
        let limited = await center.sendRecording {
            $0.api = "x"; $0.maxBytesPerSecond = 1_000
        }
        #expect(limited.error?.code == .unsupported)
        #expect(limited.error?.message.contains("PlainEngine") == true)
        let unlimited = await center.sendRecording { $0.api = "x" }
        #expect(unlimited.error == nil)
    }

    @Test func theStubTakesTheTimeTheLimitsSetOnItsClock() async throws {
        let clock = ManualClock()
        let stub = StubEngine(clock: clock)
        stub.on(.post, "/upload", reply: .data(Data(count: 2_000)))
        let center = Center {
            $0.engine = stub; $0.server = "https://api.example.com/"
        }
        let task = Task {
            try await center.send { request in
                request.api = "upload"
                request.method = .post
                request.body = .data(Data(count: 500), contentType: "application/octet-stream")
                request.responseSerializer = .raw
                request.maxBytesPerSecond = 1_000  // 2 s for the reply's 2,000 bytes
                request.maxUploadBytesPerSecond = 100  // 5 s for the 500 bytes sent
            }
        }
        while clock.sleeping == 0 { try await Task.sleep(for: .milliseconds(1)) }
        #expect(clock.sleeps == [.seconds(7)])
        clock.advance(by: .seconds(7))
        #expect(try await task.value.data.count == 2_000)
    }
}
