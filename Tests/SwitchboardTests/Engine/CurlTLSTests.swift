import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Testing
@testable import Switchboard
import SwitchboardTestSupport

/// A self-signed certificate for `localhost` and `127.0.0.1`, with its key and public-key pin.
struct SelfSignedCertificate: Sendable {
    let certificate: URL
    let key: URL
    let pin: String

    /// The run's certificate (see `shared`), made or waited for on a thread of its own (`BlockingWork`).
    static func made() async throws -> SelfSignedCertificate {
        try await BlockingWork.run { shared }.get()
    }

    /// One certificate for the whole run, made on first use: making an RSA key takes `openssl` a good part of a
    /// second, and whoever touches this first waits for it (and anyone else meanwhile), so it is only touched
    /// through `made()`, off the shared pool. Removed when the test process exits.
    private static let shared: Result<SelfSignedCertificate, any Error> = Result {
        try FileManager.default.createDirectory(at: sharedDirectory, withIntermediateDirectories: true)
        atexit { try? FileManager.default.removeItem(at: SelfSignedCertificate.sharedDirectory) }
        return try SelfSignedCertificate(in: sharedDirectory)
    }

    private static var sharedDirectory: URL {
        FileManager.default.temporaryDirectory.appendingPathComponent("switchboard-test-certificate-\(getpid())")
    }

    private init(in directory: URL) throws {
        certificate = directory.appendingPathComponent("cert.pem")
        key = directory.appendingPathComponent("key.pem")
        try TLSServer.run(
            "openssl req -x509 -newkey rsa:2048 -nodes -keyout \(key.path) -out \(certificate.path) "
                + "-days 1 -subj /CN=localhost -addext subjectAltName=DNS:localhost,IP:127.0.0.1")
        pin =
            "sha256//"
            + (try TLSServer.run(
                "openssl x509 -in \(certificate.path) -pubkey -noout "
                    + "| openssl pkey -pubin -outform der | openssl dgst -sha256 -binary | base64"))
            .trimmingCharacters(in: .whitespacesAndNewlines)
    }
}

/// A TLS server on loopback (`openssl s_server -www`) with a self-signed certificate made for the test.
final class TLSServer: @unchecked Sendable {
    // Safety: every property is set in `init` and never changed; the server stops when `process` is released.
    let scratch = Scratch()
    let port: Int
    let certificate: URL
    let pin: String
    private let process: ChildProcess

    static var isAvailable: Bool {
        FileManager.default.isExecutableFile(atPath: "/usr/bin/openssl") && CurlEngine.libraryVersion != nil
    }

    init() async throws {
        let made = try await SelfSignedCertificate.made()
        certificate = made.certificate
        pin = made.pin
        port = try FreePort.find()
        process = try ChildProcess(
            "/usr/bin/openssl",
            ["s_server", "-quiet", "-accept", "\(port)", "-cert", certificate.path, "-key", made.key.path, "-www"])
    }

    /// Waits until the server accepts connections.
    func ready() async {
        await TLSServer.waitForListener(on: port)
    }

    /// Waits until something accepts connections on the port (a plain `connect`, which on loopback answers at once,
    /// so that no thread of the shared pool blocks while the server starts).
    static func waitForListener(on port: Int) async {
        for _ in 0..<400 {
            if accepts(port) { return }
            try? await Task.sleep(for: .milliseconds(25))
        }
    }

    private static func accepts(_ port: Int) -> Bool {
        #if canImport(Glibc)
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        #else
        let fd = socket(AF_INET, SOCK_STREAM, 0)
        #endif
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
            }
        }
    }

    @discardableResult
    static func run(_ command: String) throws -> String {
        String(decoding: try ProcessLaunch.output(of: "/bin/sh", ["-c", command]).output, as: UTF8.self)
    }
}

enum FreePort {
    /// The ports handed out so far in this process.
    private static let handedOut = Locked(Set<Int>())

