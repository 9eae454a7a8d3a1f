/// An HTTP request method: the common ones as constants, and any other token.
///
/// ```swift
/// request.method = .post
/// request.method = "PROPFIND"
/// ```
public struct HTTPMethod: RawRepresentable, Hashable, Sendable, ExpressibleByStringLiteral, CustomStringConvertible {
    /// The method token as sent on the wire, upper-cased for the standard methods.
    public let rawValue: String
    /// Whether the token is a valid method name (RFC 9110 `token`: visible ASCII without separators), found when the
    /// method is made rather than at every request.
    let isValidToken: Bool

    /// Creates a method from its token. A standard method in any case (`get`, `Patch`) becomes its upper-case form
    /// (`GET`, `PATCH`), as URLSession makes most of them, so that it is the same method on every engine and for the
    /// center's rules (parameters in the query for `GET`, retries for idempotent methods); any other token is kept
    /// as given (methods are case-sensitive in HTTP).
    public init(rawValue: String) {
        self.rawValue = Self.canonical(rawValue)
        isValidToken = Self.isToken(self.rawValue)
    }

    /// Creates a method from a string literal, as `init(rawValue:)` does.
    public init(stringLiteral value: String) {
        self.init(rawValue: value)
    }

    private static let standard: Set<String> = [
        "GET", "HEAD", "POST", "PUT", "DELETE", "CONNECT", "OPTIONS", "TRACE", "PATCH",
    ]

    /// The upper-case form of a standard method's token; any other token as it is.
    private static func canonical(_ token: String) -> String {
        guard token.utf8.contains(where: { $0 >= UInt8(ascii: "a") && $0 <= UInt8(ascii: "z") }),
            token.utf8.allSatisfy({ $0 < 0x80 })
        else { return token }
        let upper = token.uppercased()
        return standard.contains(upper) ? upper : token
    }

    /// The token, as sent on the wire.
    public var description: String { rawValue }

    /// `GET`.
    public static let get: HTTPMethod = "GET"
    /// `POST`.
    public static let post: HTTPMethod = "POST"
    /// `HEAD`.
    public static let head: HTTPMethod = "HEAD"
    /// `DELETE`.
    public static let delete: HTTPMethod = "DELETE"
    /// `PUT`.
    public static let put: HTTPMethod = "PUT"
    /// `PATCH`.
    public static let patch: HTTPMethod = "PATCH"
    /// `OPTIONS`.
    public static let options: HTTPMethod = "OPTIONS"
    /// `TRACE`.
    public static let trace: HTTPMethod = "TRACE"
    /// `CONNECT`.
    public static let connect: HTTPMethod = "CONNECT"

    /// Whether parameters travel in the query string rather than the body (GET, HEAD and DELETE, as XMNetworking does).
    var encodesParametersInQuery: Bool {
        self == .get || self == .head || self == .delete
    }

    /// Whether a request with this method says `Content-Length: 0` when it has no body: a `POST`, `PUT` or `PATCH`,
    /// whose meaning has a body (servers may refuse one without a length). Others send no such field (RFC 9110 section
    /// 8.6), on both engines.
    var anticipatesBody: Bool {
        self == .post || self == .put || self == .patch
    }

    /// Whether the method is idempotent (RFC 9110 §9.2.2): safe to send again after a failure.
    public var isIdempotent: Bool {
        switch self {
        case .get, .head, .put, .delete, .options, .trace: true
        default: false
        }
    }

    private static func isToken(_ text: String) -> Bool {
        !text.isEmpty && text.utf8.allSatisfy(isTokenByte)
    }

    /// Whether a byte may be part of an RFC 9110 `token` (`tchar`): a letter, a digit or one of ``!#$%&'*+-.^_`|~``.
    static func isTokenByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"):
            true
        // Cases, not a search of a string of them: every field name of every response head is checked.
        case UInt8(ascii: "!"), UInt8(ascii: "#"), UInt8(ascii: "$"), UInt8(ascii: "%"), UInt8(ascii: "&"),
            UInt8(ascii: "'"), UInt8(ascii: "*"), UInt8(ascii: "+"), UInt8(ascii: "-"), UInt8(ascii: "."),
            UInt8(ascii: "^"), UInt8(ascii: "_"), UInt8(ascii: "`"), UInt8(ascii: "|"), UInt8(ascii: "~"):
            true
        default:
            false
        }
    }
}
