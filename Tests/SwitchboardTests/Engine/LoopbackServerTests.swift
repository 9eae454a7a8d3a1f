// Raw-socket tests of the loopback server; written against Glibc, where CI runs them.
#if canImport(Glibc)
import Foundation
import Glibc
import Testing
@testable import Switchboard
import SwitchboardTestSupport

/// The loopback server itself: framing, keep-alive and the httpbin routes the other suites rely on.
@Suite struct LoopbackServerTests {
    /// Sends raw bytes on a new connection and reads until the server closes it.
    func exchange(_ raw: String, port: Int) throws -> String {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        #expect(fd >= 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(port).bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        try #require(connected == 0)
        var timeout = timeval(tv_sec: 5, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        let bytes = Array(raw.utf8)
        _ = bytes.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if count <= 0 { break }
            received += buffer[0..<count]
        }
        return String(decoding: received, as: UTF8.self)
    }

    @Test func chunkedRequestBodiesAreReassembled() throws {
        let server = LoopbackServer.shared
        let response = try exchange(
            "POST /post HTTP/1.1\r\nHost: x\r\nContent-Type: text/plain\r\nTransfer-Encoding: chunked\r\n"
                + "Connection: close\r\n\r\n5\r\nhello\r\n7;ext=1\r\n, world\r\n0\r\n\r\n",
            port: server.port)
        #expect(response.hasPrefix("HTTP/1.1 200 OK\r\n"))
        #expect(response.contains("\"data\" : \"hello, world\""))
    }

    @Test func theDiscardRouteCountsWhatItDrops() async throws {
        let server = LoopbackServer.shared
        let chunked = try exchange(
            "POST /discard HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
                + "5\r\nhello\r\n7\r\n, world\r\n0\r\n\r\n",
            port: server.port)
        #expect(chunked.contains("\"length\" : 12"))
        // A body larger than what arrives with the head, read past the server's buffer.
        let body = Data(count: 3 << 20)
        let response = try await testCenter { $0.server = server.baseURL + "/" }.send { request in
            request.api = "discard"
            request.method = .put
            request.body = .data(body)
        }
        #expect(response.json?["length"]?.int == body.count)
        #expect(response.json?["chunked"]?.bool == false)
    }

    @Test func expectContinueIsAnswered() throws {
        let response = try exchange(
            "PUT /put HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nExpect: 100-continue\r\nConnection: close\r\n\r\nabc",
            port: LoopbackServer.shared.port)
        #expect(response.hasPrefix("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\n"))
        #expect(response.contains("\"data\" : \"abc\""))
    }

    @Test func pipelinedKeepAliveRequestsShareOneConnection() throws {
        let response = try exchange(
            "GET /status/204 HTTP/1.1\r\nHost: x\r\n\r\nGET /status/418 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
            port: LoopbackServer.shared.port)
        #expect(response.components(separatedBy: "HTTP/1.1 ").count == 3)
        #expect(response.contains("HTTP/1.1 204 No Content\r\n"))
        #expect(response.contains("-=[ teapot ]=-"))
    }

    @Test(arguments: bothEngines)
    func sequentialRequestsFromAnEngineReuseTheConnection(_ engineName: String) async throws {
        let server = try LoopbackServer()
        defer { server.stop() }
        let engine = try namedEngine(engineName)
        let center = testCenter {
            $0.server = server.baseURL + "/"; $0.engine = engine
        }
        for _ in 0..<20 { _ = try await center.send { $0.api = "get" } }
        #expect(server.acceptedConnections == 1)
    }

    @Test func seededBytesAreDeterministic() async throws {
        let center = testCenter { $0.server = LoopbackServer.shared.baseURL + "/" }
        let first = try await center.send {
            $0.api = "bytes/4096"; $0.parameters = ["seed": 3]; $0.responseSerializer = .raw
        }
        let second = try await center.send {
            $0.api = "bytes/4096"; $0.parameters = ["seed": 3]; $0.responseSerializer = .raw
        }
        #expect(first.data.count == 4096)
        #expect(first.data == second.data)
    }

    @Test(arguments: [200, 201, 204, 400, 418, 500, 503])
    func statusRoutes(_ status: Int) async throws {
        let center = testCenter {
            $0.server = LoopbackServer.shared.baseURL + "/"; $0.acceptableStatusCodes = Set(100...599)
        }
        let response = try await center.send {
            $0.api = "status/\(status)"; $0.responseSerializer = .raw
        }
        #expect(response.status == status)
    }
}
#endif
