/// An HTTP request method: the common ones as constants, and any other token.
///
/// ```swift
/// request.method = .post
/// request.method = "PROPFIND"
/// ```
public struct HTTPMethod: RawRepresentable, Hashable, Sendable, ExpressibleByStringLiteral, CustomStringConvertible {
    /// The method token as sent on the wire, upper-cased for the standard methods.
    public let rawValue: String

    /// Creates a method from its token, as given (methods are case-sensitive in HTTP).
    public init(rawValue: String) {
        self.rawValue = rawValue
    }

    /// Creates a method from a string literal.
    public init(stringLiteral value: String) {
        self.rawValue = value
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

    /// Whether the method is idempotent (RFC 9110 §9.2.2): safe to send again after a failure.
    public var isIdempotent: Bool {
        switch self {
        case .get, .head, .put, .delete, .options, .trace: true
        default: false
        }
    }

    /// Whether a token is a valid method name (RFC 9110 `token`: visible ASCII without separators).
    var isValidToken: Bool {
        !rawValue.isEmpty
            && rawValue.utf8.allSatisfy { byte in
                switch byte {
                case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                    UInt8(ascii: "0")...UInt8(ascii: "9"):
                    true
                default:
                    "!#$%&'*+-.^_`|~".utf8.contains(byte)
                }
            }
    }
}
