import Foundation
import Testing
@testable import Switchboard
import SwitchboardTestSupport

/// The authenticator's credential goes to the center's own servers only: a request to another origin (an image CDN,
/// a presigned upload, a link from a response) goes without it, and its `401` refreshes nothing.
@Suite struct CredentialScopeTests {
    /// An authenticator that puts `Bearer token` on a request and counts its refreshes (one `needsRefresh` never asks
    /// for).
    static func authenticator() -> Authenticator {
        Authenticator(credential: "token") { token, request in
            request.headers["Authorization"] = "Bearer \(token)"
        } refresh: { _, _ in
            "refreshed"
        }
    }

    /// The `Authorization` field the request with this configuration went with, through a stub center with
    /// `https://api.example.com/v1/` as its server and `https://pay.example.com/` as the `payment` node.
    static func sentCredential(_ configure: @escaping (inout Request) -> Void) async -> String? {
        let stub = StubEngine()
        stub.on(nil, "*") { _ in .json(["ok": true]) }
        let center = stubCenter(stub) { config in
            config.authenticator = authenticator()
            config.nodes["payment"] = "https://pay.example.com/"
        }.0
        let outcome = await center.sendRecording(configure)
        #expect(outcome.error == nil, "\(String(describing: outcome.error))")
        return stub.requests.last?.urlRequest.value(forHTTPHeaderField: "Authorization")
    }

    @Test func theCredentialGoesToTheCenterServers() async {
        // Composed from `api`: against the center's server, a node's, or the request's own.
        #expect(await Self.sentCredential { $0.api = "data" } == "Bearer token")
        let nodeCredential = await Self.sentCredential { request in
            request.node = "payment"
            request.api = "charges"
        }
        #expect(nodeCredential == "Bearer token")
        // A full URL on one of their origins, however it is spelled (host case, the scheme's default port).
        #expect(await Self.sentCredential { $0.url = "https://api.example.com/v1/data" } == "Bearer token")
        #expect(await Self.sentCredential { $0.url = "https://API.example.com:443/other" } == "Bearer token")
        #expect(await Self.sentCredential { $0.url = "https://pay.example.com/charges" } == "Bearer token")
        #expect(await Self.sentCredential { $0.api = "https://api.example.com/v2/data" } == "Bearer token")
    }

    @Test func theCredentialDoesNotGoToAnotherOrigin() async {
        #expect(await Self.sentCredential { $0.url = "https://cdn.example.net/v1/data" } == nil)
        // An `api` that is a full URL goes where it says, not to the server.
        #expect(await Self.sentCredential { $0.api = "https://cdn.example.net/v1/data" } == nil)
        // Another scheme or port is another origin.
        #expect(await Self.sentCredential { $0.url = "http://api.example.com/v1/data" } == nil)
        #expect(await Self.sentCredential { $0.url = "https://api.example.com:8443/v1/data" } == nil)
        // A host that only begins like the server's.
        #expect(await Self.sentCredential { $0.url = "https://api.example.com.evil.example/v1/data" } == nil)
        // A request's own server is not one of the center's (a node is how a center names another of its servers).
        let ownServerCredential = await Self.sentCredential { request in
            request.server = "https://own.example.org/"
            request.api = "data"
        }
        #expect(ownServerCredential == nil)
        // Judged on the URL composed: a scheme-relative `api`, user info before the host, a scheme's default port.
        #expect(await Self.sentCredential { $0.api = "//cdn.example.net/v1/data" } == nil)
        #expect(await Self.sentCredential { $0.url = "https://api.example.com@cdn.example.net/data" } == nil)
        #expect(await Self.sentCredential { $0.url = "http://api.example.com:443/v1/data" } == nil)
        #expect(await Self.sentCredential { $0.api = "//api.example.com/v2/data" } == "Bearer token")
    }

