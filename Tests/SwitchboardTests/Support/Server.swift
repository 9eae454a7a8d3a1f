import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
@testable import Switchboard
import SwitchboardTestSupport

/// Where request tests send: a real httpbin when `SWITCHBOARD_HTTPBIN_URL` is set (CI), else the loopback server.
enum Server {
    static let httpbin: String? = ProcessInfo.processInfo.environment["SWITCHBOARD_HTTPBIN_URL"]
        .flatMap { $0.isEmpty ? nil : ($0.hasSuffix("/") ? String($0.dropLast()) : $0) }

    /// The base URL of the httpbin-compatible server under test, without a trailing slash.
    static var base: String { httpbin ?? LoopbackServer.shared.baseURL }

    /// Whether the tests run against a real httpbin.
    static var isRealHttpbin: Bool { httpbin != nil }

    /// The in-process server, for routes only it has.
    static var loopback: LoopbackServer { LoopbackServer.shared }

    /// A center aimed at the server under test.
    static func center(_ configure: (inout Center.Configuration) -> Void = { _ in }) -> Center {
        testCenter { config in
            config.server = base + "/"
            configure(&config)
        }
    }
}

extension Request {
    /// Aims the request at httpbin's `drip` for two bytes over a minute: a request a cancel test can count on to be
    /// running when it cancels. A `delay/10` was not enough: under the whole suite's load a polling task has waited
    /// longer than its ten seconds, and the request ended before the cancel.
    mutating func answerOverAMinute() {
        api = "drip"
        parameters = ["numbytes": 2, "duration": 60]
    }
}

/// A center on the engine the suite runs on (`TestEngine.selected`: CurlEngine when `SWITCHBOARD_ENGINE=curl`),
/// configured by `configure` after that, so a test that sets its own engine keeps it.
func testCenter(_ configure: (inout Center.Configuration) -> Void = { _ in }) -> Center {
    Center { config in
        config.engine = TestEngine.selected
        configure(&config)
    }
}

/// The names of the two built-in network engines, for tests that run on both (`@Test(arguments: bothEngines)`).
let bothEngines = ["URLSessionEngine", "CurlEngine"]

/// The engine a test that runs on both engines names: `CurlEngine`, else `URLSessionEngine` (a new one each time),
/// with at most `perHost` exchanges at a time per host when given.
func namedEngine(_ name: String, perHost: Int? = nil) throws -> any Engine {
    if name == "CurlEngine" { return try CurlEngine(maximumConnectionsPerHost: perHost) }
    let configuration = URLSessionConfiguration.default
    if let perHost { configuration.httpMaximumConnectionsPerHost = perHost }
    return URLSessionEngine(configuration: configuration)
}

/// A loopback server of a test's own that answers as httpbin does, and how many requests it has had: for the tests
/// that a refused request sent nothing.
func countingHttpbin(ipv6: Bool = false) throws -> (server: LoopbackServer, requests: Locked<Int>) {
    let requests = Locked(0)
    let server = try LoopbackServer(ipv6: ipv6) { request in
        requests.withLock { $0 += 1 }
        return Httpbin.route(request)
    }
    return (server, requests)
}

/// A center on the named engine (a new one), aimed at `server`: the shared loopback server unless given; then
/// `configure`.
func loopbackCenter(
    _ engineName: String, server: LoopbackServer = .shared,
    _ configure: (inout Center.Configuration) -> Void = { _ in }
) throws -> Center {
    let engine = try namedEngine(engineName)
    return Center { config in
        config.engine = engine
        config.server = server.baseURL + "/"
        configure(&config)
    }
}

/// A cookie storage of a test's own, kept in memory: an ephemeral configuration's. (A storage for a group container
/// writes a file under the home directory that outlives the test.)
func privateCookieStorage() -> HTTPCookieStorage {
    URLSessionConfiguration.ephemeral.httpCookieStorage!
}
