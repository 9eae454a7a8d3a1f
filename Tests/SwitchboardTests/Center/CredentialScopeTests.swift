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
        let ownServerCredential = await Self.sentCredential { request in
            request.server = "https://own.example.org/"
            request.api = "data"
        }
        #expect(ownServerCredential == "Bearer token")
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
