import Foundation
import Testing
@testable import Switchboard
import SwitchboardTestSupport

/// Two certificate authorities and what they issued, made with `openssl` once per run: a server and a client
/// certificate from the first, a server from the second, and a directory that stands for the system's authorities
/// (holding only the second), so that a test can tell adding roots from replacing them. And a self-signed RSA
/// certificate for `localhost` and `127.0.0.1`, which no policy trusts.
struct TestPKI: Sendable {
    struct Identity: Sendable {
        let certificate: URL
        let key: URL
    }

    let authority: URL
    let otherAuthority: URL
    let server: Identity
    let otherServer: Identity
    let client: Identity
    let clientPKCS12: URL
    static let pkcs12Password = "p12-Secret-4711"
    let systemRoots: URL
    let selfSigned: Identity
    let selfSignedKeyPin: String
    /// Pins (`sha256//…`) of the server's key, of its certificate, and of its authority's certificate.
    let serverKeyPin: String
    let serverCertificatePin: String
    let authorityCertificatePin: String

    /// The run's PKI (see `shared`), made or waited for on a thread of its own (`BlockingWork`): making an RSA key
    /// takes `openssl` a good part of a second, and whoever touches `shared` first waits for it (and anyone else
    /// meanwhile), so it is only touched through here, off the shared pool. Removed when the test process exits.
    static func made() async throws -> TestPKI {
        try await BlockingWork.run { shared }.get()
    }

    private static let shared: Result<TestPKI, any Error> = Result {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "switchboard-test-pki-\(getpid())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        atexit {
            try? FileManager.default.removeItem(
                at: FileManager.default.temporaryDirectory.appendingPathComponent("switchboard-test-pki-\(getpid())"))
        }
        return try TestPKI(in: directory)
    }

    private init(in directory: URL) throws {
        let path = directory.path
        func file(_ name: String) -> URL { directory.appendingPathComponent(name) }
        func key(_ name: String) -> String {
            "openssl ecparam -name prime256v1 -genkey -noout -out \(path)/\(name).key"
        }
        func issue(_ name: String, subject: String, by authority: String, names: Bool) -> String {
            let extensions = names ? " -extfile \(path)/names.ext" : ""
            return key(name)
                + " && openssl req -new -key \(path)/\(name).key -subj /CN=\(subject) -out \(path)/\(name).csr"
                + " && openssl x509 -req -in \(path)/\(name).csr -CA \(path)/\(authority).pem -CAkey \(path)/\(authority).key"
                + " -CAcreateserial -days 1 -out \(path)/\(name).pem\(extensions)"
        }
        func pin(_ command: String) throws -> String {
            "sha256//"
                + (try TLSServer.run(command + " | openssl dgst -sha256 -binary | base64"))
                .trimmingCharacters(in: .whitespacesAndNewlines)
        }
        try "subjectAltName=DNS:localhost,IP:127.0.0.1\n".write(
            to: file("names.ext"), atomically: true, encoding: .utf8)
        for authority in ["ca", "ca2"] {
            try TLSServer.run(
                key(authority) + " && openssl req -x509 -new -key \(path)/\(authority).key -days 1 "
                    + "-subj /CN=Switchboard-Test-\(authority) -out \(path)/\(authority).pem")
        }
        try TLSServer.run(issue("server", subject: "localhost", by: "ca", names: true))
        try TLSServer.run(issue("server2", subject: "localhost", by: "ca2", names: true))
        try TLSServer.run(issue("client", subject: "switchboard-client", by: "ca", names: false))
        try TLSServer.run(
            "openssl pkcs12 -export -in \(path)/client.pem -inkey \(path)/client.key -out \(path)/client.p12 "
                + "-passout pass:\(Self.pkcs12Password)")
        try TLSServer.run(
            "openssl req -x509 -newkey rsa:2048 -nodes -keyout \(path)/self.key -out \(path)/self.pem -days 1 "
                + "-subj /CN=localhost -addext subjectAltName=DNS:localhost,IP:127.0.0.1")
        try TLSServer.run("cat \(path)/server.pem \(path)/ca.pem > \(path)/server-chain.pem")
        try FileManager.default.createDirectory(at: file("roots"), withIntermediateDirectories: true)
        try TLSServer.run("cp \(path)/ca2.pem \(path)/roots/ && openssl rehash \(path)/roots")
        authority = file("ca.pem")
        otherAuthority = file("ca2.pem")
        server = Identity(certificate: file("server.pem"), key: file("server.key"))
        otherServer = Identity(certificate: file("server2.pem"), key: file("server2.key"))
        client = Identity(certificate: file("client.pem"), key: file("client.key"))
        clientPKCS12 = file("client.p12")
        systemRoots = file("roots")
        selfSigned = Identity(certificate: file("self.pem"), key: file("self.key"))
        selfSignedKeyPin = try pin(
            "openssl x509 -in \(path)/self.pem -pubkey -noout | openssl pkey -pubin -outform der")
        serverKeyPin = try pin("openssl x509 -in \(path)/server.pem -pubkey -noout | openssl pkey -pubin -outform der")
        serverCertificatePin = try pin("openssl x509 -in \(path)/server.pem -outform der")
        authorityCertificatePin = try pin("openssl x509 -in \(path)/ca.pem -outform der")
    }

    /// A server with `identity` (by default the first authority's server), its authority's certificate sent after
    /// its own.
    func tlsServer(
        _ identity: Identity? = nil, clientAuthorities: URL? = nil, www: Bool = true,
        output: FileHandle = .nullDevice
    ) async throws -> TLSServer {
        let identity = identity ?? server
        let server = try TLSServer(
            certificate: identity.certificate, key: identity.key,
            chain: identity.certificate == self.server.certificate ? authority : otherAuthority,
            clientAuthorities: clientAuthorities, www: www, output: output)
        await server.ready()
        return server
    }
}

