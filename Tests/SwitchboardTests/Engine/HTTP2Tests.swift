import Foundation
import Testing
@testable import Switchboard
import SwitchboardTestSupport

/// An HTTP/2 server over TLS on loopback: Hypercorn (from PyPI; `.ci/run` installs it and sets
/// `SWITCHBOARD_HYPERCORN`) running a small app that reports, for each request, the HTTP version, the client's port
/// (one port per connection) and the length and SHA-256 of the body it received.
final class HTTP2Server: @unchecked Sendable {
    // Safety: every property is set in `init` and never changed; the server stops when `process` is released.
    static let hypercorn: String? = ProcessInfo.processInfo.environment["SWITCHBOARD_HYPERCORN"]
        .flatMap { FileManager.default.isExecutableFile(atPath: $0) ? $0 : nil }

    static var isAvailable: Bool { hypercorn != nil && TLSServer.isAvailable }

    let scratch = Scratch()
    let port: Int
    let certificate: URL
    private let process: ChildProcess

    /// What each response carries: `GET /bytes/N` answers N bytes of `0123456789abcdef` repeated;
    /// `/redirect?to=URL&status=N` redirects there (unescaped); `/set-cookie` sets the cookie `session=h2` (with a
    /// `set-cookie` field: HTTP/2 sends every name in lower case); anything else answers JSON about the request (with
    /// the `Cookie` field it carried).
    static let app = """
        import hashlib, json

        async def app(scope, receive, send):
            if scope["type"] == "lifespan":
                while True:
                    message = await receive()
                    if message["type"] == "lifespan.startup":
                        await send({"type": "lifespan.startup.complete"})
                    elif message["type"] == "lifespan.shutdown":
                        await send({"type": "lifespan.shutdown.complete"})
                        return
            hasher, length = hashlib.sha256(), 0
            while True:
                message = await receive()
                body = message.get("body", b"")
                hasher.update(body)
                length += len(body)
                if not message.get("more_body"):
                    break
            path = scope["path"]
            if path == "/redirect":
                query = dict(pair.split("=", 1) for pair in scope["query_string"].decode().split("&") if "=" in pair)
                await send({"type": "http.response.start", "status": int(query.get("status", "302")),
                            "headers": [(b"location", query["to"].encode()), (b"content-length", b"0")]})
                await send({"type": "http.response.body", "body": b""})
                return
            if path == "/set-cookie":
                await send({"type": "http.response.start", "status": 200,
                            "headers": [(b"set-cookie", b"session=h2; Path=/"), (b"content-length", b"0")]})
                await send({"type": "http.response.body", "body": b""})
                return
            if path.startswith("/bytes/"):
                count = int(path.split("/")[2])
                payload = (b"0123456789abcdef" * (count // 16 + 1))[:count]
                kind = b"application/octet-stream"
            else:
                headers = {name.decode(): value.decode() for name, value in scope["headers"]}
                payload = json.dumps({
                    "http_version": scope["http_version"], "method": scope["method"], "path": path,
                    "client_port": scope["client"][1], "length": length, "sha256": hasher.hexdigest(),
                    "content_length": headers.get("content-length"), "cookie": headers.get("cookie"),
                }).encode()
                kind = b"application/json"
            await send({"type": "http.response.start", "status": 200,
                        "headers": [(b"content-type", kind), (b"content-length", str(len(payload)).encode())]})
            await send({"type": "http.response.body", "body": payload})
        """

    init() async throws {
        let made = try await TestPKI.made().selfSigned
        certificate = made.certificate
        try Data(Self.app.utf8).write(to: scratch.file("h2app.py"))
        port = try FreePort.find()
        var environment = ProcessInfo.processInfo.environment
        environment["PYTHONPATH"] = scratch.url.path
        process = try ChildProcess(
            Self.hypercorn ?? "/nonexistent",
            [
                "--certfile", made.certificate.path, "--keyfile", made.key.path, "--bind", "127.0.0.1:\(port)",
                // A long keep-alive: Hypercorn closes a connection idle for 5 s, which a slow (sanitizer) build reaches.
                "--keep-alive", "120", "--log-level", "warning",
                // One process is enough; worker processes would be stopped with it (they share its process group).
                "--workers", "0", "h2app:app",
            ],
            environment: environment, directory: scratch.url)
    }

    var baseURL: String { "https://localhost:\(port)/" }

    func center() async throws -> Center {
        await TLSServer.waitForListener(on: port)
        // Something listens there; if it is not this server (which then could not bind the port), say so here.
        guard process.isRunning else { throw URLError(.cannotConnectToHost) }
        let engine = try CurlEngine()
        return testCenter { config in
            config.engine = engine
            config.trustPolicies["localhost"] = TrustPolicy(roots: .replacing(certificate))
            config.server = baseURL
            config.totalTimeout = .seconds(60)
        }
    }
}

