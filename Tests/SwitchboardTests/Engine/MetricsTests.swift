import Foundation
import Testing
@testable import Switchboard
import SwitchboardTestSupport

/// `Response.metrics` on both engines, over real loopback connections: what an engine reports is consistent (phases
/// in order, within the time to the first byte, within the total), the byte counts are the bytes that moved, and
/// what an engine cannot measure stays `nil`.
@Suite struct MetricsTests {
    /// The phases before the first byte, added up: they happened one after the other, so they fit inside it.
    private func setUp(_ metrics: TransferMetrics) -> Duration {
        (metrics.nameLookup ?? .zero) + (metrics.connect ?? .zero) + (metrics.secureConnection ?? .zero)
    }

    @Test(arguments: bothEngines)
    func aFirstAndASecondRequestReportOrderedPhasesAndTheReusedConnection(engine: String) async throws {
        let center = try loopbackCenter(engine)
        let body = Data((0..<3000).map { UInt8($0 % 251) })
        func post() async throws -> Response {
            try await center.send { request in
                request.api = "anything"
                request.method = .post
                request.body = .data(body, contentType: "application/octet-stream")
            }
        }
        let first = try await post()
        let metrics = try #require(first.metrics)
        let firstByte = try #require(metrics.timeToFirstByte, "both engines see the head of a POST arrive")
        #expect(firstByte > .zero)
        #expect(firstByte <= metrics.total)
        #expect(setUp(metrics) <= firstByte)
        #expect(metrics.total <= first.duration, "the engine's total lies within the center's own timing")
        #expect(metrics.bytesSent == Int64(body.count))
        #expect(metrics.bytesReceived == Int64(first.data.count))
        #expect(metrics.redirects == 0)

        let second = try await post()
        let again = try #require(second.metrics)
        #expect(again.timeToFirstByte.map { $0 <= again.total } == true)
        if engine == "CurlEngine" {
            #expect(metrics.reusedConnection == false)
            #expect(metrics.nameLookup != nil)
            #expect(metrics.connect != nil)
            #expect(metrics.secureConnection == nil, "plain http has no handshake")
            #expect(metrics.httpVersion == "HTTP/1.1")
            #expect(metrics.remoteAddress == "127.0.0.1")
            #expect(metrics.remotePort == LoopbackServer.shared.port)
            #expect(again.reusedConnection == true)
            #expect(again.nameLookup == nil && again.connect == nil, "no phases for a connection opened before")
        } else {
            #if os(Linux)
            // URLSession on Linux collects no metrics: what only it could know is nil, never guessed.
            #expect(metrics.reusedConnection == nil)
            #expect(metrics.nameLookup == nil && metrics.connect == nil && metrics.secureConnection == nil)
            #expect(metrics.httpVersion == nil && metrics.remoteAddress == nil && metrics.remotePort == nil)
            #endif
        }
    }

    @Test(arguments: bothEngines)
    func aDownloadCountsTheBodyBytesAndRedirectsAreCounted(engine: String) async throws {
        let center = try loopbackCenter(engine)
        // With a progress handler, so that URLSessionEngine reads the body chunk by chunk and sees the head first.
        let bytes = try await center.sendCollectingProgress {
            $0.api = "bytes/200000"; $0.responseSerializer = .raw
        }
        .response
        let metrics = try #require(bytes.metrics)
        #expect(bytes.data.count == 200_000)
        #expect(metrics.bytesReceived == 200_000)
        #expect(metrics.bytesSent == 0)
        #expect(metrics.timeToFirstByte.map { $0 <= metrics.total } == true)

        let redirected = try await center.send { $0.api = "redirect/2" }
        #expect(redirected.status == 200)
        let afterRedirects = try #require(redirected.metrics)
        #expect(afterRedirects.redirects == 2)
        #expect(afterRedirects.timeToFirstByte.map { $0 <= afterRedirects.total } ?? true)
        #expect(afterRedirects.bytesReceived == Int64(redirected.data.count), "the bytes of the last response")
    }

    @Test func aStubOrACachedResponseHasNoMetrics() async throws {
        let (center, stub) = stubCenter { $0.cache = ResponseCache() }
        stub.on(nil, "/v1/a", reply: .json(["ok": true]))
        let response = try await center.send {
            $0.api = "a"; $0.cachePolicy = .cacheElseNetwork(maxAge: .seconds(60))
        }
        #expect(response.metrics == nil, "StubEngine measures nothing, and says so")
        let cached = try await center.send {
            $0.api = "a"; $0.cachePolicy = .cacheElseNetwork(maxAge: .seconds(60))
        }
        #expect(cached.source == .cache)
        #expect(cached.metrics == nil)
    }
}