extension Center {
    /// A `GET` of the server's page, as a string.
    func fetch(_ server: TLSServer, host: String = "localhost") async -> Outcome {
        await sendRecording { request in
            request.url = "https://\(host):\(server.port)/"
            request.responseSerializer = .string
            request.totalTimeout = .seconds(20)
        }
    }
}

/// A TLS server on loopback that keeps its connections open between requests (HTTP/1.1, Python's `http.server`),
/// with the test PKI's server certificate and its authority after it: `openssl s_server -www` closes each connection
/// after one answer, so connection reuse needs this one.
final class KeepAliveTLSServer: Sendable {
    let port: Int
    private let process: ChildProcess

    static let script = """
        import http.server, ssl, sys
        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            def do_GET(self):
                body = b"kept"
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
            def log_message(self, *arguments):
                pass
        server = http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Handler)
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(sys.argv[2], sys.argv[3])
        server.socket = context.wrap_socket(server.socket, server_side=True)
        server.serve_forever()
        """

    init(_ pki: TestPKI) async throws {
        port = try FreePort.find()
        let chain = pki.server.certificate.deletingLastPathComponent().appendingPathComponent("server-chain.pem")
        process = try ChildProcess(
            "/usr/bin/python3", ["-c", Self.script, "\(port)", chain.path, pki.server.key.path])
        await TLSServer.waitForListener(on: port)
    }

    /// Two requests one after the other, with whether the second went on the first one's connection.
    func fetchTwice(_ center: Center) async -> (first: Outcome, second: Outcome) {
        func fetch() async -> Outcome {
            await center.sendRecording { request in
                request.url = "https://localhost:\(port)/"
                request.responseSerializer = .string
                request.totalTimeout = .seconds(20)
            }
        }
        let first = await fetch()
        return (first, await fetch())
    }
}

/// A center on a CurlEngine of its own whose system authorities are the test PKI's stand-in directory.
func curlCenter(_ pki: TestPKI, _ policies: [String: TrustPolicy]) throws -> Center {
    let engine = try CurlEngine(cookies: nil, maximumConnectionsPerHost: nil, systemRoots: pki.systemRoots.path)
    return testCenter { config in
        config.engine = engine
        config.trustPolicies = policies
    }
}

