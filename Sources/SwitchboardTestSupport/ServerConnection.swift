import Foundation
import Switchboard
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Reads requests from and writes responses to one connection, with a read buffer kept across keep-alive requests.
final class ServerConnection {
    private let fd: Int32
    private var buffer: [UInt8] = []
    private var start = 0
    /// How many request heads this connection has read.
    private var heads = 0
    /// Requests with larger heads are refused, so a broken client cannot grow the buffer without bound.
    private static let maximumHead = 64 * 1024

    init(fd: Int32) {
        self.fd = fd
    }

    // MARK: - Reading

    func readRequest() -> ServerRequest? {
        guard let headEnd = readUntilHeadEnd() else { return nil }
        let head = String(decoding: buffer[start..<headEnd], as: UTF8.self)
        start = headEnd + 4
        var lines = head.components(separatedBy: "\r\n")
        let requestLine = lines.removeFirst().split(separator: " ")
        guard requestLine.count == 3 else { return nil }
        var headers: [(name: String, value: String)] = []
        for line in lines where !line.isEmpty {
            guard let colon = line.firstIndex(of: ":") else { return nil }
            headers.append(
                (String(line[..<colon]), line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)))
        }
        var request = ServerRequest(
            method: String(requestLine[0]), target: String(requestLine[1]), version: String(requestLine[2]),
            headers: headers, body: Data(), wasChunked: false)
        heads += 1
        if request.path.hasPrefix("/close-reused"), heads > 1 || request.queryValue("every") != nil {
            // Loopback only: a reused connection (with `every`, any) is closed as soon as the request's head is read,
            // before its body, as a server closes an idle connection just as the client sends on it: a FIN, then,
            // a tenth of a second later, a reset for the body still arriving.
            Socket.shutdown(fd, writingOnly: true)
            Thread.sleep(forTimeInterval: 0.1)
            Socket.resetOnClose(fd)
            return nil
        }
        if request.header("Expect")?.lowercased() == "100-continue" {
            guard write(Data("HTTP/1.1 100 Continue\r\n\r\n".utf8)) else { return nil }
        }
        if request.path.hasPrefix("/stall-body") {
            // Loopback only: reads nothing more for `seconds` (6 unless given), then drops the connection.
            Thread.sleep(forTimeInterval: min(Double(request.queryValue("seconds") ?? "") ?? 6, 30))
            return nil
        }
        if request.path.hasPrefix("/refuse-body") {
            // Loopback only: a `413` as soon as the head is read, before any of the body, as a server with a size
            // limit answers; then the connection is closed the way such servers do (no more is sent, and what the
            // client still sends is read and dropped for a while, so that the answer is not lost to a reset).
            let answer = "HTTP/1.1 413 Content Too Large\r\nContent-Length: 8\r\nConnection: close\r\n\r\ntoo big\n"
            guard write(Data(answer.utf8)) else { return nil }
            lingeringClose()
            return nil
        }
        let chunked = request.header("Transfer-Encoding")?.lowercased().contains("chunked") == true
        let length = request.header("Content-Length").flatMap { Int($0) } ?? 0
        if request.path.hasPrefix("/discard") {
            // Counts the body and keeps nothing, for benchmarks: what the client sends, not what the server does.
            var count = 0
            guard chunked ? readChunkedBody({ count += $0.count }) : discard(length, counted: &count) else {
                return nil
            }
            request.streamed = (count, "")
            request.wasChunked = chunked
        } else if request.path.hasPrefix("/sink") {
            let hasher = BodyDigest()
            var count = 0
            // `pause=S`: a slow reader, S seconds after each piece read (at most 64 KiB). `gate=KEY`: runs the
            // change of the `SinkGate` of that key once it has read the gate's number of bytes, then reads on.
            let pause = request.queryValue("pause").flatMap(Double.init).map { min($0, 1) }
            var gate = SinkGate.named(request.queryValue("gate"))
            let consume: (Data) -> Void = {
                hasher.update($0); count += $0.count
                if let pause { Thread.sleep(forTimeInterval: pause) }
                if let waiting = gate, count >= waiting.after {
                    gate = nil
                    waiting.arrive()
                }
            }
            guard chunked ? readChunkedBody(consume) : readBytes(length, consume) else { return nil }
            request.streamed = (count, hasher.hexDigest())
            request.wasChunked = chunked
        } else if chunked {
            var body = Data()
            guard readChunkedBody({ body.append($0) }) else { return nil }
            request.body = body
            request.wasChunked = true
        } else if length > 0 {
            var body = Data()
            guard readBytes(length, { body.append($0) }) else { return nil }
            request.body = body
        }
        compact()
        return request
    }

    /// Stops sending, then reads and drops what the client still sends, for at most 2 seconds (the caller closes).
    private func lingeringClose() {
        Socket.shutdown(fd, writingOnly: true)
        var timeout = timeval(tv_sec: 2, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        let deadline = Date().addingTimeInterval(2)
        var block = [UInt8](repeating: 0, count: 1 << 16)
        while Date() < deadline {
            let received = block.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if received > 0 || (received < 0 && errno == EINTR) { continue }
            return
        }
    }

    private func readUntilHeadEnd() -> Int? {
        var searchFrom = start
        while true {
            if let end = find([13, 10, 13, 10], from: searchFrom) { return end }
            searchFrom = max(start, buffer.count - 3)
            if buffer.count - start > Self.maximumHead { return nil }
            guard fill() else { return nil }
        }
    }

    private func readLine() -> String? {
        while true {
            if let end = find([13, 10], from: start) {
                let line = String(decoding: buffer[start..<end], as: UTF8.self)
                start = end + 2
                return line
            }
            guard fill() else { return nil }
        }
    }

    /// Reads exactly `count` body bytes, handing them over as they come (at most one read buffer at a time).
    private func readBytes(_ count: Int, _ consume: (Data) -> Void) -> Bool {
        var remaining = count
        while remaining > 0 {
            if start == buffer.count {
                buffer.removeAll(keepingCapacity: true)
                start = 0
                guard fill() else { return false }
            }
            let take = min(remaining, buffer.count - start)
            consume(Data(buffer[start..<start + take]))
            start += take
            remaining -= take
        }
        return true
    }

    /// Reads and drops exactly `count` body bytes: the buffered ones, then straight from the socket into one reused
    /// block, with no copy kept.
    private func discard(_ count: Int, counted: inout Int) -> Bool {
        let buffered = min(count, buffer.count - start)
        start += buffered
        counted += buffered
        var remaining = count - buffered
        guard remaining > 0 else { return true }
        var block = [UInt8](repeating: 0, count: 1 << 20)
        while remaining > 0 {
            let received = block.withUnsafeMutableBytes { recv(fd, $0.baseAddress, min($0.count, remaining), 0) }
            if received > 0 {
                remaining -= received
                counted += received
            } else if received < 0 && errno == EINTR {
                continue
            } else {
                return false
            }
        }
        return true
    }

    private func readChunkedBody(_ consume: (Data) -> Void) -> Bool {
        while true {
            guard let sizeLine = readLine() else { return false }
            let hex = sizeLine.split(separator: ";").first.map { $0.trimmingCharacters(in: .whitespaces) } ?? ""
            guard let size = Int(hex, radix: 16) else { return false }
            if size == 0 {
                while let trailer = readLine(), !trailer.isEmpty {}
                return true
            }
            guard readBytes(size, consume), readLine() != nil else { return false }
        }
    }

    private func fill() -> Bool {
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            let count = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if count > 0 {
                buffer.append(contentsOf: chunk[0..<count])
                return true
            }
            if count < 0 && errno == EINTR { continue }
            return false
        }
    }

    private func compact() {
        if start > 0 {
            buffer.removeFirst(start)
            start = 0
        }
    }

    private func find(_ pattern: [UInt8], from index: Int) -> Int? {
        guard buffer.count >= pattern.count else { return nil }
        var i = max(index, 0)
        while i <= buffer.count - pattern.count {
            if buffer[i] == pattern[0] {
                var match = true
                for j in 1..<pattern.count where buffer[i + j] != pattern[j] {
                    match = false
                    break
                }
                if match { return i }
            }
            i += 1
        }
        return nil
    }

    // MARK: - Writing

    func write(_ response: ServerResponse, to request: ServerRequest, keepAlive: Bool) -> Bool {
        if response.delay > 0 { Thread.sleep(forTimeInterval: response.delay) }
        if let rawHead = response.rawHead {
            _ = write(rawHead + response.body)
            return false
        }
        var head = "HTTP/1.1 \(response.status) \(HTTPStatus.reason(response.status))\r\n"
        var hasLength = false
        for (name, value) in response.headers {
            if name.lowercased() == "content-length" { hasLength = true }
            head += "\(name): \(value)\r\n"
        }
        let bodyAllowed =
            request.method != "HEAD" && response.status != 204 && response.status != 304
            && response.status >= 200
        let keepAlive = keepAlive && !response.closeDelimited
        if !hasLength && response.status != 204 && response.status != 304 && !response.closeDelimited {
            head += "Content-Length: \(response.generated?.length ?? response.body.count)\r\n"
        }
        if !response.headers.contains(where: { $0.name.lowercased() == "date" }) {
            head += "Date: \(Httpbin.httpDate(Date()))\r\n"
        }
        head += "Server: SwitchboardLoopback\r\n"
        head += keepAlive ? "Connection: keep-alive\r\n" : "Connection: close\r\n"
        head += "\r\n"
        if let generated = response.generated {
            return writeGenerated(
                generated, head: head, send: bodyAllowed, truncateAfter: response.truncateAfter, pause: response.pause)
        }
        var body = bodyAllowed ? response.body : Data()
        if let limit = response.truncateAfter { body = body.prefix(limit) }
        if case .afterBody(let count) = response.reset {
            // Give the client time to read what was sent, so the reset is what it sees next, not instead.
            _ = write(Data(head.utf8) + body.prefix(count))
            Thread.sleep(forTimeInterval: 0.05)
            Socket.resetOnClose(fd)
            return false
        }
        if let drip = response.drip, drip.pieces > 1, !body.isEmpty {
            guard write(Data(head.utf8)) else { return false }
            let size = max(1, (body.count + drip.pieces - 1) / drip.pieces)
            var offset = 0
            while offset < body.count {
                if offset > 0 { Thread.sleep(forTimeInterval: drip.interval) }
                let end = min(body.count, offset + size)
                guard write(body.subdata(in: offset..<end)) else { return false }
                offset = end
            }
        } else {
            guard write(Data(head.utf8) + body) else { return false }
        }
        return response.truncateAfter == nil && !response.closeDelimited
    }

    /// Writes a generated body in 256 KiB pieces; with `truncateAfter`, stops there and reports the connection lost.
    private func writeGenerated(
        _ generated: (length: Int, bytes: @Sendable (Int, Int) -> Data), head: String, send: Bool, truncateAfter: Int?,
        pause: (after: Int, seconds: Double)?
    ) -> Bool {
        guard write(Data(head.utf8)) else { return false }
        guard send else { return true }
        let end = min(generated.length, truncateAfter ?? generated.length)
        if let pause, pause.after == 0 { Thread.sleep(forTimeInterval: pause.seconds) }
        var offset = 0
        while offset < end {
            var count = min(256 * 1024, end - offset)
            if let pause, offset < pause.after { count = min(count, pause.after - offset) }
            guard write(generated.bytes(offset, count)) else { return false }
            offset += count
            if let pause, offset == pause.after { Thread.sleep(forTimeInterval: pause.seconds) }
        }
        return truncateAfter == nil
    }

    private func write(_ data: Data) -> Bool {
        data.withUnsafeBytes { Socket.sendAll(fd, $0) }
    }
}

/// Reason phrases for status lines.
enum HTTPStatus {
    static func reason(_ status: Int) -> String {
        switch status {
        case 100: "Continue"
        case 200: "OK"
        case 201: "Created"
        case 202: "Accepted"
        case 204: "No Content"
        case 206: "Partial Content"
        case 301: "Moved Permanently"
        case 302: "Found"
        case 303: "See Other"
        case 304: "Not Modified"
        case 307: "Temporary Redirect"
        case 308: "Permanent Redirect"
        case 400: "Bad Request"
        case 401: "Unauthorized"
        case 403: "Forbidden"
        case 404: "Not Found"
        case 405: "Method Not Allowed"
        case 408: "Request Timeout"
        case 416: "Range Not Satisfiable"
        case 418: "I'm a teapot"
        case 429: "Too Many Requests"
        case 500: "Internal Server Error"
        case 502: "Bad Gateway"
        case 503: "Service Unavailable"
        case 504: "Gateway Timeout"
        default: "Status \(status)"
        }
    }
}
