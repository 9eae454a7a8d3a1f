import Foundation
import Testing
import Switchboard
import SwitchboardTestSupport

#if os(Linux)
/// The proxy variables curl reads take effect alike on both engines on Linux, where URLSession is libcurl too:
/// `http_proxy` (lower case only: libcurl leaves `HTTP_PROXY` alone, since a CGI program gets a request's `Proxy`
/// field under that name), `https_proxy`, `all_proxy` and `no_proxy`, with credentials in the proxy's URL.
///
/// Each case runs in a child process (this binary, running only `requestsInTheChildProcess`) whose environment holds
/// the variables: set in this process, they would send the other tests' requests through the proxy. The loopback
/// server plays the proxy: it answers a request whose target is a whole URL (the absolute form a client sends to a
/// proxy) as it answers one for the path.
@Suite struct ProxyVariableTests {
    static let environment = ProcessInfo.processInfo.environment
    /// Set in the child: the URLs to request, space-separated, and where to write what came back.
    static let childURLs = environment["SWITCHBOARD_PROXY_CHILD_URLS"]
    static let childReport = environment["SWITCHBOARD_PROXY_CHILD_REPORT"]
    /// Set in the child: each engine keeps cookies in a private storage of its own.
    static let childKeepsCookies = environment["SWITCHBOARD_PROXY_CHILD_COOKIES"] != nil

    /// What one engine got for one URL: the target and fields the server read, or the error's code.
    struct Outcome: Codable, Equatable, CustomStringConvertible {
        var target: String?
        var host: String?
        var proxyAuthorization: String?
        /// The names of the cookies the request carried (`/cookie-jar`), in order, comma-separated.
        var cookies: String?
        var error: String?
        var message: String?
        var description: String {
            error.map { "error \($0): \(message ?? "")" } ?? "target \(target ?? "-"), Host \(host ?? "-")"
        }

        /// Equal outcomes have the same target and fields, or the same error code (the words may differ).
        static func == (lhs: Outcome, rhs: Outcome) -> Bool {
            (lhs.target, lhs.host, lhs.proxyAuthorization, lhs.cookies, lhs.error)
                == (rhs.target, rhs.host, rhs.proxyAuthorization, rhs.cookies, rhs.error)
        }
    }

    /// Runs the child with `variables` and returns, for each engine, what each URL gave.
    private func outcomes(_ urls: [String], variables: [String: String]) async throws -> [String: [Outcome]] {
        let scratch = Scratch()
        let report = scratch.file("report.json")
        var environment = variables
        environment["SWITCHBOARD_PROXY_CHILD_URLS"] = urls.joined(separator: " ")
        environment["SWITCHBOARD_PROXY_CHILD_REPORT"] = report.path
        // The child's own environment leaves out any proxy variable of this process's but those given.
        for name in ["http_proxy", "https_proxy", "all_proxy", "no_proxy"] {
            for spelling in [name, name.uppercased()] where environment[spelling] == nil { environment[spelling] = "" }
        }
        try await ChildTest.run("requestsInTheChildProcess", environment: environment, scratch: scratch)
        return try JSONDecoder().decode([String: [Outcome]].self, from: Data(contentsOf: report))
    }

    private var server: String { LoopbackServer.shared.baseURL }
    private var proxy: String { server }