    /// A port nothing listens on now, and never handed out before in this process: one the system picks for a socket
    /// bound to port 0, then closed. The system may pick a port again once it is closed, and two servers started
    /// side by side then both tried to bind it (a Python server takes seconds to start under the suite's load): the
    /// one that lost exited, and its test ran against the other test's server until that one stopped.
    static func find() throws -> Int {
        for _ in 0..<64 {
            let port = try pick()
            let isNew = handedOut.withLock { $0.insert(port).inserted }
            if isNew { return port }
        }
        throw URLError(.cannotConnectToHost)
    }

    private static func pick() throws -> Int {
        #if canImport(Glibc)
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        #else
        let fd = socket(AF_INET, SOCK_STREAM, 0)
        #endif
        guard fd >= 0 else { throw URLError(.unknown) }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = 0
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0
            }
        }
        guard bound else { throw URLError(.unknown) }
        return Int(UInt16(bigEndian: address.sin_port))
    }
}

@Suite(.enabled(if: TLSServer.isAvailable, "needs openssl and libcurl"), .serialized)
struct CurlTLSTests {
    func send(_ server: TLSServer, tls: CurlEngine.TLS) async -> Outcome {
        let engine = try! CurlEngine(tls: tls)
        let center = testCenter { $0.engine = engine }
        return await center.sendRecording { request in
            request.url = "https://localhost:\(server.port)/"
            request.responseSerializer = .string
            request.totalTimeout = .seconds(20)
        }
    }

    @Test func aSelfSignedServerIsRefusedByDefault() async throws {
        let server = try await TLSServer()
        await server.ready()
        let outcome = await send(server, tls: .init())
        #expect(outcome.error?.code == .serverTrust)
    }

    /// The same certificate fault gives the same code on both engines: URLSessionEngine failed a self-signed server
    /// with `.transport` (URLError -1, libcurl's words alone), where CurlEngine said `.serverTrust`. A certificate
    /// error from URLSession on Apple platforms (`serverCertificateUntrusted`, `...HasBadDate`, `...HasUnknownRoot`,
    /// `...NotYetValid`) is `.serverTrust` too.
    @Test func aSelfSignedServerIsRefusedWithTheSameCodeOnBothEngines() async throws {
        let server = try await TLSServer()
        await server.ready()
        for engineName in bothEngines {
            let center = try loopbackCenter(engineName)
            let outcome = await center.sendRecording { request in
                request.url = "https://localhost:\(server.port)/"
                request.responseSerializer = .string
                request.totalTimeout = .seconds(20)
            }
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

    @Test func aPrivateCAIsTrusted() async throws {
        let server = try await TLSServer()
        await server.ready()
        let outcome = await send(server, tls: .init(caCertificates: server.certificate))
        #expect(outcome.response?.status == 200)
        #expect(outcome.response?.string?.contains("s_server") == true)
        // The handshake is one of the phases the engine measured, between the connection and the first byte.
        let metrics = try #require(outcome.response?.metrics)
        let handshake = try #require(metrics.secureConnection)
        #expect(handshake > .zero)
        #expect(
            (metrics.nameLookup ?? .zero) + (metrics.connect ?? .zero) + handshake <= metrics.timeToFirstByte ?? .zero)
    }

    @Test func theRightPinIsAccepted() async throws {
        let server = try await TLSServer()
        await server.ready()
        let outcome = await send(
            server,
            tls: .init(
                caCertificates: server.certificate, pinnedPublicKeys: ["localhost": [server.pin]]))
        #expect(outcome.response?.status == 200)
    }

    @Test func aWrongPinIsRefusedWithThePinningError() async throws {
        let server = try await TLSServer()
        await server.ready()
        let wrong = "sha256//" + Data(repeating: 7, count: 32).base64EncodedString()
        let outcome = await send(
            server,
            tls: .init(
                caCertificates: server.certificate, pinnedPublicKeys: ["LOCALHOST": [wrong]]))
        #expect(outcome.error?.code == .pinning)
        #expect(outcome.error?.message.contains("localhost") == true)
    }

    /// A pin's host compares without case and without a trailing dot: it used to be ignored for `localhost.`.
    @Test(arguments: ["localhost.", "LocalHost.", " localhost"])
    func aPinIsAppliedWhateverTheCaseOrTrailingDotOfItsHost(host: String) async throws {
        let server = try await TLSServer()
        await server.ready()
        let wrong = "sha256//" + Data(repeating: 7, count: 32).base64EncodedString()
        let outcome = await send(
            server, tls: .init(caCertificates: server.certificate, pinnedPublicKeys: [host: [wrong]]))
        #expect(outcome.error?.code == .pinning)
    }
}

@Suite struct CurlPinConfigurationTests {
    static let key = "sha256//" + Data(repeating: 7, count: 32).base64EncodedString()

