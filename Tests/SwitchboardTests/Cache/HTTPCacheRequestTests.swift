import Foundation
import Testing
@testable import Switchboard
import SwitchboardTestSupport

/// Counts what goes to the engine, and keeps the headers each attempt carried.
final class SentLog: Plugin {
    private let sent = Locked<[HTTPHeaders]>([])

    func willSend(_ request: EngineRequest, for original: Request) async {
        sent.withLock { $0.append(request.headers) }
    }

    var count: Int { sent.withLock { $0.count } }
    var last: HTTPHeaders? { sent.withLock { $0.last } }
}

/// The response cache by HTTP's rules, with real header fields: against the loopback server, and in CI against a
/// real httpbin (`/cache`, `/cache/N`, `/etag/E`, `/response-headers`), on the engine the run selects.
@Suite struct HTTPCacheRequestTests {
    private func center() -> (Center, SentLog) {
        let log = SentLog()
        let center = Server.center { config in
            config.cache = ResponseCache()
            config.plugins.append(log)
        }
        return (center, log)
    }

    /// Sends a GET for `api` under `policy`.
    private func send(_ center: Center, _ api: String, _ policy: CachePolicy = .http) async throws -> Response {
        try await center.send {
            $0.api = api; $0.cachePolicy = policy
        }
    }

    /// `/response-headers` with these header fields set on the response.
    private func headers(_ fields: [String: String]) -> String {
        var components = URLComponents()
        components.queryItems = fields.sorted { $0.key < $1.key }.map { URLQueryItem(name: $0.key, value: $0.value) }
        let query = components.percentEncodedQuery?.replacingOccurrences(of: "+", with: "%2B") ?? ""
        return "response-headers?" + query
    }

    @Test func aFreshResponseIsServedWithoutTheNetworkUntilItsMaxAge() async throws {
        let (center, log) = center()
        let first = try await send(center, "cache/60")
        #expect(first.source == .network)
        let second = try await send(center, "cache/60")
        #expect(second.source == .cache)
        #expect(second.data == first.data)
        #expect(log.count == 1, "max-age=60: the second request never left")

        // max-age=0: stored, but stale at once; without a validator it goes to the network again.
        _ = try await send(center, "cache/0")
        let again = try await send(center, "cache/0")
        #expect(again.source == .network)
        #expect(log.count == 3)
    }

    @Test func aResponseWithoutALifetimeIsRevalidatedAndA304ServesTheStoredBody() async throws {
        let (center, log) = center()
        let first = try await send(center, "cache")
        let etag = try #require(first.headers["ETag"])
        let second = try await send(center, "cache")
        #expect(log.count == 2, "no max-age and no Expires: asked again")
        #expect(log.last?["If-None-Match"] == etag)
        #expect(log.last?["If-Modified-Since"] == first.headers["Last-Modified"])
        #expect(second.status == 200)
        #expect(second.source == .revalidated, "the 304 confirmed the stored response")
        #expect(second.data == first.data)

        // /etag/E answers 304 to its own tag.
        let tagged = try await send(center, "etag/abc")
        #expect(tagged.headers["ETag"] == "abc")
        let confirmed = try await send(center, "etag/abc")
        #expect(confirmed.source == .revalidated)
        #expect(confirmed.data == tagged.data)
        #expect(log.last?["If-None-Match"] == "abc")
    }

    @Test func noStoreIsNeverStoredUnderAnyPolicy() async throws {
        let (center, log) = center()
        let api = headers(["Cache-Control": "no-store, max-age=60"])
        for policy in [CachePolicy.http, .cacheElseNetwork(maxAge: .seconds(60)), .cacheThenNetwork] {
            _ = try await send(center, api, policy)
        }
        #expect(log.count == 3)
        let miss = await center.sendRecording {
            $0.api = api; $0.cachePolicy = .cacheOnly
        }
        #expect(miss.error?.code == .cacheMiss)

        // A request that says no-store bypasses the cache: nothing stored from it.
        let fresh = headers(["Cache-Control": "max-age=60"])
        _ = try await center.send {
            $0.api = fresh; $0.cachePolicy = .http; $0.headers["Cache-Control"] = "no-store"
        }
        let after = await center.sendRecording {
            $0.api = fresh; $0.cachePolicy = .cacheOnly
        }
        #expect(after.error?.code == .cacheMiss)
    }

