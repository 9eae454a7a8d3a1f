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
        stub.on(nil, "*", reply: .json(["access_token": "tok-123", "user": "ada"],
                                       headers: ["Set-Cookie": "session=s3cr3t"]))
        let log = EventLog()
        let center = loggingCenter(stub, log)
        _ = try await center.send { request in
            request.api = "login"
            request.method = .post
            request.headers["Cookie"] = "c=cookie-value"
            request.headers["Proxy-Authorization"] = "Basic proxy-secret"
            request.parameters = ["user": "ada", "password": "hunter2", "profile": ["api_token": "t0k"] as [String: any Sendable]]
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
        #expect(error.contains("token=REDACTED"))
        #expect(error.contains("page=2"))
        #expect(error.contains("quota exceeded"))
    }

    @Test func silentWhenOff() async throws {
        let stub = StubEngine()
        stub.on(nil, "*", reply: .status(204))
        let log = EventLog()
        let (center, _) = stubCenter(stub) { $0.consoleLogHandler = { log.record($0) } }
        _ = try await center.send { $0.api = "x" }
        #expect(log.all.isEmpty)
    }
}