    /// The origin the engines send to, whatever way the URL's text spells it; anything that cannot be read is no
    /// origin (and so never the center's).
    @Test func originsAreReadAsTheEnginesSendThem() {
        let usual = Origin(sending: "http://127.0.0.1:8080/a")
        #expect(usual == Origin(scheme: "http", host: "127.0.0.1", port: 8080))
        for spelling in [
            "http://127.1:8080/", "http://2130706433:8080/", "http://0x7f000001:8080/", "http://0177.0.0.1:8080/",
            "HTTP://127.0.0.1:8080/", "http://%31%32%37.0.0.1:8080/", "http://user:pw@127.0.0.1:8080/",
        ] {
            #expect(Origin(sending: spelling) == usual, "\(spelling)")
        }
        #expect(Origin(sending: "https://API.example.com/") == Origin(sending: "https://api.example.com:443/x"))
        #expect(Origin(sending: "http://api.example.com/") == Origin(sending: "http://api.example.com:80/"))
        #expect(Origin(sending: "http://api.example.com/") != Origin(sending: "http://api.example.com:443/"))
        #expect(Origin(sending: "http://localhost./") != Origin(sending: "http://localhost/"))
        #expect(Origin(sending: "http://127.0.0.1:8080@10.0.0.1:9/") == Origin(sending: "http://10.0.0.1:9/"))
        #expect(Origin(sending: "/relative") == nil)
    }

    /// The scope of a center: its server and nodes; a center with neither covers every URL, and one whose server
    /// cannot be read covers none.
    @Test func theScopeIsTheServerAndTheNodes() {
        var configuration = Center.Configuration()
        #expect(configuration.credentialScope.covers("https://anywhere.example.net/"))
        configuration.server = "https://api.example.com/v1/"
        configuration.nodes["payment"] = "https://pay.example.com"
        let scope = configuration.credentialScope
        #expect(scope.covers("https://api.example.com/other"))
        #expect(scope.covers("https://pay.example.com:443/charges"))
        #expect(!scope.covers("https://cdn.example.net/"))
        #expect(!scope.covers(nil))
        configuration.server = "not a URL"
        configuration.nodes = [:]
        #expect(!configuration.credentialScope.covers("https://api.example.com/"))
    }

    /// A center without a server or node, whose requests all give their full URL, has no origin to keep the
    /// credential to: it goes with every request, as before.
    @Test func aCenterWithoutServersSendsTheCredentialEverywhere() async {
        let stub = StubEngine()
        stub.on(nil, "*") { _ in .json(["ok": true]) }
        let center = testCenter { config in
            config.engine = stub
            config.authenticator = Self.authenticator()
        }
        let outcome = await center.sendRecording { $0.url = "https://anywhere.example.net/data" }
        #expect(outcome.error == nil)
        #expect(stub.requests.last?.urlRequest.value(forHTTPHeaderField: "Authorization") == "Bearer token")
    }

    /// A `401` from another origin is that request's failure: it refreshes nothing, and is not sent again.
    @Test func a401FromAnotherOriginRefreshesNothing() async {
        let stub = StubEngine()
        stub.on(nil, "*") { _ in .status(401) }
        let authenticator = Self.authenticator()
        let center = stubCenter(stub) { $0.authenticator = authenticator }.0
        let outcome = await center.sendRecording { $0.url = "https://cdn.example.net/avatar.png" }
        #expect(outcome.error?.code == .unacceptableStatus)
        #expect(outcome.error?.status == 401)
        #expect(authenticator.refreshCount == 0)
        #expect(stub.requests.count == 1)
        // The same answer from the center's server refreshes the credential and sends the request again once.
        let own = await center.sendRecording { $0.api = "data" }
        #expect(own.error?.status == 401)
        #expect(authenticator.refreshCount == 1)
        #expect(stub.requests.count == 3)
    }

