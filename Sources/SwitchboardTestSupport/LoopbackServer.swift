import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// An HTTP/1.1 server on 127.0.0.1, in-process, for tests and benchmarks.
///
/// It listens on an ephemeral port, serves each connection on its own thread with keep-alive, reads
/// `Content-Length` and chunked request bodies, answers `Expect: 100-continue`, and routes requests to a handler
/// (`Httpbin.route` by default, httpbin-compatible). Many tests share `LoopbackServer.shared`.
public final class LoopbackServer: Sendable {
    /// The handler that answers every request.
    public typealias Handler = @Sendable (ServerRequest) -> ServerResponse

    /// The port the server listens on.
    public let port: Int
    /// Whether it listens on `::1` rather than `127.0.0.1`.
    public let ipv6: Bool
    /// `http://127.0.0.1:<port>`, or `http://[::1]:<port>`.
    public var baseURL: String { ipv6 ? "http://[::1]:\(port)" : "http://127.0.0.1:\(port)" }

    private let listener: Int32
    private let handler: Handler
    private let connections = ServerLock<Set<Int32>>([])
    private let accepted = ServerLock(0)
    private let dropped = ServerLock(0)
    private let stopped = ServerLock(false)

    /// A server with the httpbin routes, started on first use and shared by every test.
    public static let shared: LoopbackServer = {
        do {
            return try LoopbackServer()
        } catch {
            fatalError("the loopback test server could not start: \(error)")
        }
    }()

    /// Starts a server.
    ///
    /// - Parameters:
    ///   - ipv6: listen on the IPv6 loopback address, `::1`, instead of `127.0.0.1`.
    ///   - handler: answers each request; the httpbin routes by default.
    public init(ipv6: Bool = false, handler: @escaping Handler = Httpbin.route) throws {
        self.handler = handler
        self.ipv6 = ipv6
        Socket.ignoreSigpipe()
        listener = try Socket.listen(ipv6: ipv6)
        port = try Socket.port(of: listener)
        let thread = Thread { [self] in acceptLoop() }
        thread.name = "LoopbackServer.accept"
        thread.start()
    }

    /// How many connections the server has accepted so far (keep-alive reuse shows as fewer connections than requests).
    public var acceptedConnections: Int {
        accepted.withLock { $0 }
    }

    /// How many connections are open now: accepted and not yet closed by either side.
    public var openConnections: Int {
        connections.withLock { $0.count }
    }

    /// How many connections the server dropped instead of answering (`ServerResponse.dropWithoutAnswer`).
    public var droppedConnections: Int {
        dropped.withLock { $0 }
    }

    /// Stops listening and closes every open connection.
    public func stop() {
        let wasStopped = stopped.withLock { stopped -> Bool in
            defer { stopped = true }
            return stopped
        }
        guard !wasStopped else { return }
        Socket.shutdown(listener)
        for fd in connections.withLock({ $0 }) { Socket.shutdown(fd) }
    }

    deinit {
        stop()
    }

    private func acceptLoop() {
        while true {
            let fd = accept(listener, nil, nil)
            if fd < 0 {
                if stopped.withLock({ $0 }) { break }
                if errno == EINTR || errno == ECONNABORTED { continue }
                if errno == EMFILE || errno == ENFILE { usleep(10_000); continue }
                break
            }
            Socket.configure(fd)
            accepted.withLock { $0 += 1 }
            connections.withLock { _ = $0.insert(fd) }
            let thread = Thread { [self] in
                serve(fd)
                connections.withLock { _ = $0.remove(fd) }
                close(fd)
            }
            thread.stackSize = 512 * 1024
            thread.start()
        }
        close(listener)
    }

    private func serve(_ fd: Int32) {
        let connection = ServerConnection(fd: fd)
        var index = 0
        while !stopped.withLock({ $0 }) {
            guard var request = connection.readRequest() else { return }
            request.indexOnConnection = index
            index += 1
            let response = handler(request)
            if response.dropWithoutAnswer {
                dropped.withLock { $0 += 1 }
                return
            }
            if case .beforeAnswer = response.reset {
                Socket.resetOnClose(fd)
                return
            }
            let keepAlive = Self.keepsAlive(request) && !response.close
            guard connection.write(response, to: request, keepAlive: keepAlive), keepAlive else { return }
        }
    }

    private static func keepsAlive(_ request: ServerRequest) -> Bool {
        let connection = request.header("Connection")?.lowercased() ?? ""
        if request.version == "HTTP/1.0" { return connection.contains("keep-alive") }
        return !connection.contains("close")
    }
}

