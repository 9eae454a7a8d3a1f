import Foundation
import Testing
@testable import Switchboard
import SwitchboardTestSupport

/// `maxResponseBytes` bounds the body a request takes into memory, on both engines alike: a body announced longer
/// fails at its head, one that turns out longer (no `Content-Length`, or one compressed) as soon as it passes the limit,
/// each with `.responseTooLarge` and the same words; nothing else changes.
@Suite struct ResponseLimitTests {
    /// 1 MiB of zero bytes, compressed with gzip into 1,051 bytes.
    static let inflating = Data(
        base64Encoded: "H4sIAAAAAAAC/+3BMQEAAADCoPVPbQhfo" + String(repeating: "A", count: 1355) + "PgMc6jinAAAQAA==")!

    /// A server for the cases the shared one has no route for: `/inflating` (the gzip body above),
    /// `/unannounced?length=N` (N bytes with no `Content-Length`, ending when the connection closes) and `/endless`
    /// (256 MiB made as they are written, with no `Content-Length`).
    static func server() throws -> LoopbackServer {
        try LoopbackServer { request in
            if request.path == "/inflating" {
                return ServerResponse(
                    headers: [("Content-Type", "application/octet-stream"), ("Content-Encoding", "gzip")],
                    body: Self.inflating)
            }
            var response = ServerResponse(headers: [("Content-Type", "application/octet-stream")])
            if request.path == "/announced" {
                // N bytes with their `Content-Length`, made as they are written.
                let length = Int(request.queryValue("length") ?? "") ?? 0
                response.generated = (length, { _, count in Data(repeating: UInt8(ascii: "a"), count: count) })
                return response
            }
            if request.path == "/endless" {
                response.generated = (256 << 20, { _, count in Data(repeating: UInt8(ascii: "e"), count: count) })
            } else {
                response.body = Data(
                    repeating: UInt8(ascii: "u"), count: Int(request.queryValue("length") ?? "") ?? 0)
            }
            response.closeDelimited = true
            response.close = true
            return response
        }
    }

    /// `api`'s outcome as raw bytes, under `limit`.
    static func fetch(
        _ center: Center, _ api: String, limit: Int64?, totalTimeout: Duration? = nil
    ) async -> Outcome {
        await center.sendRecording { request in
            request.api = api
            request.responseSerializer = .raw
            request.maxResponseBytes = limit
            if let totalTimeout { request.totalTimeout = totalTimeout }
        }
    }

