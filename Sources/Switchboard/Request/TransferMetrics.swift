/// What an engine measured of one exchange: how long its phases took, how many bytes went each way, and over which
/// connection. Every value the engine could not measure is `nil`; none is estimated.
///
/// ```swift
/// let response = try await center.send { $0.api = "users" }
/// if let metrics = response.metrics {
///     print(metrics.total, metrics.timeToFirstByte ?? .zero, metrics.reusedConnection ?? false)
/// }
/// ```
///
/// Times run from the moment the engine began the exchange (after any wait for a free connection slot) and cover
/// every redirect it followed. The connection phases (`nameLookup`, `connect`, `secureConnection`) and the byte
/// counts are those of the last request, the one that gave the response; the phases are `nil` when that request went
/// over a connection opened earlier.
///
/// What each engine measures:
/// - `CurlEngine`: everything, from libcurl.
/// - `URLSessionEngine` on Apple platforms: everything, from URLSession's task metrics.
/// - `URLSessionEngine` on Linux, where URLSession gathers no metrics: `total`, `timeToFirstByte` (not for an
///   in-memory `GET` or `HEAD` without a progress handler, whose body URLSession hands over with its head),
///   `redirects`, and the body bytes (received: only for a body without `Content-Encoding`, which URLSession decodes
///   before the engine sees it); the rest is `nil`.
/// - `StubEngine`, a response from the cache or a stub: no metrics at all.
public struct TransferMetrics: Sendable, Hashable {
    /// How long resolving the host name took.
    public var nameLookup: Duration?
    /// How long opening the TCP connection took, after the name lookup.
    public var connect: Duration?
    /// How long the TLS handshake took, after the TCP connection; `nil` for plain `http`.
    public var secureConnection: Duration?
    /// From the start to the first byte of the response.
    public var timeToFirstByte: Duration?
    /// From the start to the end of the body.
    public var total: Duration
    /// The request body bytes sent (of the last request).
    public var bytesSent: Int64?
    /// The response body bytes received, as they came over the wire: before any `Content-Encoding` was decoded, not
    /// counting chunked framing.
    public var bytesReceived: Int64?
    /// Whether the last request went over a connection an earlier exchange opened.
    public var reusedConnection: Bool?
    /// The protocol of the response: `HTTP/1.1`, `HTTP/2`, `HTTP/3`.
    public var httpVersion: String?
    /// The IP address of the server (or proxy) the connection went to.
    public var remoteAddress: String?
    /// Its port.
    public var remotePort: Int?
    /// How many redirects the engine followed before the response.
    public var redirects: Int
    /// How long the request waited for a place under its center's `maxRequestsInFlight` before the engine got it;
    /// `nil` without a limit. Not part of `total`.
    public var queued: Duration? = nil

    /// The same metrics for an exchange that began `offset` earlier (redirects before it, say): the times from the
    /// start grow by `offset`; the phases and counts stay.
    func starting(earlier offset: Duration, redirects: Int) -> TransferMetrics {
        var metrics = self
        metrics.total += offset
        metrics.timeToFirstByte = timeToFirstByte.map { $0 + offset }
        metrics.redirects = redirects
        return metrics
    }
}

/// Metrics kept by reference in a response: the values are 200 bytes, which every copy of a response (and of an
/// error holding one) would move, and which made each step's async frame larger. Shared, never changed after it is
/// made: setting `metrics` makes a new one.
final class MetricsBox: Sendable {
    let value: TransferMetrics

    init(_ value: TransferMetrics) {
        self.value = value
    }
}

// The initialiser delegates to the memberwise one, in an extension so that the compiler still makes it: one that
// set each stored property itself built the value in a temporary and copied it out, a retain and a release for each
// of its strings, for every exchange an engine measures.
extension TransferMetrics {
    /// Creates metrics; an engine fills in what it measured.
    public init(
        total: Duration, timeToFirstByte: Duration? = nil, nameLookup: Duration? = nil, connect: Duration? = nil,
        secureConnection: Duration? = nil, bytesSent: Int64? = nil, bytesReceived: Int64? = nil,
        reusedConnection: Bool? = nil, httpVersion: String? = nil, remoteAddress: String? = nil,
        remotePort: Int? = nil, redirects: Int = 0
    ) {
        self.init(
            nameLookup: nameLookup, connect: connect, secureConnection: secureConnection,
            timeToFirstByte: timeToFirstByte, total: total, bytesSent: bytesSent, bytesReceived: bytesReceived,
            reusedConnection: reusedConnection, httpVersion: httpVersion, remoteAddress: remoteAddress,
            remotePort: remotePort, redirects: redirects)
    }
}
