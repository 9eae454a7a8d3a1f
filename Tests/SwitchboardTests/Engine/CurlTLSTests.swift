import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Testing
@testable import Switchboard
import SwitchboardTestSupport

/// A TLS server on loopback (`openssl s_server`) with a certificate made for the test run (see `TestPKI`).
final class TLSServer: @unchecked Sendable {
    // Safety: every property is set in `init` and never changed; the server stops when `process` is released.
    let scratch = Scratch()
    let port: Int
    private let process: ChildProcess

    static var isAvailable: Bool {
        FileManager.default.isExecutableFile(atPath: "/usr/bin/openssl") && CurlEngine.libraryVersion != nil
    }

    /// A server with the run's self-signed certificate (see `TestPKI`).
    convenience init() async throws {
        let pki = try await TestPKI.made()
        try self.init(certificate: pki.selfSigned.certificate, key: pki.selfSigned.key)
    }

    /// A server presenting `certificate` (and the certificates in `chain` after it), that requires a client
    /// certificate issued by `clientAuthorities` when given. With `www` it answers each request with a page about the
    /// connection; without, it writes what it receives to `output`.
    init(
        certificate: URL, key: URL, chain: URL? = nil, clientAuthorities: URL? = nil,
        www: Bool = true, output: FileHandle = .nullDevice
    ) throws {
        port = try FreePort.find()
        var arguments = ["s_server", "-quiet", "-accept", "\(port)", "-cert", certificate.path, "-key", key.path]
        if let chain { arguments += ["-cert_chain", chain.path] }
        if let clientAuthorities {
            arguments += ["-CAfile", clientAuthorities.path, "-Verify", "1", "-verify_return_error"]
        }
        if www {
            arguments.append("-www")
            process = try ChildProcess("/usr/bin/openssl", arguments, output: output)
        } else {
            // Without `-www` the server sends what it reads from its standard input, and stops at its end: keep it
            // open.
            process = try ChildProcess(
                "/bin/sh", ["-c", "sleep 600 | /usr/bin/openssl " + arguments.joined(separator: " ")], output: output)
        }
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