@Suite(.enabled(if: TLSServer.isAvailable, "needs openssl and libcurl"), .serialized)
struct TrustPolicyTests {
    /// The same certificate fault gives the same code on both engines: URLSessionEngine failed a self-signed server
    /// with `.transport` (URLError -1, libcurl's words alone), where CurlEngine said `.serverTrust`. A certificate
    /// error from URLSession on Apple platforms (`serverCertificateUntrusted`, `...HasBadDate`, `...HasUnknownRoot`,
    /// `...NotYetValid`) is `.serverTrust` too.
    @Test func aSelfSignedServerIsRefusedWithTheSameCodeOnBothEngines() async throws {
        let server = try await TLSServer()
        await server.ready()
        for engineName in bothEngines {
            let outcome = try await loopbackCenter(engineName).fetch(server)
            #expect(outcome.error?.code == .serverTrust, "\(engineName): \(String(describing: outcome.error))")
            #expect(outcome.error?.message.contains("self-signed certificate") == true, "\(engineName)")
        }
        for code in [
            URLError.Code.serverCertificateUntrusted, .serverCertificateHasBadDate, .serverCertificateHasUnknownRoot,
            .serverCertificateNotYetValid,
        ] {
            #expect(HTTPError.from(URLError(code)).code == .serverTrust, "\(code)")
        }
    }

