import Foundation
import Testing
@testable import Switchboard

@Suite struct ConsoleLogTests {
    func loggingCenter(_ stub: StubEngine, _ log: EventLog) -> Center {
        stubCenter(stub) { config in
            config.consoleLog = true
            config.consoleLogHandler = { log.record($0) }
            config.headers["Authorization"] = "Bearer top-secret"
        }.0
    }

    @Test func requestAndResponseBannersRedactSecrets() async throws {
        let stub = StubEngine()
        stub.on(
            nil, "*",
            reply: .json(
                ["access_token": "tok-123", "user": "ada"],
                headers: ["Set-Cookie": "session=s3cr3t"]))
        let log = EventLog()
        let center = loggingCenter(stub, log)
        _ = try await center.send { request in
            request.api = "login"
            request.method = .post
            request.headers["Cookie"] = "c=cookie-value"
            request.headers["Proxy-Authorization"] = "Basic proxy-secret"
            request.parameters = [
                "user": "ada", "password": "hunter2", "profile": ["api_token": "t0k"] as [String: any Sendable],
            ]
        }
        let banners = log.all
        #expect(banners.count == 2)
        let request = try #require(banners.first)
        #expect(request.hasPrefix("============ [Switchboard Request] ============\n"))
        #expect(request.contains("POST https://api.example.com/v1/login"))
        #expect(request.contains("user: ada"))
        let response = try #require(banners.last)
        #expect(response.hasPrefix("============ [Switchboard Response] ============\n"))
        #expect(response.contains("200 POST https://api.example.com/v1/login"))
        #expect(response.contains("\"user\":\"ada\""))
        for secret in ["top-secret", "hunter2", "cookie-value", "proxy-secret", "t0k", "tok-123", "s3cr3t"] {
            #expect(!banners.joined().contains(secret), "\(secret) leaked")
        }
        #expect(request.contains("Authorization: <redacted>"))
        #expect(request.contains("password: <redacted>"))
        // Every banner closes with a rule as wide as its title line.
        for banner in banners {
            let lines = banner.split(separator: "\n")
            #expect(lines.first?.count == lines.last?.count)
        }
    }

    @Test func errorBannerNamesTheFailure() async throws {
        let stub = StubEngine()
        stub.on(nil, "*", reply: .string("quota exceeded", status: 429))
        let log = EventLog()
        let center = loggingCenter(stub, log)
        _ = await center.sendRecording { $0.url = "https://api.example.com/v1/x?token=abc&page=2" }
        let banners = log.all
        #expect(banners.count == 2)
        let error = banners.last ?? ""
        #expect(error.hasPrefix("============ [Switchboard Error] ============"))
        #expect(error.contains("HTTPError.unacceptableStatus (429) GET"))
        #expect(error.contains("token=<redacted>"))
        #expect(error.contains("page=2"))
        #expect(error.contains("quota exceeded"))
        // Text redacted twice (a URL, then the banner) stays redacted once.
        #expect(!banners.joined().contains("<redacted><redacted>"), "\(banners)")
    }

    @Test func silentWhenOff() async throws {
        let stub = StubEngine()
        stub.on(nil, "*", reply: .status(204))
        let log = EventLog()
        let (center, _) = stubCenter(stub) { $0.consoleLogHandler = { log.record($0) } }
        _ = try await center.send { $0.api = "x" }
        #expect(log.all.isEmpty)
    }

    /// Secrets a banner must never print, wherever they sit.
    static let secrets = ["tok-AAA", "tok-BBB", "ref-CCC", "key-DDD", "priv-EEE", "sig-FFF", "sess-GGG", "pw-HHH"]

