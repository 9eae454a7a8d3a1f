import Foundation

/// What happens when a server answers with a redirect (`301`, `302`, `303`, `307` or `308`): set it for a center
/// (`CenterConfiguration.redirectPolicy`) or for one request (`Request.redirectPolicy`, which wins).
///
/// ```swift
/// center.setup { $0.redirectPolicy = .follow(max: 5) }
/// let moved = try await center.send { request in
///     request.api = "short/abc"
///     request.redirectPolicy = .never                 // the 3xx is the response
/// }
/// print(moved.status, moved.headers["Location"] ?? "")
/// ```
///
/// Whatever the policy, a followed redirect keeps the rules every request has: credentials and secret-named fields
/// stay with their origin, `https` never goes on to plain `http` (unless `allowsInsecureRedirects`), a `303`, or a
/// `301`/`302` after a `POST`, continues as a `GET` without the body. Both built-in engines follow redirects
/// themselves and decide each one the same way; an engine that does not say it honours the policy
/// (`Engine.honoursRedirectPolicy`) fails a request with any policy but `.follow` with `HTTPError.Code.unsupported`.
public struct RedirectPolicy: Sendable {
    /// Whether redirects are followed at all; when not, the redirect response is the answer.
    public let follows: Bool
    /// The most redirects one request follows, at most 20; one more fails it with `HTTPError.Code.transport` ("more
    /// than N redirects").
    public let maxRedirects: Int
    private let decide: (@Sendable (Redirect) -> Redirect.Decision)?

    /// Follows every redirect, up to 20: the default.
    public static let follow = RedirectPolicy(follows: true, maxRedirects: RedirectPolicy.maximum, decide: nil)

    /// Follows none: the redirect response, with its `Location`, is the answer.
    public static let never = RedirectPolicy(follows: false, maxRedirects: 0, decide: nil)

    /// Follows up to `max` redirects, at most 20 (`0` fails at the first).
    public static func follow(max: Int) -> RedirectPolicy {
        RedirectPolicy(follows: true, maxRedirects: limit(max), decide: nil)
    }

    /// Asks `decide` about each redirect, up to `max` (at most 20): follow it, send another request in its place, or
    /// stop (the redirect response is the answer). `decide` runs on the engine's thread, and should answer at once.
    ///
    /// ```swift
    /// center.setup { config in
    ///     config.redirectPolicy = .deciding { redirect in
    ///         // Stay on our own hosts: a redirect elsewhere is the answer.
    ///         redirect.next.url?.host == "api.example.com" ? .follow : .stop
    ///     }
    /// }
    /// ```
    public static func deciding(
        max: Int = 20, _ decide: @escaping @Sendable (Redirect) -> Redirect.Decision
    ) -> RedirectPolicy {
        RedirectPolicy(follows: true, maxRedirects: limit(max), decide: decide)
    }

    /// Whether this is `.follow`, which every engine that follows redirects keeps.
    var isDefault: Bool { follows && maxRedirects == RedirectPolicy.maximum && decide == nil }

    /// The most redirects any request follows: URLSession's own limit.
    static let maximum = 20

    /// A limit within `0...maximum`.
    private static func limit(_ count: Int) -> Int { min(Swift.max(0, count), maximum) }

    /// What the policy says of a redirect.
    enum Outcome {
        /// The redirect response is the answer.
        case answer
        /// Follow with this request: the rules' own, or the one a decision gave.
        case follow(Redirect.Next)
        /// The redirect is past `maxRedirects`.
        case pastLimit
    }

    /// What the policy says of a redirect, asked without I/O.
    func decision(_ redirect: Redirect) -> Outcome {
        guard follows else { return .answer }
        guard redirect.number <= maxRedirects else { return .pastLimit }
        guard let decide else { return .follow(redirect.next) }
        switch decide(redirect) {
        case .follow: return .follow(redirect.next)
        case .stop: return .answer
        case .send(let next): return .follow(next)
        }
    }
}

/// A redirect an engine is about to follow, as `RedirectPolicy.deciding(max:_:)` sees it.
public struct Redirect: Sendable {
    /// What to do with a redirect.
    public enum Decision: Sendable {
        /// Follow it with `next`.
        case follow
        /// Follow it with this request instead: another URL, method or header fields (the body is the rules').
        case send(Next)
        /// Do not follow it: the redirect response is the answer.
        case stop
    }

    /// The request that follows a redirect, as far as a decision may change it.
    public struct Next: Sendable {
        /// Where it goes.
        public var url: URL?
        /// Its method (a `GET` after a `303`, or after a `301`/`302` to a `POST`).
        public var method: HTTPMethod
        /// Its header fields, without those that stay with another origin.
        public var headers: HTTPHeaders

        /// A request to follow with.
        public init(url: URL?, method: HTTPMethod, headers: HTTPHeaders) {
            (self.url, self.method, self.headers) = (url, method, headers)
        }
    }

    /// The redirect's status.
    public var status: Int
    /// The redirect response's header fields (its `Location` among them).
    public var responseHeaders: HTTPHeaders
    /// The URL that answered with the redirect.
    public var from: URL?
    /// The request that follows it, as the rules made it.
    public var next: Next
    /// Which redirect of the request this is, from 1.
    public var number: Int

    /// Creates a redirect, for an engine of your own or a test of a policy.
    public init(status: Int, responseHeaders: HTTPHeaders, from: URL?, next: Next, number: Int) {
        (self.status, self.responseHeaders, self.from, self.next, self.number) =
            (status, responseHeaders, from, next, number)
    }
}