    @Test func noCacheAndMustRevalidateSendTheRequestEvenWithinAnOverride() async throws {
        let (center, log) = center()
        let noCache = headers(["Cache-Control": "no-cache"])
        let ttl = CachePolicy.cacheElseNetwork(maxAge: .seconds(600))
        _ = try await send(center, noCache, ttl)
        let second = try await send(center, noCache, ttl)
        #expect(second.source == .network)
        #expect(log.count == 2)
        let offline = await center.sendRecording {
            $0.api = noCache; $0.cachePolicy = .cacheOnly
        }
        #expect(offline.error?.code == .cacheMiss, "no-cache is never served unasked, offline neither")

        // must-revalidate with max-age=0: stale at once, so the override does not serve it either.
        let strict = headers(["Cache-Control": "max-age=0, must-revalidate"])
        _ = try await send(center, strict, ttl)
        let third = try await send(center, strict, ttl)
        #expect(third.source == .network)
        #expect(log.count == 4)

        // Without those directives the override serves it, whatever the response's own lifetime.
        let plain = headers(["Cache-Control": "max-age=0"])
        _ = try await send(center, plain, ttl)
        let fourth = try await send(center, plain, ttl)
        #expect(fourth.source == .cache)
        #expect(log.count == 5)
    }

    @Test func expiresAndAgeSetTheFreshness() async throws {
        let (center, log) = center()
        let later = headers(["Expires": Httpbin.httpDate(Date().addingTimeInterval(3600))])
        _ = try await send(center, later)
        #expect(try await send(center, later).source == .cache)
        #expect(log.count == 1)

        let past = headers(["Expires": Httpbin.httpDate(Date().addingTimeInterval(-3600))])
        _ = try await send(center, past)
        #expect(try await send(center, past).source == .network)
        #expect(log.count == 3)

        // max-age 60, but already 100 seconds old on arrival (Age): stale.
        let old = headers(["Cache-Control": "max-age=60", "Age": "100"])
        _ = try await send(center, old)
        #expect(try await send(center, old).source == .network)
        #expect(log.count == 5)
    }

    @Test func varyKeysTheResponseByTheNamedRequestHeaders() async throws {
        let (center, log) = center()
        let api = headers(["Cache-Control": "max-age=60", "Vary": "X-Lang"])
        func source(in language: String?) async throws -> Response.Source {
            try await center.send { request in
                request.api = api
                request.cachePolicy = .http
                if let language { request.headers["X-Lang"] = language }
            }.source
        }
        #expect(try await source(in: "en") == .network)
        #expect(try await source(in: "fr") == .network, "another language is another response")
        #expect(try await source(in: "en") == .cache)
        #expect(try await source(in: "fr") == .cache, "both variants are kept")
        #expect(try await source(in: nil) == .network, "no header is a value of its own")
        #expect(log.count == 3)

        let star = headers(["Cache-Control": "max-age=60", "Vary": "*"])
        _ = try await send(center, star)
        #expect(try await send(center, star).source == .network)
        #expect(log.count == 5, "Vary: * is never served from the cache")
    }

