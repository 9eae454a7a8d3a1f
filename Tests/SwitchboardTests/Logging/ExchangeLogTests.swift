import Foundation
import Testing
@testable import Switchboard
import SwitchboardTestSupport

/// The console log of whole exchanges, over loopback on both engines: a banner for every attempt and outcome with the
/// request's `#N` (a refresh after a `401` is a retry at once), a revalidation shown as one, with its time and whole URL, a
/// streamed body's bytes counted, and the secret values a request sent hidden wherever the server echoes them.
@Suite struct ExchangeLogTests {
    /// The banners printed, and a center on the named engine that prints them.
    static func logging(
        _ engineName: String, server: LoopbackServer = .shared,
        _ configure: (inout Center.Configuration) -> Void = { _ in }
    ) throws -> (Center, EventLog) {
        let log = EventLog()
        let center = try loopbackCenter(engineName, server: server) { config in
            config.consoleLog = true
            config.consoleLogHandler = { log.record($0) }
            configure(&config)
        }
        return (center, log)
    }

    /// Each banner's title and first line.
    static func heads(_ log: EventLog) -> [String] {
        log.all.map { banner in
            let lines = banner.split(separator: "\n")
            let title = lines.first.map {
                $0.replacingOccurrences(of: "=", with: "").trimmingCharacters(in: .whitespaces)
            }
            return "\(title ?? "") \(lines.dropFirst().first ?? "")"
        }
    }

    @Test(arguments: bothEngines)
    func aRefreshAfterA401IsARetryAtOnce(engineName: String) async throws {
        let authenticator = Authenticator(credential: "old") { token, request in
            request.headers["Authorization"] = "Bearer \(token)"
        } refresh: { _, _ in
            "new"
        }
        let (center, log) = try Self.logging(engineName) { $0.authenticator = authenticator }
        let response = try await center.send { $0.api = "bearer-only/new" }
        let id = response.request.id
        let heads = Self.heads(log)
        #expect(heads.count == 4, "\(heads)")
        #expect(heads.first?.hasPrefix("[Switchboard Request] \(id) GET") == true, "\(heads)")
        #expect(
            heads.dropFirst().first?.hasPrefix("[Switchboard Retry] \(id) HTTPError.unacceptableStatus (401)") == true
        )
        #expect(log.all.dropFirst().first?.contains("attempt 1 failed; sending again in 0.00 s") == true)
        #expect(heads.dropFirst(2).first?.hasPrefix("[Switchboard Request] \(id) GET") == true)
        #expect(heads.last?.hasPrefix("[Switchboard Response] \(id) 200 GET") == true)
    }

    @Test(arguments: bothEngines)
    func everyErrorAndRetryBannerCarriesItsNumber(engineName: String) async throws {
        let (center, log) = try Self.logging(engineName) {
            $0.retryPolicy = RetryPolicy(maxAttempts: 2, initialDelay: .milliseconds(1), jitter: 0)
        }
        let outcome = await center.sendRecording { $0.api = "status/503" }
        let id = outcome.id
        let heads = Self.heads(log)
        #expect(heads.filter { $0.hasPrefix("[Switchboard Retry] \(id) HTTPError") }.count == 1, "\(heads)")
        #expect(heads.last?.hasPrefix("[Switchboard Error] \(id) HTTPError.unacceptableStatus (503)") == true)
    }

    @Test(arguments: bothEngines)
    func aRevalidationIsShownAsOneWithItsTimeAndURL(engineName: String) async throws {
        let (center, log) = try Self.logging(engineName) { $0.cache = ResponseCache() }
        _ = try await center.send { request in
            request.api = "etag/v7"; request.parameters = ["page": 3]; request.cachePolicy = .http
        }
        let second = try await center.send { request in
            request.api = "etag/v7"; request.parameters = ["page": 3]; request.cachePolicy = .http
        }
        #expect(second.source == .revalidated)
        #expect(second.url?.query == "page=3")
        #expect(second.duration > .zero)
        let last = try #require(Self.heads(log).last)
        #expect(last.contains("200 (revalidated: 304) GET "), "\(last)")
        #expect(last.contains("/etag/v7?page=3"), "\(last)")
        #expect(!last.contains("(0.0 ms"), "\(last)")
    }

    @Test(arguments: bothEngines)
    func aStreamedBodysBytesAreCounted(engineName: String) async throws {
        let (center, log) = try Self.logging(engineName)
        let stream = try await center.stream { $0.api = "bytes/5000" }
        var read = 0
        for try await chunk in stream { read += chunk.count }
        #expect(read == 5000)
        await waitUntil { log.all.contains { $0.contains("[Switchboard Response]") } }
        let response = try #require(log.all.first { $0.contains("[Switchboard Response]") })
        #expect(response.contains("5000 bytes streamed"), "\(response)")
    }

    /// A redirect's banner shows where it went, with a secret in the new URL's query hidden.
    @Test(arguments: bothEngines)
    func aRedirectsBannerHidesASecretInTheURLItLedTo(engineName: String) async throws {
        let (center, log) = try Self.logging(engineName)
        let response = try await center.send { request in
            request.api = "redirect-to"
            request.parameters = ["url": "/get?access_token=sec-REDIR-444&page=2"]
        }
        #expect(response.status == 200)
        let hop = try #require(log.all.first { $0.contains("[Switchboard Redirect]") })
        #expect(hop.contains("/get?access_token="), "\(hop)")
        #expect(hop.contains("page=2"), "\(hop)")
        #expect(!log.all.joined().contains("sec-REDIR-444"), "\(log.all)")
    }

    @Test(arguments: bothEngines)
    func secretValuesTheRequestSentAreHiddenWhereTheServerEchoesThem(engineName: String) async throws {
        let server = try LoopbackServer { request in
            // An echo under names that are not secret, as some servers answer.
            .json([
                "you_sent": request.header("Authorization") ?? "",
                "ticket": request.header("X-Api-Key") ?? "",
                "note": "query was \(request.query)",
            ])
        }
        defer { server.stop() }
        let (center, log) = try Self.logging(engineName, server: server)
        _ = try await center.send { request in
            request.api = "echo"
            request.headers["Authorization"] = "Bearer tok-ECHO-111"
            request.headers["X-Api-Key"] = "key-ECHO-222"
            request.parameters = ["client_secret": "sec-ECHO-333", "page": "2"]
        }
        let printed = log.all.joined(separator: "\n")
        for secret in ["tok-ECHO-111", "key-ECHO-222", "sec-ECHO-333"] {
            #expect(!printed.contains(secret), "\(secret) printed")
        }
        #expect(printed.contains("page=2"))
    }
}