@Suite(.enabled(if: HTTP2Server.isAvailable, "needs Hypercorn (SWITCHBOARD_HYPERCORN), openssl and libcurl"))
struct HTTP2Tests {
    @Test(arguments: [false, true])
    func anHTTPSToHTTPRedirectIsRefusedUnlessTheCenterAllowsIt(allowed: Bool) async throws {
        let server = try await HTTP2Server()
        let center = try await server.center()
        center.setup { $0.allowsInsecureRedirects = allowed }
        let target = LoopbackServer.shared.baseURL + "/anything"
        let outcome = await center.sendRecording { request in
            request.url = server.baseURL + "redirect?status=307&to=" + target
            request.method = .post
            request.body = .json(["password": "pw-HHH"])  // must not cross to plain http unasked
        }
        if allowed {
            #expect(outcome.response?.json?["method"]?.string == "POST")
            #expect(outcome.response?.url?.absoluteString.hasPrefix(LoopbackServer.shared.baseURL) == true)
        } else {
            #expect(outcome.error?.code == .insecureRedirect, "\(String(describing: outcome.error))")
            #expect(outcome.response == nil)
        }
    }

    /// A cookie set over HTTP/2 (`set-cookie`, in lower case) is stored and sent on; URLSessionEngine's half is in
    /// `urlSessionEngineNegotiatesHTTP2OverTLS`.
    @Test func curlEngineKeepsACookieSetOverHTTP2() async throws {
        let server = try await HTTP2Server()
        await TLSServer.waitForListener(on: server.port)
        let engine = try CurlEngine(cookies: privateCookieStorage())
        let center = testCenter { config in
            config.engine = engine
            config.trustPolicies["localhost"] = TrustPolicy(roots: .replacing(server.certificate))
            config.server = server.baseURL
        }
        _ = try await center.send { $0.api = "set-cookie" }
        let echo = try await center.send { $0.api = "hello" }
        #expect(echo.json?["http_version"]?.string == "2")
        #expect(echo.json?["cookie"]?.string == "session=h2")
    }

    @Test func curlEngineNegotiatesHTTP2OverTLS() async throws {
        let server = try await HTTP2Server()
        let response = try await server.center().send { $0.api = "hello" }
        #expect(response.json?["http_version"]?.string == "2")
        #expect(response.json?["path"]?.string == "/hello")
        // The metrics name the protocol and count the TLS handshake of the new connection.
        #expect(response.metrics?.httpVersion == "HTTP/2")
        #expect(response.metrics?.reusedConnection == false)
        #expect(response.metrics?.secureConnection.map { $0 > .zero } == true)
    }

    /// From a cold start: the requests wait for the first connection to learn it multiplexes (`CURLOPT_PIPEWAIT`)
    /// rather than each opening its own.
    @Test func parallelRequestsShareOneMultiplexedConnection() async throws {
        let server = try await HTTP2Server()
        let center = try await server.center()
        let ports = try await withThrowingTaskGroup(of: Int?.self) { group in
            for index in 0..<8 {
                group.addTask { try await center.send { $0.api = "parallel/\(index)" }.json?["client_port"]?.int }
            }
            return try await group.reduce(into: [Int?]()) { $0.append($1) }
        }
        #expect(ports.count == 8)
        #expect(Set(ports).count == 1, "8 parallel requests used \(Set(ports).count) connections")
        #expect(ports.allSatisfy { $0 != nil })
    }

    @Test func everyBodyKindIsSentOverHTTP2() async throws {
        let server = try await HTTP2Server()
        let center = try await server.center()
        let scratch = Scratch()
        let file = scratch.write("upload.bin", bytes: 300_000, seed: 4)
        let generated = GeneratedBody(length: 200_000)
        let data = Data(repeating: 42, count: 100_000)

        let fromData = try await center.send { request in
            request.api = "data"
            request.method = .post
            request.body = .data(data)
        }
        #expect(fromData.json?["http_version"]?.string == "2")
        #expect(fromData.json?["length"]?.int == 100_000)
        #expect(fromData.json?["sha256"]?.string == SHA256Hasher.hex(data))

        let fromFile = try await center.send { request in
            request.api = "file"
            request.method = .put
            request.body = .file(file)
        }
        #expect(fromFile.json?["length"]?.int == 300_000)
        #expect(fromFile.json?["content_length"]?.string == "300000")
        #expect(await Scratch.sha256(of: file) == fromFile.json?["sha256"]?.string)

        let fromStream = try await center.send { request in
            request.api = "stream"
            request.method = .post
            request.body = .stream { generated.open() }
        }
        #expect(fromStream.json?["http_version"]?.string == "2")
        #expect(fromStream.json?["length"]?.int == 200_000)
        #expect(await fromStream.json?["sha256"]?.string == generated.sha256())
    }

    @Test func aDownloadOverHTTP2IsWrittenWhole() async throws {
        let server = try await HTTP2Server()
        let scratch = Scratch()
        let target = scratch.file("h2.bin")
        let response = try await server.center().send { request in
            request.kind = .download
            request.api = "bytes/1048576"
            request.destination = .file(target)
        }
        #expect(response.fileURL == target)
        let expected = Data(String(repeating: "0123456789abcdef", count: 65_536).utf8)
        #expect(try Data(contentsOf: target) == expected)
    }
}
