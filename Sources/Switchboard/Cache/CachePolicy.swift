/// How the response cache serves a request (`Request.cachePolicy`, `Endpoint.cachePolicy`).
public enum CachePolicy: Sendable, Hashable {
    /// The network only; the cache is neither read nor written. The default.
    case networkOnly
    /// A cached response younger than `maxAge` if there is one, else the network (revalidating a stale entry with
    /// `If-None-Match` / `If-Modified-Since`: a `304` serves and refreshes the cached body).
    case cacheElseNetwork(maxAge: Duration)
    /// The cached response first, whatever its age, then the network's: two deliveries (two `onSuccess` calls, or
    /// two elements of `Center.responses(_:)`), `Response.source` telling them apart.
    case cacheThenNetwork
    /// The cached response whatever its age, or `HTTPError.Code.cacheMiss`; never the network.
    case cacheOnly
}