    /// The credential fields among the center's general headers stay with its servers too, as at a redirect to
    /// another origin: `Authorization` always, a field with a secret name unless `forwardsSecretHeaders` is on. The
    /// request's own fields and the center's other ones go everywhere.
    @Test func theCentersCredentialHeadersStayWithItsServers() async {
        func sent(forwardsSecrets: Bool = false, _ configure: @escaping (inout Request) -> Void) async -> HTTPHeaders {
            let stub = StubEngine()
            stub.on(nil, "*") { _ in .json(["ok": true]) }
            let center = stubCenter(stub) { config in
                config.headers["Authorization"] = "Bearer general"
                config.headers["X-Api-Key"] = "key"
                config.headers["X-Client"] = "ios"
                config.forwardsSecretHeaders = forwardsSecrets
            }.0
            let outcome = await center.sendRecording(configure)
            #expect(outcome.error == nil, "\(String(describing: outcome.error))")
            return stub.requests.last?.headers ?? HTTPHeaders()
        }
        let own = await sent { $0.url = "https://api.example.com/v1/data" }
        #expect(own["Authorization"] == "Bearer general")
        #expect(own["X-Api-Key"] == "key")
        #expect(own["X-Client"] == "ios")
        let foreign = await sent { $0.url = "https://cdn.example.net/a.png" }
        #expect(foreign["Authorization"] == nil)
        #expect(foreign["X-Api-Key"] == nil)
        #expect(foreign["X-Client"] == "ios")
        let ownField = await sent { request in
            request.url = "https://cdn.example.net/a.png"
            request.headers["Authorization"] = "Bearer mine"
        }
        #expect(ownField["Authorization"] == "Bearer mine")
        #expect(ownField["X-Api-Key"] == nil)
        let forwarded = await sent(forwardsSecrets: true) { $0.url = "https://cdn.example.net/a.png" }
        #expect(forwarded["Authorization"] == nil)
        #expect(forwarded["X-Api-Key"] == "key")
    }

    /// Over loopback on both engines: a second server (another port, so another origin) sees neither the
    /// authenticator's credential nor the center's secret header, and its `401` refreshes nothing; the center's own
    /// server sees both.
    @Test(arguments: bothEngines)
    func anotherServerOnLoopbackSeesNoCredential(engineName: String) async throws {
        let (other, _) = try countingHttpbin()
        defer { other.stop() }
        let authenticator = Self.authenticator()
        let center = try loopbackCenter(engineName) { config in
            config.authenticator = authenticator
            config.headers["X-Api-Key"] = "key"
            config.headers["X-Client"] = "ios"
        }
        let own = try await center.send { $0.api = "headers" }
        #expect(own.json?["headers"]?["Authorization"]?.string == "Bearer token")
        #expect(own.json?["headers"]?["X-Api-Key"]?.string == "key")
        #expect(own.json?["headers"]?["X-Client"]?.string == "ios")
        let foreign = try await center.send { $0.url = other.baseURL + "/headers" }
        #expect(foreign.json?["headers"]?["Authorization"] == nil)
        #expect(foreign.json?["headers"]?["X-Api-Key"] == nil)
        #expect(foreign.json?["headers"]?["X-Client"]?.string == "ios")
        #expect(foreign.json?["headers"]?["Host"]?.string?.hasSuffix(":\(other.port)") == true)
        let refused = await center.sendRecording { $0.url = other.baseURL + "/status/401" }
        #expect(refused.error?.status == 401)
        #expect(authenticator.refreshCount == 0)
    }
}

/// Every way a request can leave the center's origin, over loopback on both engines: a second server (another port,
/// so another origin) stands in for the other host, and sees none of the center's credentials (the authenticator's
/// token, its `Cookie` and `X-Api-Key` headers, its `access_token` parameter) while it sees the center's other
/// header and parameter; the center's own server, however its URL is spelled, sees them all.
@Suite struct CredentialDestinationTests {
    enum Destination { case own, other, neither, refused }