    @Test func replacedRootsTrustTheirAuthorityAndNoOther() async throws {
        let pki = try await TestPKI.made()
        let center = try curlCenter(pki, ["localhost": TrustPolicy(roots: .replacing(pki.authority))])
        let ours = try await pki.tlsServer()
        let outcome = await center.fetch(ours)
        #expect(outcome.response?.status == 200, "\(String(describing: outcome.error))")
        #expect(outcome.response?.string?.contains("s_server") == true)
        // The handshake is one of the phases the engine measured, between the connection and the first byte.
        let metrics = try #require(outcome.response?.metrics)
        let handshake = try #require(metrics.secureConnection)
        #expect(handshake > .zero)
        #expect(
            (metrics.nameLookup ?? .zero) + (metrics.connect ?? .zero) + handshake <= metrics.timeToFirstByte ?? .zero)
        // The system's authorities (here the stand-in directory, which holds the other one) are no longer trusted.
        let theirs = try await pki.tlsServer(pki.otherServer)
        #expect(await center.fetch(theirs).error?.code == .serverTrust)
    }

    @Test func addedRootsKeepTheSystemsBesideThem() async throws {
        let pki = try await TestPKI.made()
        let center = try curlCenter(pki, ["localhost": TrustPolicy(roots: .adding(pki.authority))])
        let ours = try await pki.tlsServer()
        let theirs = try await pki.tlsServer(pki.otherServer)
        #expect(await center.fetch(ours).response?.status == 200)
        #expect(await center.fetch(theirs).response?.status == 200)
        // Without the policy the added authority is unknown.
        let plain = try curlCenter(pki, [:])
        #expect(await plain.fetch(ours).error?.code == .serverTrust)
    }

    /// Each host takes its own policy: its exact name, else the longest `*.` pattern, else `*`. `127.0.0.1` and
    /// `localhost` are the same server under two names.
    @Test func eachHostTakesItsOwnPolicy() async throws {
        let pki = try await TestPKI.made()
        let wrong = "sha256//" + Data(repeating: 7, count: 32).base64EncodedString()
        let center = try curlCenter(
            pki,
            [
                "*": TrustPolicy(roots: .replacing(pki.authority)),
                "LocalHost.": TrustPolicy(roots: .replacing(pki.authority), publicKeyPins: [wrong]),
            ])
        let server = try await pki.tlsServer()
        let byName = await center.fetch(server)
        #expect(byName.error?.code == .pinning, "\(String(describing: byName.error))")
        #expect(byName.error?.message.contains("localhost") == true)
        #expect(await center.fetch(server, host: "127.0.0.1").response?.status == 200)
    }

    @Test func aPublicKeyPinIsHeldOnBothSides() async throws {
        let pki = try await TestPKI.made()
        let server = try await pki.tlsServer()
        let wrong = "sha256//" + Data(repeating: 7, count: 32).base64EncodedString()
        for (pins, accepted) in [([pki.serverKeyPin], true), ([wrong], false), ([wrong, pki.serverKeyPin], true)] {
            let center = try curlCenter(
                pki, ["localhost": TrustPolicy(roots: .replacing(pki.authority), publicKeyPins: pins)])
            let outcome = await center.fetch(server)
            #expect(accepted ? outcome.response?.status == 200 : outcome.error?.code == .pinning, "\(pins)")
            // A stream opens through the same step.
            do {
                _ = try await center.stream { $0.url = "https://localhost:\(server.port)/" }
                #expect(accepted, "\(pins)")
            } catch {
                #expect(!accepted && error.code == .pinning, "\(pins): \(error)")
            }
        }
    }

    /// A certificate pin matches the server's own certificate or one sent after it (its authority here); a
    /// certificate pin and a public-key pin must both match when both are given.
    @Test func aCertificatePinMatchesAnyCertificateOfThePresentedChain() async throws {
        let pki = try await TestPKI.made()
        let server = try await pki.tlsServer()
        let wrong = "sha256//" + Data(repeating: 9, count: 32).base64EncodedString()
        let cases: [(TrustPolicy, Bool)] = [
            (TrustPolicy(roots: .replacing(pki.authority), certificatePins: [pki.serverCertificatePin]), true),
            (TrustPolicy(roots: .replacing(pki.authority), certificatePins: [pki.authorityCertificatePin]), true),
            (TrustPolicy(roots: .replacing(pki.authority), certificatePins: [wrong]), false),
            (
                TrustPolicy(
                    roots: .replacing(pki.authority), publicKeyPins: [wrong],
                    certificatePins: [pki.serverCertificatePin]), false
            ),
            (
                TrustPolicy(
                    roots: .replacing(pki.authority), publicKeyPins: [pki.serverKeyPin], certificatePins: [wrong]),
                false
            ),
        ]
        for (policy, accepted) in cases {
            let center = try curlCenter(pki, ["localhost": policy])
            // Twice: the second request must not take the first one's connection unchecked.
            for _ in 0..<2 {
                let outcome = await center.fetch(server)
                #expect(
                    accepted ? outcome.response?.status == 200 : outcome.error?.code == .pinning,
                    "\(policy): \(String(describing: outcome.error))")
            }
        }
    }

    /// Connections are reused under a policy without certificate pins; with them, each request has a connection of
    /// its own, checked at its handshake, and never one another request opened: the second of two requests passes as
    /// the first did, and a connection checked for one center's pins, or opened without any, never serves another
    /// center's pins (both centers share one engine, and so its connections).
    @Test func aConnectionIsNeverReusedPastCertificatePins() async throws {
        let pki = try await TestPKI.made()
        let server = try await KeepAliveTLSServer(pki)
        let engine = try CurlEngine(cookies: nil, maximumConnectionsPerHost: nil, systemRoots: pki.systemRoots.path)
        func center(_ pins: [String]) -> Center {
            testCenter { config in
                config.engine = engine
                config.trustPolicies["localhost"] = TrustPolicy(roots: .replacing(pki.authority), certificatePins: pins)
            }
        }
        let wrong = "sha256//" + Data(repeating: 9, count: 32).base64EncodedString()
        let (unpinned, pinned, mispinned) = (center([]), center([pki.serverCertificatePin]), center([wrong]))
        let plain = await server.fetchTwice(unpinned)
        #expect(plain.second.response?.string == "kept")
        #expect(plain.second.response?.metrics?.reusedConnection == true)  // the server keeps connections open
        let checked = await server.fetchTwice(pinned)
        #expect(checked.first.response?.string == "kept", "\(String(describing: checked.first.error))")
        #expect(checked.second.response?.string == "kept", "\(String(describing: checked.second.error))")
        #expect(checked.second.response?.metrics?.reusedConnection == false)
        #expect(await server.fetchTwice(mispinned).first.error?.code == .pinning)
        _ = await server.fetchTwice(unpinned)
        let after = await server.fetchTwice(mispinned)
        #expect(after.first.error?.code == .pinning)
        #expect(after.second.error?.code == .pinning)
    }

    /// A certificate pin is checked before the request goes: a server that echoes what it receives gets nothing
    /// from a request its chain fails, and everything from one it passes.
    @Test func nothingIsSentToAServerThatFailsItsCertificatePins() async throws {
        let pki = try await TestPKI.made()
        let scratch = Scratch()
        let received = scratch.file("received.txt")
        #expect(FileManager.default.createFile(atPath: received.path, contents: nil))
        let output = try FileHandle(forWritingTo: received)
        defer { try? output.close() }
        let server = try await pki.tlsServer(www: false, output: output)
        let wrong = "sha256//" + Data(repeating: 9, count: 32).base64EncodedString()
        for (pin, secret) in [(wrong, "never-Sent-1234"), (pki.serverCertificatePin, "sent-Once-5678")] {
            let center = try curlCenter(
                pki, ["localhost": TrustPolicy(roots: .replacing(pki.authority), certificatePins: [pin])])
            let outcome = await center.sendRecording { request in
                request.url = "https://localhost:\(server.port)/"
                request.headers["X-Secret"] = secret
                // The echoing server never answers: the passing request ends at this limit.
                request.totalTimeout = .seconds(2)
            }
            #expect(outcome.error?.code == (pin == wrong ? .pinning : .timedOut))
        }
        let text = String(decoding: try Data(contentsOf: received), as: UTF8.self)
        #expect(text.contains("sent-Once-5678"))
        #expect(!text.contains("never-Sent-1234"))
    }

    /// A server that requires a client certificate refuses a request without one with `.clientCertificate`, in
    /// TLS 1.3 (the alert comes after the handshake) and 1.2 with a certificate it refuses. URLSession on Linux cannot
    /// be made to trust the test's authority, so its half is the same words (libcurl's, which it passes on in its
    /// `URLError`) read by the same rule.
    @Test func aServerThatRequiresAClientCertificateRefusesARequestWithoutOne() async throws {
        let pki = try await TestPKI.made()
        let server = try await pki.tlsServer(clientAuthorities: pki.authority)
        let center = try curlCenter(pki, ["localhost": TrustPolicy(roots: .replacing(pki.authority))])
        let outcome = await center.fetch(server)
        #expect(outcome.error?.code == .clientCertificate, "\(String(describing: outcome.error))")
        #expect(outcome.error?.message.contains("certificate required") == true)
        for words in [
            "OpenSSL SSL_read: error:0A00045C:SSL routines::tlsv13 alert certificate required, errno 0",
            "error:0A000418:SSL routines::tlsv1 alert unknown ca",
        ] {
            let error = URLError(.unknown, userInfo: [NSLocalizedDescriptionKey: words])
            #expect(HTTPError.from(error).code == .clientCertificate)
        }
        let handshake = URLError(
            .secureConnectionFailed,
            userInfo: [NSLocalizedDescriptionKey: "error:0A000410:SSL routines::sslv3 alert handshake failure"])
        #expect(HTTPError.from(handshake).code == .cannotConnect)
    }

    @Test func aClientIdentityIsPresentedFromPEMOrPKCS12() async throws {
        let pki = try await TestPKI.made()
        let server = try await pki.tlsServer(clientAuthorities: pki.authority)
        let identities: [(TrustPolicy.ClientIdentity, HTTPError.Code?)] = [
            (.pem(certificate: pki.client.certificate, key: pki.client.key), nil),
            (.pkcs12(pki.clientPKCS12, password: TestPKI.pkcs12Password), nil),
            (.pkcs12(pki.clientPKCS12, password: "wrong-Password-99"), .clientCertificate),
            // A certificate from another authority: the server refuses it.
            (.pem(certificate: pki.otherServer.certificate, key: pki.otherServer.key), .clientCertificate),
        ]
        for (identity, failure) in identities {
            let center = try curlCenter(
                pki, ["localhost": TrustPolicy(roots: .replacing(pki.authority), clientIdentity: identity)])
            let outcome = await center.fetch(server)
            if let failure {
                #expect(outcome.error?.code == failure, "\(identity): \(String(describing: outcome.error))")
                let words = "\(String(describing: outcome.error)) \(outcome.error?.message ?? "")"
                #expect(!words.contains("Password"))
            } else {
                #expect(outcome.response?.status == 200, "\(identity): \(String(describing: outcome.error))")
            }
        }
    }

    @Test func evaluationCanBeTurnedOffForANamedHostOnly() async throws {
        let pki = try await TestPKI.made()
        let server = try await TLSServer()
        await server.ready()
        let named = try curlCenter(pki, ["localhost": .evaluationDisabled])
        #expect(await named.fetch(server).response?.status == 200)
        // Pins still hold with evaluation off.
        var pinned = TrustPolicy.evaluationDisabled
        pinned.publicKeyPins = ["sha256//" + Data(repeating: 7, count: 32).base64EncodedString()]
        #expect(try await curlCenter(pki, ["localhost": pinned]).fetch(server).error?.code == .pinning)
        for pattern in ["*", "*.localhost"] {
            let outcome = try await curlCenter(pki, [pattern: .evaluationDisabled]).fetch(server)
            #expect(outcome.error?.code == .unsupported)
            #expect(outcome.error?.message.contains("named in full") == true, "\(pattern)")
        }
    }

    /// The policy is the host's at each hop: a plain `http` request redirected to the TLS server takes the TLS
    /// server's policy there.
    @Test func aRedirectTakesThePolicyOfTheHostItLeadsTo() async throws {
        let pki = try await TestPKI.made()
        let server = try await pki.tlsServer()
        for policies in [[:], ["localhost": TrustPolicy(roots: .replacing(pki.authority))]] {
            let center = try curlCenter(pki, policies)
            let outcome = await center.sendRecording { request in
                request.url = LoopbackServer.shared.baseURL + "/redirect-to?url=https://localhost:\(server.port)/"
                request.responseSerializer = .string
            }
            if policies.isEmpty {
                #expect(outcome.error?.code == .serverTrust)
            } else {
                #expect(outcome.response?.status == 200, "\(String(describing: outcome.error))")
            }
        }
    }

    /// URLSession on Linux cannot evaluate trust: a request to a host with a policy fails naming it, a redirect to
    /// one too, and a host without one is not affected.
    @Test func urlSessionOnLinuxRefusesWhatItCannotApply() async throws {
        #if canImport(FoundationNetworking)
        let pki = try await TestPKI.made()
        let server = try await pki.tlsServer()
        let center = try loopbackCenter("URLSessionEngine") { config in
            config.trustPolicies["localhost"] = TrustPolicy(
                roots: .replacing(pki.authority), publicKeyPins: [pki.serverKeyPin])
        }
        let direct = await center.fetch(server)
        #expect(direct.error?.code == .unsupported)
        #expect(direct.error?.message.contains("trust policy for localhost") == true)
        #expect(direct.error?.message.contains("1 public-key pin(s)") == true)
        let redirected = await center.sendRecording { request in
            request.url = LoopbackServer.shared.baseURL + "/redirect-to?url=https://localhost:\(server.port)/"
        }
        #expect(redirected.error?.code == .unsupported, "\(String(describing: redirected.error))")
        #expect(await center.sendRecording { $0.url = LoopbackServer.shared.baseURL + "/get" }.response?.status == 200)
        #endif
    }

    /// An engine that says nothing of trust policies gets no request to a host with one.
    @Test func anEngineThatDoesNotApplyPoliciesIsRefused() async {
        let stub = StubEngine()
        /// An engine of an app's own, wrapping the stub, that has not said it applies trust policies.
        struct Wrapping: Engine {
            let base: StubEngine
            func perform(
                _ request: EngineRequest, progress: @escaping @Sendable (TransferProgress) -> Void
            ) async throws -> EngineResponse {
                try await base.perform(request, progress: progress)
            }
        }
        let center = testCenter { config in
            config.engine = Wrapping(base: stub)
            config.trustPolicies["api.example.com"] = TrustPolicy(publicKeyPins: [
                "sha256//" + Data(repeating: 7, count: 32).base64EncodedString()
            ])
        }
        let pinned = await center.sendRecording { $0.url = "https://api.example.com/users" }
        #expect(pinned.error?.code == .unsupported)
        #expect(pinned.error?.message.contains("honoursTrustPolicy") == true)
        #expect(stub.statistics.calls == 0)
        // A host without a policy: the request goes (to the stub's fallback, a 404).
        let other = await center.sendRecording { $0.url = "https://other.example.com/users" }
        #expect(other.error?.response?.status == 404)
        #expect(stub.statistics.calls == 1)
    }
}