    @Test func httpProxyCarriesPlainHTTPRequestsAndNoProxyHostsGoDirect() async throws {
        let port = URL(string: server)!.port!
        let found = try await outcomes(
            ["http://proxied.invalid/request-line?a=1", "http://localhost:\(port)/request-line"],
            variables: ["http_proxy": proxy, "no_proxy": "localhost"])
        for engine in bothEngines {
            let got = try #require(found[engine])
            #expect(
                got == [
                    // Through the proxy: the whole URL as the target, the origin's name in Host.
                    Outcome(target: "http://proxied.invalid/request-line?a=1", host: "proxied.invalid"),
                    // Straight to the origin: the path.
                    Outcome(target: "/request-line", host: "localhost:\(port)"),
                ], "\(engine)")
        }
    }

    @Test func allProxyCarriesPlainHTTPAndHTTPSProxyIsAskedForATunnel() async throws {
        let found = try await outcomes(
            ["http://proxied.invalid/request-line", "https://proxied.invalid/request-line"],
            variables: ["all_proxy": proxy, "https_proxy": proxy])
        for engine in bothEngines {
            let got = try #require(found[engine])
            try #require(got.count == 2)
            #expect(
                got[0] == Outcome(target: "http://proxied.invalid/request-line", host: "proxied.invalid"), "\(engine)")
            // An https request asks the proxy for a tunnel (CONNECT), which this one refuses with a 404.
            #expect(got[1].error == HTTPError.Code.transport.description, "\(engine): \(got[1])")
            #expect(got[1].message?.contains("CONNECT tunnel failed, response 404") == true, "\(engine): \(got[1])")
        }
    }

    @Test func credentialsInTheProxyURLGoToTheProxyAlike() async throws {
        let proxy = proxy.replacingOccurrences(of: "http://", with: "http://user:s%3Acret@")
        let found = try await outcomes(["http://proxied.invalid/request-line"], variables: ["http_proxy": proxy])
        let expected = "Basic " + Data("user:s:cret".utf8).base64EncodedString()
        for engine in bothEngines {
            #expect(found[engine]?.first?.proxyAuthorization == expected, "\(engine): \(found[engine] ?? [])")
        }
    }

    @Test func upperCaseHTTPProxyIsLeftAlone() async throws {
        let found = try await outcomes(["\(server)/request-line"], variables: ["HTTP_PROXY": "http://127.0.0.1:1"])
        for engine in bothEngines {
            #expect(found[engine]?.first?.target == "/request-line", "\(engine): \(found[engine] ?? [])")
        }
    }

    @Test func aProxyThatCannotBeReachedFailsWithTheSameCodeOnBothEngines() async throws {
        let found = try await outcomes(
            ["http://proxied.invalid/request-line"], variables: ["http_proxy": "http://127.0.0.1:1"])
        let urlSession = try #require(found["URLSessionEngine"]?.first)
        let curl = try #require(found["CurlEngine"]?.first)
        #expect(urlSession.error == HTTPError.Code.cannotConnect.description, "\(urlSession)")
        #expect(curl == urlSession)
    }

    /// A cookie a server sets for a public suffix goes to no name under it, alike on both engines (the rule itself:
    /// `CookieRulesTests.aCookieForAPublicSuffixIsRefused`): through the proxy, `evil.co.uk` sets one for `co.uk`
    /// and `bank.co.uk` does not get it, where `www.example.co.uk` sets one for `example.co.uk` and
    /// `api.example.co.uk` gets it. Both engines sent the `co.uk` cookie to `bank.co.uk`.
    @Test func aCookieForAPublicSuffixGoesToNoNameUnderIt() async throws {
        func setting(_ field: String, from host: String) -> String {
            "http://\(host)/cookie-jar/set?set=" + field.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!
        }
        let found = try await outcomes(
            [
                setting("tossed=1; Domain=co.uk; Path=/", from: "evil.co.uk"),
                setting("shared=1; Domain=example.co.uk; Path=/", from: "www.example.co.uk"),
                "http://bank.co.uk/cookie-jar/check", "http://api.example.co.uk/cookie-jar/check",
            ],
            variables: ["http_proxy": proxy, "SWITCHBOARD_PROXY_CHILD_COOKIES": "1"])
        for engine in bothEngines {
            let got = try #require(found[engine])
            #expect(got.map(\.cookies) == ["", "", "", "shared"], "\(engine): \(got)")
        }
    }

    /// The child's half of the tests above; it runs only in their child process.
    @Test(.enabled(if: childReport != nil, "runs in the child process of a proxy test"))
    func requestsInTheChildProcess() async throws {
        let urls = (Self.childURLs ?? "").split(separator: " ").map(String.init)
        var report: [String: [Outcome]] = [:]
        for engine in bothEngines {
            let chosen =
                Self.childKeepsCookies
                ? try CookieRulesTests.engine(engine, cookies: privateCookieStorage()) : try namedEngine(engine)
            let center = Center { config in
                config.engine = chosen
                config.totalTimeout = .seconds(30)
                config.retryPolicy = .never
            }
            var found: [Outcome] = []
            for url in urls {
                do {
                    let response = try await center.send { $0.url = url }
                    let headers = response.json?["headers"]
                    found.append(
                        Outcome(
                            target: response.json?["target"]?.string, host: headers?["Host"]?.string,
                            proxyAuthorization: headers?["Proxy-Authorization"]?.string,
                            cookies: response.json?["cookies"]?.object.map { $0.keys.sorted().joined(separator: ",") }))
                } catch {
                    found.append(Outcome(error: error.code.description, message: error.message))
                }
            }
            report[engine] = found
        }
        try JSONEncoder().encode(report).write(to: URL(fileURLWithPath: try #require(Self.childReport)))
    }
}
#endif