    /// Where a request went and what it carried.
    struct Arrival {
        let server: Destination
        let request: ServerRequest
        /// Whether it carried any of the center's credentials (a URL's own user info is the URL's `Authorization`).
        var carriesCredentials: Bool {
            request.header("Authorization") == "Bearer token" || request.header("Cookie") != nil
                || request.header("X-Api-Key") != nil || request.queryValue("access_token") != nil
        }
        var carriesEverything: Bool {
            request.header("Authorization") == "Bearer token" && request.header("Cookie") == "sid=1"
                && request.header("X-Api-Key") == "key" && request.queryValue("access_token") == "secret"
                && request.header("X-Client") == "ios" && request.queryValue("app_version") == "1.2"
        }
    }

    @Test(arguments: bothEngines)
    func credentialsGoOnlyToTheCentersOrigin(engineName: String) async throws {
        let arrivals = Locked<[Arrival]>([])
        let own = try LoopbackServer { request in
            arrivals.withLock { $0.append(Arrival(server: .own, request: request)) }
            return Httpbin.route(request)
        }
        defer { own.stop() }
        let other = try LoopbackServer { request in
            arrivals.withLock { $0.append(Arrival(server: .other, request: request)) }
            return Httpbin.route(request)
        }
        defer { other.stop() }
        let (ownPort, otherPort) = (own.port, other.port)
        let authenticator = CredentialScopeTests.authenticator()
        let center = try loopbackCenter(engineName, server: own) { config in
            config.authenticator = authenticator
            config.headers["Cookie"] = "sid=1"
            config.headers["X-Api-Key"] = "key"
            config.headers["X-Client"] = "ios"
            config.parameters = ["access_token": "secret", "app_version": "1.2"]
            config.nodes["mirror"] = "http://127.1:\(ownPort)/"
        }
        let cases: [(String, Destination, @Sendable (inout Request) -> Void)] = [
            ("a full URL", .other, { $0.url = "http://127.0.0.1:\(otherPort)/get" }),
            ("a full URL in api", .other, { $0.api = "http://127.0.0.1:\(otherPort)/get" }),
            ("a scheme-relative api", .other, { $0.api = "//127.0.0.1:\(otherPort)/get" }),
            ("user info", .other, { $0.api = "//user@127.0.0.1:\(otherPort)/get" }),
            (
                "the own origin as user info", .other,
                { $0.url = "http://127.0.0.1:\(ownPort)@127.0.0.1:\(otherPort)/get" }
            ),
            ("an upper-case scheme and host", .other, { $0.url = "HTTP://LOCALHOST:\(otherPort)/get" }),
            ("an integer address", .other, { $0.url = "http://2130706433:\(otherPort)/get" }),
            ("a hex address", .other, { $0.url = "http://0x7f000001:\(otherPort)/get" }),
            ("an octal address", .other, { $0.url = "http://0177.0.0.1:\(otherPort)/get" }),
            ("a short address", .other, { $0.url = "http://127.1:\(otherPort)/get" }),
            ("a percent-encoded host", .other, { $0.url = "http://%31%32%37.0.0.1:\(otherPort)/get" }),
            (
                "a request's own server", .other,
                { r in
                    r.server = "http://127.0.0.1:\(otherPort)/"
                    r.api = "get"
                }
            ),
            (
                "a node's server and a scheme-relative api", .other,
                { r in
                    r.node = "mirror"
                    r.api = "//127.0.0.1:\(otherPort)/get"
                }
            ),
            (
                "a redirect", .other,
                { r in
                    r.api = "redirect-to"
                    r.parameters = ["url": "http://127.0.0.1:\(otherPort)/get"]
                }
            ),
            // Backslashes are no separators in an RFC 3986 reference: the first is no URL reference at all (its first
            // segment has a `:`), the second a path on the center's server.
            ("a backslash api", .refused, { $0.api = "\\\\127.0.0.1:\(otherPort)/get" }),
            ("a slash and a backslash", .own, { $0.api = "/\\127.0.0.1:\(otherPort)/get" }),
            ("the own origin spelled otherwise", .own, { $0.url = "http://0x7f.1:\(ownPort)/get" }),
            ("the own origin with a trailing dot", .neither, { $0.url = "http://localhost.:\(ownPort)/get" }),
            ("the own host without a port", .neither, { $0.url = "http://127.0.0.1/get" }),
            (
                "a node of the center", .own,
                { r in
                    r.node = "mirror"
                    r.api = "get"
                }
            ),
        ]
        for (label, destination, configure) in cases {
            arrivals.withLock { $0.removeAll() }
            let outcome = await center.sendRecording(configure)
            let seen = arrivals.withLock { $0 }
            switch destination {
            case .refused:
                #expect(outcome.error?.code == .invalidURL && seen.isEmpty, "\(label): \(seen.map(\.server))")
            case .own:
                #expect(seen.count == 1 && seen.allSatisfy { $0.server == .own }, "\(label): \(seen.map(\.server))")
                #expect(seen.allSatisfy { $0.carriesEverything }, "\(label)")
            case .other:
                let there = seen.filter { $0.server == .other }
                #expect(there.count == 1, "\(label): \(seen.map(\.server))")
                #expect(!there.contains { $0.carriesCredentials }, "\(label): \(there.map(\.request.headers))")
                #expect(there.allSatisfy { $0.request.header("X-Client") == "ios" }, "\(label)")
            case .neither:
                #expect(!seen.contains { $0.server == .other }, "\(label)")
            }
        }
        // A 401 from another origin, reached by a redirect, refreshes nothing.
        let refused = await center.sendRecording { request in
            request.api = "redirect-to"
            request.parameters = ["url": "http://127.0.0.1:\(otherPort)/status/401"]
        }
        #expect(refused.error?.status == 401)
        #expect(authenticator.refreshCount == 0)
    }

