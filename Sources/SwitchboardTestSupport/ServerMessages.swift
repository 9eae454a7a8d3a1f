import Foundation

/// A request as the loopback server parsed it.
public struct ServerRequest: Sendable {
    /// The method token.
    public var method: String
    /// The request target as sent: path and query (origin form), or a whole URL (absolute form, as a client sends
    /// to a proxy).
    public var target: String
    /// The HTTP version, `HTTP/1.1` or `HTTP/1.0`.
    public var version: String
    /// The header fields in the order received, with names as sent.
    public var headers: [(name: String, value: String)]
    /// The body, de-chunked.
    public var body: Data
    /// Whether the body came with `Transfer-Encoding: chunked`.
    public var wasChunked: Bool
    /// How many requests came before this one on its connection (0 on a new connection).
    public var indexOnConnection = 0
    /// For `/sink` routes, the body was hashed as it streamed in instead of being kept: its length and SHA-256.
    public var streamed: (length: Int, sha256: String)?

    /// The path, percent-decoded.
    public var path: String {
        let raw = originForm.split(separator: "?", maxSplits: 1).first.map(String.init) ?? "/"
        return raw.removingPercentEncoding ?? raw
    }

    /// The raw query string, without `?`.
    public var query: String {
        let parts = originForm.split(separator: "?", maxSplits: 1)
        return parts.count > 1 ? String(parts[1]) : ""
    }

    /// The target's path and query: the target itself, or for an absolute-form target (`http://host/path?query`,
    /// which a server must accept too, RFC 9112 section 3.2.2) what follows its authority.
    private var originForm: Substring {
        guard let schemeEnd = target.range(of: "://"), !target.hasPrefix("/") else { return target[...] }
        let rest = target[schemeEnd.upperBound...]
        guard let pathStart = rest.firstIndex(where: { $0 == "/" || $0 == "?" }) else { return "/" }
        return rest[pathStart...]
    }

    /// The query as name-value pairs, decoded (`+` is a space).
    public var queryItems: [(name: String, value: String)] {
        FormDecoding.pairs(query)
    }

    /// The first query value with this name.
    public func queryValue(_ name: String) -> String? {
        queryItems.first { $0.name == name }?.value
    }

    /// The value of a header, compared case-insensitively; repeated fields joined with `,`.
    public func header(_ name: String) -> String? {
        let values = headers.filter { $0.name.lowercased() == name.lowercased() }.map(\.value)
        return values.isEmpty ? nil : values.joined(separator: ",")
    }
}

/// A response for the loopback server to write, with optional misbehaviour for fault tests.
public struct ServerResponse: Sendable {
    /// The status code.
    public var status: Int
    /// Header fields; `Content-Length` is added unless the body is sent chunked.
    public var headers: [(name: String, value: String)]
    /// The body.
    public var body: Data
    /// Seconds to wait before writing anything.
    public var delay: Double = 0
    /// When set, the body is written in this many pieces with a pause between them.
    public var drip: (pieces: Int, interval: Double)?
    /// When set, the connection is closed after this many body bytes (a dropped connection).
    public var truncateAfter: Int?
    /// Whether to close the connection after this response.
    public var close = false
    /// Sends no `Content-Length`: the body ends when the connection closes (as server-sent event streams do).
    public var closeDelimited = false
    /// Whether to close the connection instead of answering at all (a keep-alive connection the server dropped).
    public var dropWithoutAnswer = false
    /// When set, the connection is reset (a TCP RST, not an orderly close) before the answer or after some body.
    public var reset: Reset?
    /// Where a response resets its connection.
    public enum Reset: Sendable {
        /// As soon as the request is read, before a byte of the answer.
        case beforeAnswer
        /// After the head and this many bytes of the body.
        case afterBody(Int)
    }
    /// Bytes written verbatim in place of the status line and headers (a malformed head), then the body.
    public var rawHead: Data?
    /// When set, writing stops for this many seconds after this many body bytes (a stalled server).
    public var pause: (after: Int, seconds: Double)?
    /// A body generated piece by piece instead of `body`, so that large responses need no memory: its length, and
    /// the bytes at an offset.
    public var generated: (length: Int, bytes: @Sendable (_ offset: Int, _ count: Int) -> Data)?

    /// Creates a response.
    public init(status: Int = 200, headers: [(name: String, value: String)] = [], body: Data = Data()) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    /// A JSON response, pretty-printed with sorted keys as httpbin prints.
    public static func json(_ object: Any, status: Int = 200) -> ServerResponse {
        let data =
            (try? JSONSerialization.data(
                withJSONObject: object, options: [.prettyPrinted, .sortedKeys, .fragmentsAllowed])) ?? Data("null".utf8)
        return ServerResponse(
            status: status, headers: [("Content-Type", "application/json")], body: data + Data("\n".utf8))
    }

    /// A text response.
    public static func text(_ text: String, status: Int = 200, type: String = "text/plain; charset=utf-8")
        -> ServerResponse
    {
        ServerResponse(status: status, headers: [("Content-Type", type)], body: Data(text.utf8))
    }
}

/// `application/x-www-form-urlencoded` decoding, as werkzeug does it.
public enum FormDecoding {
    /// Splits `a=1&b=x+y` into decoded pairs.
    public static func pairs(_ string: String) -> [(name: String, value: String)] {
        string.split(separator: "&", omittingEmptySubsequences: true).map { pair in
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let name = decode(parts[0])
            let value = parts.count > 1 ? decode(parts[1]) : ""
            return (name, value)
        }
    }

    private static func decode(_ part: Substring) -> String {
        let spaced = part.replacingOccurrences(of: "+", with: " ")
        return spaced.removingPercentEncoding ?? spaced
    }
}