    @Test(arguments: bothEngines)
    func aBodyAnnouncedLongerFailsAtItsHead(engineName: String) async throws {
        let center = try loopbackCenter(engineName)
        let outcome = await Self.fetch(center, "bytes/100000", limit: 99_999)
        #expect(outcome.error?.code == .responseTooLarge, "\(engineName): \(outcome)")
        #expect(
            outcome.error?.message
                == "the response body is 100000 bytes (its Content-Length), more than maxResponseBytes (99999)")
        // A body of exactly the limit is taken whole.
        let exact = await Self.fetch(center, "bytes/100000", limit: 100_000)
        #expect(exact.response?.data.count == 100_000, "\(engineName)")
    }

    @Test(arguments: bothEngines)
    func aBodyWithoutALengthFailsOnceItPassesTheLimit(engineName: String) async throws {
        let server = try Self.server()
        defer { server.stop() }
        let center = try loopbackCenter(engineName, server: server)
        let outcome = await Self.fetch(center, "endless", limit: 200_000, totalTimeout: .seconds(120))
        #expect(outcome.error?.code == .responseTooLarge, "\(engineName): \(outcome)")
        #expect(outcome.error?.message == "the response body is longer than maxResponseBytes (200000 bytes)")
        // The engine itself, without the center's check after the fact: it counts the bytes as they come and keeps
        // none past the limit. (How many more the server writes depends on how soon the transfer stops: CurlEngine
        // stops in its write callback, URLSession once its work queue takes the cancel, which another transfer can
        // hold; what arrives meanwhile is dropped.)
        var direct = EngineRequest(url: URL(string: server.baseURL + "/endless")!)
        direct.maxResponseBytes = 200_000
        do {
            let answer = try await namedEngine(engineName).perform(direct) { _ in }
            Issue.record("\(engineName): the engine took \(answer.body.count) bytes")
        } catch let error as HTTPError {
            #expect(error.code == .responseTooLarge, "\(engineName): \(error)")
        }
        let whole = await Self.fetch(center, "unannounced?length=200000", limit: 200_000)
        #expect(whole.response?.data == Data(repeating: UInt8(ascii: "u"), count: 200_000), "\(engineName)")
    }

    /// A small compressed body that inflates past the limit (1,051 bytes to 1 MiB) is counted as it is decoded.
    @Test(arguments: bothEngines)
    func aCompressedBodyIsCountedDecoded(engineName: String) async throws {
        let server = try Self.server()
        defer { server.stop() }
        let center = try loopbackCenter(engineName, server: server)
        let outcome = await Self.fetch(center, "inflating", limit: 64 << 10)
        #expect(outcome.error?.code == .responseTooLarge, "\(engineName): \(outcome)")
        let whole = await Self.fetch(center, "inflating", limit: nil)
        #expect(whole.response?.data == Data(count: 1 << 20), "\(engineName)")
    }

    /// A center holds every request to 64 MiB unless told otherwise: a body announced longer fails at its head, one
    /// without a length once it passes 64 MiB; a request's own limit, or a center's `nil`, lifts it.
    @Test(arguments: bothEngines)
    func theDefaultLimitIs64MiB(engineName: String) async throws {
        #expect(Center.Configuration().maxResponseBytes == 64 << 20)
        let server = try Self.server()
        defer { server.stop() }
        let center = try loopbackCenter(engineName, server: server)
        let announced = await Self.fetch(center, "announced?length=\((64 << 20) + 1)", limit: nil)
        #expect(announced.error?.code == .responseTooLarge, "\(engineName): \(announced)")
        #expect(announced.error?.message.contains("more than maxResponseBytes (67108864)") == true)
        let endless = await Self.fetch(center, "endless", limit: nil, totalTimeout: .seconds(120))
        #expect(endless.error?.code == .responseTooLarge, "\(engineName): \(endless)")
        let own = await Self.fetch(center, "announced?length=\((64 << 20) + 1)", limit: .max)
        #expect(own.response?.data.count == (64 << 20) + 1, "\(engineName)")
        let unlimited = try loopbackCenter(engineName, server: server) { $0.maxResponseBytes = nil }
        let whole = await Self.fetch(unlimited, "announced?length=\((64 << 20) + 1)", limit: nil)
        #expect(whole.response?.data.count == (64 << 20) + 1, "\(engineName)")
    }

    /// The center's limit applies to every request that sets none; a request's own wins. A `HEAD`, whose
    /// `Content-Length` describes a body it does not get, and a download into a file are not held to it.
    @Test(arguments: bothEngines)
    func theCentersLimitAndWhatItDoesNotCount(engineName: String) async throws {
        let center = try loopbackCenter(engineName) { $0.maxResponseBytes = 1_000 }
        let failed = await center.sendRecording { $0.api = "bytes/5000" }
        #expect(failed.error?.code == .responseTooLarge, "\(engineName): \(failed)")
        let own = try await center.send { request in
            request.api = "bytes/5000"
            request.responseSerializer = .raw
            request.maxResponseBytes = 5_000
        }
        #expect(own.data.count == 5_000)
        let head = try await center.send { request in
            request.api = "bytes/5000"
            request.method = .head
            request.responseSerializer = .raw
        }
        #expect(head.status == 200 && head.data.isEmpty, "\(engineName)")
        let scratch = Scratch()
        let file = scratch.file("download.bin")
        let download = try await center.send { request in
            request.api = "bytes/5000"
            request.kind = .download
            request.destination = .file(file)
        }
        #expect(download.fileURL.map { FileSink.size(of: $0) } == 5_000, "\(engineName)")
    }

    /// The body of a redirect that is followed is not the answer, and is not counted (URLSession never hands it
    /// over; CurlEngine failed a `302` with a 5,000-byte page before a 100-byte answer); a redirect that is the
    /// answer (its `Location` not http) is.
    @Test(arguments: bothEngines)
    func aFollowedRedirectsBodyIsNotCounted(engineName: String) async throws {
        let center = try loopbackCenter(engineName)
        let followed = await Self.fetch(
            center, "fault/redirect-answer?status=302&to=%2Fbytes%2F100&length=5000", limit: 1_000)
        #expect(followed.response?.data.count == 100, "\(engineName): \(followed)")
        let answer = await center.sendRecording { request in
            request.api = "fault/redirect-answer?status=302&to=ftp%3A%2F%2F127.0.0.1%2Fx&length=5000"
            request.responseSerializer = .raw
            request.acceptableStatusCodes = [302]
            request.maxResponseBytes = 1_000
        }
        #expect(answer.error?.code == .responseTooLarge, "\(engineName): \(answer)")
    }

    @Test func aLimitBelowZeroIsRefusedUnsent() async {
        let stub = StubEngine()
        stub.on(nil, "*", reply: .string("ok"))
        let (center, _) = stubCenter(stub)
        let outcome = await center.sendRecording { request in
            request.api = "x"
            request.maxResponseBytes = -1
        }
        #expect(outcome.error?.code == .encoding)
        #expect(stub.requests.isEmpty)
    }

    /// An engine that does not count (the stub answers with its whole body) is held to the limit by the center.
    @Test func theCenterHoldsEveryEngineToTheLimit() async {
        let stub = StubEngine()
        stub.on(nil, "*", reply: .string("0123456789"))
        let (center, _) = stubCenter(stub)
        let outcome = await center.sendRecording { request in
            request.api = "x"
            request.maxResponseBytes = 9
        }
        #expect(outcome.error?.code == .responseTooLarge)
        let fits = await center.sendRecording { request in
            request.api = "x"
            request.responseSerializer = .string
            request.maxResponseBytes = 10
        }
        #expect(fits.response?.string == "0123456789")
    }
}