    @Test(arguments: [
        ["https://api.example.com": [key]], ["api.example.com:443": [key]], ["api.example.com/v1": [key]],
        ["*.example.com": [key]], ["": [key]], ["api.example.com": []], ["api.example.com": ["sha256//c2hvcnQ="]],
        ["api.example.com": [String(key.dropFirst(8))]],
    ])
    func aPinThatCanNeverApplyIsAConfigurationError(pins: [String: [String]]) {
        do {
            _ = try CurlEngine(tls: .init(pinnedPublicKeys: pins))
            Issue.record("accepted \(pins)")
        } catch {
            #expect(error.code == .unsupported)
            #expect(error.message.contains("can never apply"))
        }
    }

    @Test func hostsThatNameTheSameHostAreMerged() throws {
        let other = "sha256//" + Data(repeating: 8, count: 32).base64EncodedString()
        let tls = try CurlEngine.TLS(pinnedPublicKeys: [
            "API.example.com.": [Self.key], "api.example.com": [other], "::1": [other],
        ])
        .validated()
        #expect(Set(tls.pinnedPublicKeys["api.example.com"] ?? []) == [Self.key, other])
        #expect(tls.pinnedPublicKeys["::1"] == [other])
        #expect(tls.pinnedPublicKeys.count == 2)
    }
}

@Suite struct CurlEngineTests {
    @Test func itLoadsTheSystemLibrary() throws {
        let version = try #require(CurlEngine.libraryVersion)
        #expect(version.split(separator: ".").count >= 2)
        #expect(CurlEngine.isAvailable)
        #expect(CurlEngine.unavailableReason == nil)
        _ = try CurlEngine()
    }

    /// What a center gets when `SWITCHBOARD_ENGINE=curl` and libcurl cannot run: a clear failure, not URLSession.
    @Test func anUnavailableEngineFailsEveryRequestSayingWhy() async {
        let center = testCenter { $0.engine = UnavailableEngine(reason: "CurlEngine: libcurl.so.4 not found") }
        let outcome = await center.sendRecording { $0.url = "https://api.example.com/" }
        #expect(outcome.error?.code == .unsupported)
        #expect(outcome.error?.message.contains("libcurl.so.4 not found") == true)
    }

    @Test func cancellingTheTaskRemovesTheTransferAtOnce() async throws {
        let center = testCenter { config in
            config.engine = try! CurlEngine()
            config.server = Server.loopback.baseURL + "/"
        }
        let task = Task {
            try await center.send { $0.answerOverAMinute() }
        }
        try await Task.sleep(for: .milliseconds(200))
        task.cancel()
        let result = await task.result
        guard case .failure(let error as HTTPError) = result else { Issue.record("expected an HTTPError"); return }
        #expect(error.code == .cancelled)
    }

    @Test func aFileDownloadIsWrittenAsItArrives() async throws {
        let scratch = Scratch()
        let center = testCenter { config in
            config.engine = try! CurlEngine()
            config.server = Server.loopback.baseURL + "/"
        }
        let response = try await center.send { request in
            request.kind = .download
            request.api = "files/3000000"
            request.destination = .file(scratch.file("curl.bin"))
        }
        #expect(response.fileURL != nil)
        #expect(
            await Scratch.sha256(of: scratch.file("curl.bin")) == GeneratedContent(seed: 1).digest(length: 3_000_000))
    }
}
