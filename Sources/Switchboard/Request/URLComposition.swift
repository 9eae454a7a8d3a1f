import Foundation

/// Turns `url`, or `server` plus `api`, into the URL a request goes to (XMNetworking's rules, RFC 3986 resolution).
enum URLComposition {
    /// The URL string for a merged request: `url` when set, else `api` resolved against `server`, else `server`.
    ///
    /// A server with a path and no trailing slash gets one, so `api` extends the path instead of replacing its last
    /// segment: `https://x.com/v1` + `users` is `https://x.com/v1/users`. An `api` that starts with `/` replaces the
    /// path; an absolute `api` wins.
    static func compose(_ request: Request) throws(HTTPError) -> String {
        if let url = request.url, !url.isEmpty {
            return url
        }
        let server = request.server ?? ""
        let api = request.api ?? ""
        guard !api.isEmpty else {
            guard !server.isEmpty else {
                throw HTTPError(.invalidURL, "no URL: set `url`, or `api` with a server", request: request)
            }
            return server
        }
        if let absolute = URL(string: api), absolute.scheme != nil {
            return absolute.absoluteString
        }
        guard !server.isEmpty else {
            throw HTTPError(.invalidURL, "api \"\(api)\" has no server to resolve against", request: request)
        }
        guard var base = URL(string: server), base.scheme != nil else {
            throw HTTPError(.invalidURL, "the server \"\(server)\" is not a valid URL", request: request)
        }
        if !base.path.isEmpty && !server.hasSuffix("/") {
            base = base.appendingPathComponent("")
        }
        guard let resolved = URL(string: api, relativeTo: base) else {
            throw HTTPError(.invalidURL, "api \"\(api)\" is not a valid URL reference", request: request)
        }
        return resolved.absoluteString
    }

    /// Parses and checks a composed URL string: it must be an absolute `http` or `https` URL with a host.
    static func validate(_ string: String, for request: Request) throws(HTTPError) -> URL {
        guard let url = URL(string: string) else {
            throw HTTPError(.invalidURL, "\"\(string)\" is not a valid URL", request: request)
        }
        guard let scheme = url.scheme?.lowercased(), scheme == "http" || scheme == "https" else {
            throw HTTPError(.invalidURL, "\"\(string)\" is not an http or https URL", request: request)
        }
        guard let host = url.host, !host.isEmpty else {
            throw HTTPError(.invalidURL, "\"\(string)\" has no host", request: request)
        }
        return url
    }
}