    /// `Cache-Control: max-age=60, no-store,` U+0301 `x` from the server: the mark joined the comma into one character,
    /// the field was read as one directive, and the response was stored and served again. Both engines hand the
    /// field over as sent; the cache reads it by scalar, so nothing is stored.
    @Test(arguments: bothEngines)
    func aNoStoreFollowedByACombiningMarkIsNotStored(engineName: String) async throws {
        let log = SentLog()
        let center = try loopbackCenter(engineName) { config in
            config.cache = ResponseCache()
            config.plugins.append(log)
        }
        let api = headers(["Cache-Control": "max-age=60, no-store,\u{301}x", "X-Case": UUID().uuidString])
        let first = try await send(center, api)
        #expect(first.headers["Cache-Control"] == "max-age=60, no-store,\u{301}x", "\(engineName): the field as sent")
        #expect(try await send(center, api).source == .network, "\(engineName)")
        #expect(log.count == 2, "\(engineName)")
    }

    @Test func aSuccessfulUnsafeRequestForgetsItsURLAndItsLocation() async throws {
        let (center, log) = center()
        let ttl = CachePolicy.cacheElseNetwork(maxAge: .seconds(600))
        _ = try await send(center, "anything/item", ttl)
        _ = try await send(center, "anything/other", ttl)
        #expect(try await send(center, "anything/item", ttl).source == .cache)

        // A POST to the URL (the default policy: it does not use the cache itself) forgets what was stored for it.
        _ = try await center.send {
            $0.api = "anything/item"; $0.method = .post; $0.parameters = ["n": 1]
        }
        #expect(try await send(center, "anything/item", ttl).source == .network)
        #expect(try await send(center, "anything/other", ttl).source == .cache)

        // A POST whose answer points elsewhere (Location, same origin) forgets that URL too.
        let pointing = headers(["Location": "/anything/other"])
        _ = try await center.send {
            $0.api = pointing; $0.method = .post
        }
        #expect(try await send(center, "anything/other", ttl).source == .network)
        #expect(log.count == 6)
    }

    @Test func cacheThenNetworkReportsTheRevalidatedOutcomeAsTheNetworks() async throws {
        let (center, _) = center()
        _ = try await send(center, "etag/xyz")
        var sources: [Response.Source] = []
        var bodies: [Data] = []
        for try await response in center.responses({
            $0.api = "etag/xyz"; $0.cachePolicy = .cacheThenNetwork
        }) {
            sources.append(response.source)
            bodies.append(response.data)
        }
        #expect(sources == [.cache, .revalidated])
        #expect(bodies.count == 2 && bodies[0] == bodies[1], "the 304 confirmed the stored body")
    }
}

/// A `206` holds part of a response: stored under the URL (a `Range` is not part of the key), it was served to the
/// next request for the URL without a `Range`, as if it were the whole (10 bytes of 20, status `206`, on both
/// engines). The cache keeps no part of a response.
@Suite struct PartialResponseCacheTests {
    @Test(arguments: bothEngines)
    func aPartialResponseIsNeverStored(engineName: String) async throws {
        let whole = Data("0123456789abcdefghij".utf8)
        let served = Locked(0)
        let server = try LoopbackServer { request in
            served.withLock { $0 += 1 }
            guard request.header("Range") == "bytes=0-9" else {
                return ServerResponse(status: 200, headers: [("Cache-Control", "max-age=60")], body: whole)
            }
            return ServerResponse(
                status: 206, headers: [("Cache-Control", "max-age=60"), ("Content-Range", "bytes 0-9/20")],
                body: whole.prefix(10))
        }
        defer { server.stop() }
        let center = try loopbackCenter(engineName, server: server)
        center.setup { $0.cache = ResponseCache() }
        func send(range: Bool) async throws -> Response {
            try await center.send { request in
                request.api = "resource"
                request.cachePolicy = .http
                request.responseSerializer = .raw
                if range { request.headers["Range"] = "bytes=0-9" }
            }
        }
        let part = try await send(range: true)
        #expect(part.status == 206 && part.data == whole.prefix(10))
        let first = try await send(range: false)
        #expect(first.source == .network, "\(engineName): the part was served from the cache")
        #expect(first.status == 200 && first.data == whole)
        // The whole response is stored as ever, and serves the next request for it.
        let second = try await send(range: false)
        #expect(second.source == .cache && second.data == whole)
        #expect(served.snapshot == 2)
    }
}
