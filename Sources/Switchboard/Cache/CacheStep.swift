import Foundation

/// The cache's part in one exchange: serve from the cache before the network, validate a stale entry, store what
/// comes back.
struct CacheStep {
    let cache: ResponseCache
    let policy: CachePolicy
    let key: String
    let request: Request
    let entry: ResponseCache.Entry?

    /// `nil` when the request does not use the cache: no cache, `.networkOnly`, or a method that is not cached.
    init?(request: Request, engineRequest: EngineRequest, configuration: Center.Configuration) {
        guard let cache = configuration.cache, request.cachePolicy != .networkOnly, request.kind == .data,
              let url = engineRequest.url
        else { return nil }
        let method = engineRequest.method
        guard method == .get || method == .head || (method == .post && request.cachesPOST) else { return nil }
        var body = Data()
        switch engineRequest.body {
        case .none: break
        case .data(let data): body = data
        case .file, .stream: return nil  // a body the key cannot digest
        }
        self.cache = cache
        policy = request.cachePolicy
        key = ResponseCache.key(method: method, url: url.absoluteString, body: body)
        self.request = request
        entry = cache.entry(for: key)
    }

    /// The cached response to serve before (or instead of) the network: for `.cacheOnly` (or a miss error), a fresh
    /// enough entry for `.cacheElseNetwork`, any entry for `.cacheThenNetwork`.
    func beforeNetwork() throws(HTTPError) -> Response? {
        switch policy {
        case .networkOnly:
            return nil
        case .cacheOnly:
            guard let entry else {
                throw HTTPError(.cacheMiss, "nothing is cached for \(key)", request: request)
            }
            return response(from: entry)
        case .cacheElseNetwork(let maxAge):
            guard let entry, cache.age(of: entry) <= maxAge else { return nil }
            return response(from: entry)
        case .cacheThenNetwork:
            return entry.map(response(from:))
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

    /// A `304` serves the cached body (restamped); a success is stored.
    func afterNetwork(_ response: Response) -> Response {
        if response.status == 304, entry != nil, let refreshed = cache.refresh(key: key) {
            var revalidated = self.response(from: refreshed)
            revalidated.metrics = response.metrics  // the server was asked: what the exchange measured still holds
            return revalidated
        }
        if (200...299).contains(response.status) {
            cache.store(key: key, status: response.status, headers: response.headers.dictionary, body: response.data)
        }
        return response
    }

    private func response(from entry: ResponseCache.Entry) -> Response {
        var response = Response(
            request: request, status: entry.status, headers: HTTPHeaders(entry.headers),
            url: request.url.flatMap(URL.init(string:)), data: entry.body)
        response.source = .cache
        return response
    }
}
