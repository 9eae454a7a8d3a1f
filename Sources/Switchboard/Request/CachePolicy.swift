/// How the response cache serves a request (`Request.cachePolicy`, `Endpoint.cachePolicy`).
///
/// Whatever the policy, the cache keeps HTTP's rules (see `ResponseCache`): nothing marked `no-store` is stored, a
/// response is only served to a request with the same values of the headers it `Vary`s on, and a response marked
/// `no-cache`, or `must-revalidate` once past its lifetime, is never served without asking the server first. A
/// request sent with `Cache-Control: no-store` bypasses the cache; with `no-cache`, it revalidates.
public enum CachePolicy: Sendable, Hashable {
    /// The network only; the cache is neither read nor written. The default.
    case networkOnly
    /// HTTP caching as a browser's private cache does it (RFC 9111): a stored response that is still fresh (by its
    /// `max-age`, or `Expires` less `Date`, less its `Age`) is served without the network; a stale one is revalidated
    /// with `If-None-Match` / `If-Modified-Since`, a `304` serving the stored body with its header fields refreshed.
    /// A response without an explicit lifetime is revalidated every time (unless `ResponseCache.heuristicFreshness`).
    case http
    /// A cached response younger than `maxAge` if there is one, else the network (revalidating a stale entry with
    /// `If-None-Match` / `If-Modified-Since`: a `304` serves and refreshes the cached body). `maxAge` overrides the
    /// response's own lifetime; `no-cache` and `must-revalidate` still hold.
    case cacheElseNetwork(maxAge: Duration)
    /// The cached response first, whatever its age, then the network's: two deliveries (two `onSuccess` calls, or
    /// two elements of `Center.responses(_:)`), `Response.source` telling them apart (the second is `.network`, or
    /// `.revalidated` when the server answered `304` and the stored body was served again). A stored response that must be
    /// revalidated is not delivered first.
    case cacheThenNetwork
    /// The cached response whatever its age, or `HTTPError.Code.cacheMiss`; never the network. A stored response
    /// that must be revalidated first (`no-cache`, or `must-revalidate` past its lifetime) is a miss.
    case cacheOnly
}