    /// A hook or plugin that sends the request elsewhere sends it without the center's credentials: the decision is
    /// taken on the URL after them.
    @Test(arguments: bothEngines)
    func aHookThatChangesTheURLTakesTheCredentialsOff(engineName: String) async throws {
        let arrivals = Locked<[ServerRequest]>([])
        let other = try LoopbackServer { request in
            arrivals.withLock { $0.append(request) }
            return Httpbin.route(request)
        }
        defer { other.stop() }
        let otherPort = other.port
        let center = try loopbackCenter(engineName) { config in
            config.authenticator = CredentialScopeTests.authenticator()
            config.headers["X-Api-Key"] = "key"
            config.parameters = ["access_token": "secret"]
            config.onRequest = { request in
                guard request.api?.hasPrefix("elsewhere") == true else { return }
                // Turning the general values off after the merge changes nothing of what was merged.
                if request.api == "elsewhere-flags-off" {
                    request.useGeneralHeaders = false
                    request.useGeneralParameters = false
                }
                request.api = "//127.0.0.1:\(otherPort)/get"
            }
        }
        for api in ["elsewhere", "elsewhere-flags-off"] {
            arrivals.withLock { $0.removeAll() }
            let outcome = await center.sendRecording { $0.api = api }
            #expect(outcome.error == nil)
            let seen = arrivals.withLock { $0 }
            #expect(seen.count == 1, "\(api)")
            #expect(seen.first?.header("Authorization") == nil, "\(api)")
            #expect(seen.first?.header("X-Api-Key") == nil, "\(api)")
            #expect(seen.first?.queryValue("access_token") == nil, "\(api)")
        }
        // The same hook leaves the center's own requests as they were.
        let own = try await center.send { $0.api = "get" }
        #expect(own.json?["headers"]?["Authorization"]?.string == "Bearer token")
        #expect(own.json?["args"]?["access_token"]?.string == "secret")
    }
}
