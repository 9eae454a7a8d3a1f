import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// How a redirect is followed, the same for every engine that follows redirects itself: credentials never go to
/// another origin, `301`/`302`/`303` turn a `POST` into a `GET` without body (as browsers and URLSession do),
/// `307`/`308` keep the method and body.
enum Redirects {
    static let maximum = 20
    static let credentialHeaders = ["Authorization", "Cookie", "Proxy-Authorization"]

    /// The request that follows a redirect response, or `nil` when the response is not one to follow.
    static func next(after response: HTTPURLResponse, for request: EngineRequest) -> EngineRequest? {
        guard [301, 302, 303, 307, 308].contains(response.statusCode),
              let location = response.value(forHTTPHeaderField: "Location"),
              let from = response.url ?? request.url,
              let target = URL(string: location, relativeTo: from)?.absoluteURL,
              let scheme = target.scheme?.lowercased(), scheme == "http" || scheme == "https"
        else { return nil }
        var next = request
        next.urlRequest.url = target
        if !sameOrigin(from, target) {
            for name in credentialHeaders { next.urlRequest.setValue(nil, forHTTPHeaderField: name) }
        }
        let method = request.method
        if response.statusCode == 303 || ((response.statusCode == 301 || response.statusCode == 302) && method == .post) {
            if method != .head { next.urlRequest.httpMethod = "GET" }
            next.body = .none
            next.urlRequest.setValue(nil, forHTTPHeaderField: "Content-Type")
            next.urlRequest.setValue(nil, forHTTPHeaderField: "Content-Length")
        }
        return next
    }

    static func sameOrigin(_ lhs: URL?, _ rhs: URL?) -> Bool {
        guard let lhs, let rhs else { return false }
        return lhs.scheme?.lowercased() == rhs.scheme?.lowercased()
            && lhs.host?.lowercased() == rhs.host?.lowercased()
            && port(lhs) == port(rhs)
    }

    private static func port(_ url: URL) -> Int? {
        url.port ?? (url.scheme?.lowercased() == "https" ? 443 : url.scheme?.lowercased() == "http" ? 80 : nil)
    }
}
