import Foundation

/// The cache's part in one exchange: serve from the cache before the network, validate a stale entry, store what
/// comes back, and forget what a successful unsafe request changed.
final class CacheStep {
    let cache: ResponseCache
    let policy: CachePolicy
    let key: String
    let request: Request
    let requestHeaders: HTTPHeaders
    let entry: ResponseCache.Entry?
    /// When the request was sent, by the cache's clock (RFC 9111's request_time).
    let requestedAt: Date

    /// `nil` when the request does not use the cache: no cache, `.networkOnly`, a method that is not cached, or a
    /// request sent with `Cache-Control: no-store`.
    init?(request: Request, engineRequest: EngineRequest, configuration: CenterConfiguration) {
        guard let cache = configuration.cache, request.cachePolicy != .networkOnly, request.kind == .data,
            let url = engineRequest.url
        else { return nil }
        let method = engineRequest.method
        guard method == .get || method == .head || (method == .post && request.cachesPOST) else { return nil }
        if CacheControl(engineRequest.headers["Cache-Control"]).has("no-store") { return nil }
        var body = Data()
        switch engineRequest.body {
        case .none: break
        case .data(let data): body = data
        case .file, .stream: return nil  // a body the key cannot digest
        }
        self.cache = cache
        policy = request.cachePolicy
        let plain = ResponseCache.key(method: method, url: url.absoluteString, body: body)
        key = request.cachesAcrossCredentials ? plain : ResponseCache.key(plain, credentialsOf: engineRequest.headers)
        self.request = request
        requestHeaders = engineRequest.headers
        entry = cache.lookup(key, headers: engineRequest.headers)
        requestedAt = cache.now()
    }

    /// Whether the stored entry may be served without asking the server: not when it says `no-cache`, nor when it
    /// says `must-revalidate` and is stale, nor when the request says `no-cache`.
    private func mayServeUnvalidated(_ entry: ResponseCache.Entry) -> Bool {
        if CacheControl(requestHeaders["Cache-Control"]).has("no-cache") { return false }
        let control = CacheControl(HTTPHeaders(entry.headers)["Cache-Control"])
        if control.has("no-cache") { return false }
        if control.has("must-revalidate") && !cache.isFresh(entry) { return false }
        return true
    }

    /// The cached response to serve before (or instead of) the network: for `.cacheOnly` (or a miss error), a fresh
    /// entry for `.http`, one young enough for `.cacheElseNetwork`, any servable entry for `.cacheThenNetwork`.
    func beforeNetwork() throws(HTTPError) -> Response? {
        switch policy {
        case .networkOnly:
            return nil
        case .cacheOnly:
            guard let entry else {
                throw HTTPError(.cacheMiss, "nothing is cached for \(key)", request: request)
            }
            guard mayServeUnvalidated(entry) else {
                throw HTTPError(
                    .cacheMiss,
                    "the response cached for \(key) must be revalidated with the server first "
                        + "(no-cache or must-revalidate)", request: request)
            }
            return response(from: entry)
        case .http:
            guard let entry, mayServeUnvalidated(entry), cache.isFresh(entry) else { return nil }
            return response(from: entry)
        case .cacheElseNetwork(let maxAge):
            guard let entry, mayServeUnvalidated(entry), cache.age(of: entry) <= maxAge.seconds else { return nil }
            return response(from: entry)
        case .cacheThenNetwork:
            guard let entry, mayServeUnvalidated(entry) else { return nil }
            return response(from: entry)
        }
    }

    /// Asks the server whether the cached entry is still good (`If-None-Match`, `If-Modified-Since`).
    func addValidators(to engineRequest: inout EngineRequest) {
        guard let entry else { return }
        if let etag = entry.etag, request.headers["If-None-Match"] == nil {
            engineRequest.headers["If-None-Match"] = etag
        }
        if let lastModified = entry.lastModified, request.headers["If-Modified-Since"] == nil {
            engineRequest.headers["If-Modified-Since"] = lastModified
        }
    }

    /// A `304` serves the stored body with its header fields refreshed; a storable success is stored.
    func afterNetwork(_ response: Response) -> Response {
        if response.status == 304, let entry {
            let refreshed = cache.refresh(entry, with: response.headers, requestedAt: requestedAt)
            var revalidated = self.response(from: refreshed)
            // The server was asked: the exchange's URL, time and measurements are this response's.
            revalidated.source = .revalidated
            revalidated.url = response.url
            revalidated.duration = response.duration
            revalidated.metricsBox = response.metricsBox
            return revalidated
        }
        if CacheRules.isStorable(status: response.status, response: response.headers, request: requestHeaders) {
            cache.store(
                key, requestHeaders: requestHeaders, status: response.status, headers: response.headers,
                body: response.data, requestedAt: requestedAt)
        }
        return response
    }

    /// After a successful unsafe request (`POST`, `PUT`, `PATCH`, `DELETE`, ...: a 2xx or 3xx answer), forgets what
    /// the cache holds for its URL and for its `Location` and `Content-Location`, when they are on the same origin
    /// (RFC 9111 section 4.4).
    static func invalidate(after response: Response, method: HTTPMethod, url: URL?, in cache: ResponseCache) {
        guard let url, ![.get, .head, .options, .trace].contains(method),
            (200...399).contains(response.status)
        else { return }
        cache.invalidate(url: url.absoluteString)
        for name in ["Location", "Content-Location"] {
            guard let value = response.headers[name],
                let target = URL(string: URLComposition.keepingEscapes(value), relativeTo: url)?.absoluteURL,
                Redirects.sameOrigin(url, target)
            else { continue }
            cache.invalidate(url: target.absoluteString)
        }
    }

    private func response(from entry: ResponseCache.Entry) -> Response {
        var response = Response(
            request: request, status: entry.status, headers: HTTPHeaders(entry.headers),
            url: request.url.flatMap(URL.init(string:)), data: entry.body)
        response.source = .cache
        return response
    }
}