    @Test(arguments: [100, 5_000, 300_000])
    func jsonBodiesAreRedactedAtEverySize(padding: Int) async throws {
        let stub = StubEngine()
        let body =
            "{\"access_token\":\"tok-AAA\",\"filler\":\"" + String(repeating: "x", count: padding)
            + "\",\"refresh_token\":\"ref-CCC\",\"nested\":{\"client_secret\":\"key-DDD\"}}"
        stub.on(nil, "*", reply: .data(Data(body.utf8), headers: ["Content-Type": "application/json"]))
        let log = EventLog()
        _ = try await loggingCenter(stub, log).send { $0.api = "token" }
        let printed = log.all.joined()
        for secret in ["tok-AAA", "ref-CCC", "key-DDD"] { #expect(!printed.contains(secret), "\(secret) leaked") }
        #expect(printed.contains("access_token"))
        if padding > ConsoleLog.bodyLimit { #expect(printed.contains("bytes in all)")) }
    }

    @Test(arguments: [100, 5_000])
    func jsonCutShortAndFormBodiesAreRedacted(padding: Int) async throws {
        let stub = StubEngine()
        let broken =
            "{\"access_token\": \"tok-AAA\", \"x\": \"" + String(repeating: "y", count: padding)
            + "\", \"api_key\": \"key-DDD"  // cut off: not JSON
        let form = "refresh_token=ref-CCC&user=ada&" + String(repeating: "z", count: padding) + "=1&signature=sig-FFF"
        stub.on(nil, "/v1/broken", reply: .data(Data(broken.utf8)))
        stub.on(
            nil, "/v1/form",
            reply: .data(Data(form.utf8), headers: ["Content-Type": "application/x-www-form-urlencoded"]))
        let log = EventLog()
        let center = loggingCenter(stub, log)
        _ = try await center.send {
            $0.api = "broken"; $0.responseSerializer = .raw
        }
        _ = try await center.send {
            $0.api = "form"; $0.responseSerializer = .raw
        }
        let printed = log.all.joined()
        for secret in ["tok-AAA", "key-DDD", "ref-CCC", "sig-FFF"] {
            #expect(!printed.contains(secret), "\(secret) leaked")
        }
        #expect(printed.contains("user=ada"))
    }

    @Test func headersAreRedactedByRuleAndByTheUsersNames() async throws {
        let stub = StubEngine()
        stub.on(nil, "*", reply: .json(["ok": true], headers: ["X-Session-Id": "sess-GGG", "X-Request-Id": "r-1"]))
        let log = EventLog()
        let (center, _) = stubCenter(stub) { config in
            config.consoleLog = true
            config.consoleLogHandler = { log.record($0) }
            config.consoleLogSecretNames = ["Private"]
        }
        _ = try await center.send { request in
            request.api = "me"
            request.headers["Private-Token"] = "priv-EEE"
            request.headers["X-Api-Key"] = "key-DDD"
            request.headers["X-Amz-Signature"] = "sig-FFF"
            request.headers["X-Private-Thing"] = "tok-BBB"
            request.headers["Accept-Language"] = "fr"
            request.parameters = ["passwd": "pw-HHH", "sessionId": "sess-GGG", "page": 2]
        }
        let printed = log.all.joined()
        for secret in Self.secrets { #expect(!printed.contains(secret), "\(secret) leaked") }
        #expect(printed.contains("Accept-Language: fr"))
        #expect(printed.contains("X-Request-Id: r-1"))
        #expect(printed.contains("page=2") || printed.contains("page: 2"))
    }

    @Test func urlsInsideUnderlyingErrorsAreRedacted() async throws {
        let stub = StubEngine()
        let failing = URL(string: "https://user:pw-HHH@api.example.com/v1/x?token=tok-AAA&page=2")!
        stub.on(
            nil, "*",
            reply: .failure(
                URLError(
                    .timedOut,
                    userInfo: [
                        NSURLErrorFailingURLErrorKey: failing, "NSErrorFailingURLStringKey": failing.absoluteString,
                        NSLocalizedDescriptionKey: "timed out loading \(failing.absoluteString)",
                    ])))
        let log = EventLog()
        _ = await loggingCenter(stub, log).sendRecording {
            $0.url = "https://api.example.com/v1/x?token=tok-AAA&page=2"
        }
        let printed = log.all.joined()
        #expect(printed.contains("underlying:"))
        for secret in ["tok-AAA", "pw-HHH"] { #expect(!printed.contains(secret), "\(secret) leaked:\n\(printed)") }
        #expect(printed.contains("page=2"))
    }
}