@Suite struct TrustTableTests {
    static let pin = "sha256//" + Data(repeating: 7, count: 32).base64EncodedString()

    @Test func aHostTakesItsExactEntryThenTheLongestPatternThenTheDefault() throws {
        let valid = try #require(
            TrustTable.make([
                "*": TrustPolicy(publicKeyPins: [Self.pin]),
                "*.example.com": TrustPolicy(certificatePins: [Self.pin]),
                "*.eu.example.com": TrustPolicy(roots: .adding(URL(fileURLWithPath: "/eu.pem"))),
                "API.example.com.": TrustPolicy(roots: .replacing(URL(fileURLWithPath: "/api.pem"))),
                "[::1]": TrustPolicy(roots: .replacing(URL(fileURLWithPath: "/v6.pem"))),
                "open.example.com": .system,
            ]))
        #expect(valid.failure == nil)
        #expect(valid.policy(forHost: "api.example.com")?.roots == .replacing(URL(fileURLWithPath: "/api.pem")))
        #expect(valid.policy(forHost: "Api.Example.Com.")?.roots == .replacing(URL(fileURLWithPath: "/api.pem")))
        #expect(valid.policy(forHost: "cdn.eu.example.com")?.roots == .adding(URL(fileURLWithPath: "/eu.pem")))
        #expect(valid.policy(forHost: "www.example.com")?.certificatePins == [Self.pin])
        #expect(valid.policy(forHost: "example.com")?.publicKeyPins == [Self.pin])  // "*.": names under it only
        #expect(valid.policy(forHost: "::1")?.roots == .replacing(URL(fileURLWithPath: "/v6.pem")))
        #expect(valid.policy(forHost: "[::1]")?.roots == .replacing(URL(fileURLWithPath: "/v6.pem")))
        #expect(valid.policy(forHost: "open.example.com") == nil)  // its own entry: the system's trust
        #expect(valid.policy(forHost: "elsewhere.org")?.publicKeyPins == [Self.pin])
    }

    @Test func aTableOfSystemTrustIsNone() {
        #expect(TrustTable.make([:]) == nil)
        #expect(TrustTable.make(["*": .system, "api.example.com": TrustPolicy()]) == nil)
    }

    @Test(arguments: [
        "https://api.example.com", "api.example.com:443", "api.example.com/v1", "user@api.example.com", "", "*.",
        "api.*.com", "**.example.com", "api .example.com", "[::1]:8443",
    ])
    func aPatternThatCanNeverApplyFailsTheCenter(pattern: String) {
        let failure = TrustTable.make([pattern: TrustPolicy(publicKeyPins: [Self.pin])])?.failure
        #expect(failure?.code == .unsupported)
        #expect(failure?.message.contains("can never apply") == true)
    }

    @Test(arguments: ["sha256//c2hvcnQ=", String(pin.dropFirst(8)), "sha1//" + Data(count: 20).base64EncodedString()])
    func aMalformedPinFailsTheCenter(pin: String) {
        for policy in [TrustPolicy(publicKeyPins: [pin]), TrustPolicy(certificatePins: [pin])] {
            #expect(TrustTable.make(["api.example.com": policy])?.failure?.code == .unsupported)
        }
    }

    @Test func aMisconfiguredTableFailsEveryRequestBeforeItIsSent() async {
        let stub = StubEngine()
        let center = testCenter { config in
            config.engine = stub
            config.trustPolicies["api.example.com:8443"] = TrustPolicy(publicKeyPins: [Self.pin])
        }
        let outcome = await center.sendRecording { $0.url = "https://other.example.com/" }
        #expect(outcome.error?.code == .unsupported)
        #expect(outcome.error?.message.contains("api.example.com:8443") == true)
        #expect(stub.statistics.calls == 0)
    }

    /// A policy's description names what it asks for, and never a client identity's password.
    @Test func theDescriptionHidesThePassword() {
        let policy = TrustPolicy(
            publicKeyPins: [Self.pin], clientIdentity: .pkcs12(URL(fileURLWithPath: "/c.p12"), password: "hunter-22"))
        #expect(policy.description == "1 public-key pin(s), client identity PKCS#12 /c.p12")
        #expect(TrustPolicy.system.description == "system trust")
        var config = Center.Configuration()
        config.trustPolicies["a.example.com"] = policy
        #expect(!String(describing: config).contains("hunter-22"))
        #expect(!String(reflecting: policy).contains("hunter-22"))
        var dumped = ""
        dump(config, to: &dumped)
        dump(policy, to: &dumped)
        #expect(dumped.contains("a.example.com: 1 public-key pin(s), client identity PKCS#12 /c.p12"))
        #expect(!dumped.contains("hunter-22"))
    }
}