/// A tiny lock for the server's own state (the test-support target does not share the library's internals).
final class ServerLock<Value>: @unchecked Sendable {
    // Safety: `value` is only accessed inside `withLock`, which holds `lock`.
    private let lock = NSLock()
    private var value: Value

    init(_ value: Value) {
        self.value = value
    }

    func withLock<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
    }
}

/// The few socket calls the server needs, the same on Linux and Darwin.
enum Socket {
    struct Failure: Error, CustomStringConvertible {
        let call: String
        let code: Int32
        var description: String { "\(call) failed: \(String(cString: strerror(code)))" }
    }

    static func ignoreSigpipe() {
        signal(SIGPIPE, SIG_IGN)
    }

    static func listen(ipv6: Bool = false) throws -> Int32 {
        let family = ipv6 ? AF_INET6 : AF_INET
        #if canImport(Glibc)
        let fd = socket(family, Int32(SOCK_STREAM.rawValue), 0)
        #else
        let fd = socket(family, SOCK_STREAM, 0)
        #endif
        guard fd >= 0 else { throw Failure(call: "socket", code: errno) }
        var yes: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, socklen_t(MemoryLayout<Int32>.size))
        let bound: Int32
        if ipv6 {
            var address = sockaddr_in6()
            address.sin6_family = sa_family_t(AF_INET6)
            address.sin6_port = 0
            address.sin6_addr = in6addr_loopback
            bound = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in6>.size))
                }
            }
        } else {
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = 0
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            bound = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
        }
        guard bound == 0 else {
            let code = errno
            close(fd)
            throw Failure(call: "bind", code: code)
        }
        guard Glibc_listen(fd, 1024) == 0 else {
            let code = errno
            close(fd)
            throw Failure(call: "listen", code: code)
        }
        return fd
    }

    static func port(of fd: Int32) throws -> Int {
        var address = sockaddr_in6()
        var length = socklen_t(MemoryLayout<sockaddr_in6>.size)
        let result = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        guard result == 0 else { throw Failure(call: "getsockname", code: errno) }
        // The port sits at the same place in an IPv4 and an IPv6 address (after the family).
        return Int(UInt16(bigEndian: address.sin6_port))
    }

    /// Makes `close` send a TCP reset instead of an orderly FIN (`SO_LINGER` with a zero timeout).
    static func resetOnClose(_ fd: Int32) {
        var option = linger(l_onoff: 1, l_linger: 0)
        setsockopt(fd, SOL_SOCKET, SO_LINGER, &option, socklen_t(MemoryLayout<linger>.size))
    }

    static func configure(_ fd: Int32) {
        var yes: Int32 = 1
        setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &yes, socklen_t(MemoryLayout<Int32>.size))
        #if canImport(Darwin)
        setsockopt(fd, SOL_SOCKET, SO_NOSIGPIPE, &yes, socklen_t(MemoryLayout<Int32>.size))
        #endif
    }

    /// Shuts both directions down; `writingOnly` sends a FIN alone (the peer reads the end, and may still send).
    static func shutdown(_ fd: Int32, writingOnly: Bool = false) {
        #if canImport(Glibc)
        _ = Glibc.shutdown(fd, Int32(writingOnly ? SHUT_WR : SHUT_RDWR))
        #else
        _ = Darwin.shutdown(fd, writingOnly ? SHUT_WR : SHUT_RDWR)
        #endif
    }

    /// Sends every byte; `false` when the peer has gone.
    static func sendAll(_ fd: Int32, _ data: UnsafeRawBufferPointer) -> Bool {
        var offset = 0
        while offset < data.count {
            #if canImport(Glibc)
            let sent = send(fd, data.baseAddress! + offset, data.count - offset, Int32(MSG_NOSIGNAL))
            #else
            let sent = send(fd, data.baseAddress! + offset, data.count - offset, 0)
            #endif
            if sent < 0 {
                if errno == EINTR { continue }
                return false
            }
            offset += sent
        }
        return true
    }

    private static func Glibc_listen(_ fd: Int32, _ backlog: Int32) -> Int32 {
        #if canImport(Glibc)
        Glibc.listen(fd, backlog)
        #else
        Darwin.listen(fd, backlog)
        #endif
    }
}

/// A port on 127.0.0.1 that takes connections (the kernel completes them) but never accepts or reads them: a server
/// that has stopped taking a request body, for backpressure and timeout tests.
public final class StalledServer: Sendable {
    /// The port it listens on.
    public let port: Int
    /// `http://127.0.0.1:<port>`.
    public var baseURL: String { "http://127.0.0.1:\(port)" }
    private let listener: Int32

    /// Starts listening.
    public init() throws {
        listener = try Socket.listen()
        port = try Socket.port(of: listener)
    }

    deinit {
        close(listener)
    }
}