@Suite(.enabled(if: TLSServer.isAvailable, "needs openssl"))
struct DERCertificateTests {
    /// The public key read from a certificate hashes to the pin openssl makes of it, and PEM text gives each of its
    /// certificates: what the pins of URLSessionEngine on Apple platforms (and CurlEngine's certificate pins) use.
    @Test func theKeyOfACertificateIsTheOneOpenSSLPins() async throws {
        let pki = try await TestPKI.made()
        let pem =
            try String(contentsOf: pki.server.certificate, encoding: .utf8)
            + (try String(contentsOf: pki.authority, encoding: .utf8))
        let chain = DERCertificate.fromPEM(pem)
        #expect(chain.count == 2)
        let key = try #require(DERCertificate.publicKeyInfo(of: chain[0]))
        #expect("sha256//" + Data(SHA256Hasher.digest(key)).base64EncodedString() == pki.serverKeyPin)
        #expect("sha256//" + Data(SHA256Hasher.digest(chain[1])).base64EncodedString() == pki.authorityCertificatePin)
        // An RSA certificate too (the run's self-signed one).
        let rsaChain = DERCertificate.fromPEM(try String(contentsOf: pki.selfSigned.certificate, encoding: .utf8))
        let rsaKey = try #require(rsaChain.first.flatMap(DERCertificate.publicKeyInfo(of:)))
        #expect("sha256//" + Data(SHA256Hasher.digest(rsaKey)).base64EncodedString() == pki.selfSignedKeyPin)

        let policy = TrustPolicy(publicKeyPins: [pki.serverKeyPin], certificatePins: [pki.authorityCertificatePin])
        #expect(policy.pinsMatch(chain: chain))
        #expect(!policy.pinsMatch(chain: [chain[0]]))  // the pinned authority is not in it
        #expect(!policy.pinsMatch(chain: [chain[1], chain[0]]))  // the first is not the server's key
        #expect(!policy.pinsMatch(chain: []))
        #expect(DERCertificate.publicKeyInfo(of: Data([0x30, 0x82, 0xFF])) == nil)
        #expect(DERCertificate.publicKeyInfo(of: Data(chain[0].prefix(40))) == nil)
    }
}
