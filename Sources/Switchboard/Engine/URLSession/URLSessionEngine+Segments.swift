import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The `Range` requests of a download fetched in segments.
///
/// URLSession has no backpressure of its own: a data task's body is handed to the delegate however slowly the
/// delegate writes it. Fetching a file in segments, one request after the other on the kept-alive connection, bounds
/// what can pile up to about a segment. Segments after the first carry `If-Range`, so a file that changes meanwhile
/// comes back whole (a 200), and the file restarts from zero.
///
/// On Linux the delegate runs in URLSession's work queue (`InlineDelegateQueue`), so a chunk is written before libcurl
/// reads the next, and nothing piles up whatever the segment's size (a 1 GiB download over loopback: 7.5-8.1 MiB
/// above baseline with 16 MiB segments). Every segment there is the largest (`adapts` is `false`): each costs a round
/// trip and a task start, which smaller ones would pay more often.
///
/// Where the delegate runs on a queue of URLSession's own (Apple platforms), the segments adapt: URLSession's thread
/// can outrun the delegate on a fast network, and the pile-up grows with the segment (measured on Linux before its
/// delegate ran inline: 33-40 MiB above baseline with 16 MiB segments, 12-14 with 2 MiB). Each segment is then sized
/// from the one before: 8 of the shortest waits seen so far, in bytes at the speed the segment arrived, between
/// `smallest` and the engine's `downloadSegmentSize`. A near server gets small segments (where a wait costs little),
/// a distant one large segments (where little piles up, the network being the slow side).
///
/// With a speed limit (`maxReceiveBytesPerSecond`), segments are a quarter of a second's worth of bytes (at least
/// 4 KiB) and each starts only when the bytes before it are within the limit: the average holds, while each segment
/// arrives at the network's speed.
struct Segments: Sendable {
    /// The first segment's size, and the least any segment is sized to.
    static let smallest: Int64 = 2 << 20
    /// How many waits' worth of bytes a segment is.
    static let roundTrips = 8.0
    /// Whether segments start at `smallest` and are sized from how the last one arrived; else every one is the
    /// largest. Only where the delegate does not write in URLSession's own thread (see the type's comment).
    static var adapts: Bool { !URLSessionEngine.delegateRunsInWorkQueue }

    /// How a segment arrived: the wait for its head, and its body's bytes and time from the head to the end.
    struct Timing: Sendable {
        var latency: Duration
        var bytes: Int64
        var duration: Duration
    }

    /// The next segment's size.
    private(set) var size: Int64
    /// The largest segment (the engine's `downloadSegmentSize`, or a paced download's quarter second).
    let largest: Int64
    /// The speed limit, in bytes per second, or `nil`.
    let rate: Int64?
    /// Where the caller asked the body to start (the resume offset), and whether it asked for a range at all.
    let startOffset: Int64
    let resumed: Bool
    /// The first byte of the segment being fetched.
    private(set) var current: Int64
    private(set) var total: Int64?
    private(set) var validator: String?
    private(set) var count = 0
    /// The shortest wait for a segment's head so far.
    private var latency: Duration?

    /// A plan for a `GET` into a file, or `nil` when the request is not one to split (a body, a range of the
    /// caller's own, segments turned off).
    init?(for request: EngineRequest, size: Int?) {
        // Only a GET into a file is sent in segments: anything else is answered before a limit is read (an array
        // of the limits, made for every request, cost an allocation each).
        guard case .file(_, let offset) = request.destination, request.body == .none, request.method == .get else {
            return nil
        }
        let rate = request.maxReceiveBytesPerSecond
        let paced = rate.map { max(4096, $0 / 4) }
        var smallest = size.map(Int64.init)
        if let paced { smallest = min(smallest ?? paced, paced) }
        guard let size = smallest, size > 0 else { return nil }
        let range = request.headers["Range"]
        guard range == nil || range == "bytes=\(offset)-" else { return nil }
        largest = size
        self.size = paced == nil && Self.adapts ? min(size, Self.smallest) : size
        self.rate = rate
        startOffset = offset
        resumed = range != nil
        current = offset
    }

    /// How long to wait before the next segment, `elapsed` after the first started: until the bytes so far are
    /// within the speed limit.
    func delay(after elapsed: Duration) -> Duration {
        guard let rate else { return .zero }
        let budget = Duration.seconds(Double(current - startOffset) / Double(rate))
        return max(.zero, budget - elapsed)
    }

    /// `roundTrips` times the wait for the head, in bytes at the speed `timing` shows, within the bounds.
    static func size(after timing: Timing, smallest: Int64, largest: Int64) -> Int64 {
        guard timing.duration > .zero, timing.bytes > 0 else { return smallest }
        let bytesPerSecond = Double(timing.bytes) / timing.duration.seconds
        let wanted = bytesPerSecond * timing.latency.seconds * roundTrips
        guard wanted.isFinite else { return largest }
        return max(smallest, Int64(min(wanted, Double(largest))))
    }

    /// The `Range` header of the segment to fetch now.
    var range: String {
        "bytes=\(current)-\(current + size - 1)"
    }

    /// Whether a segment's `206` holds the range asked for: a `Content-Range` that starts at `current`, ends within
    /// the segment, and as long as the body that came (`received`, the file's length from `startOffset`).
    func holds(_ response: HTTPURLResponse, received: Int64) -> Bool {
        guard let range = ContentRange(response.value(forHTTPHeaderField: "Content-Range")), let start = range.start,
            let end = range.end, range.total != nil
        else { return false }
        return start == current && end < current + size && range.bodyMismatch(received: received - start) == nil
    }

    /// Records a segment's `206`, and sizes the next from how the segment arrived (unless the download is paced);
    /// returns whether another segment is needed.
    mutating func advance(after response: HTTPURLResponse, timing: Timing? = nil) -> Bool {
        count += 1
        if Self.adapts, rate == nil, var timing {
            let shortest = min(latency ?? timing.latency, timing.latency)
            latency = shortest
            timing.latency = shortest
            size = Self.size(after: timing, smallest: min(Self.smallest, largest), largest: largest)
        }
        guard response.statusCode == 206, let range = ContentRange(response.value(forHTTPHeaderField: "Content-Range")),
            let end = range.end, let total = range.total
        else { return false }
        self.total = total
        if validator == nil {
            let etag = response.value(forHTTPHeaderField: "ETag").flatMap { $0.hasPrefix("W/") ? nil : $0 }
            validator = etag ?? response.value(forHTTPHeaderField: "Last-Modified")
        }
        current = end + 1
        return current < total
    }

    /// The request for the next segment: the range, and the validator that keeps the segments of one version.
    func nextRequest(from base: URLRequest) -> URLRequest {
        var next = base
        // Without a validator a changed file could not be told apart: ask for all the rest at once.
        next.setValue(validator == nil ? "bytes=\(current)-" : range, forHTTPHeaderField: "Range")
        next.setValue(validator, forHTTPHeaderField: "If-Range")
        return next
    }

    /// The response as if one request had fetched everything the caller asked for: a `200` for the whole file, or
    /// a `206` from the resume offset.
    func overall(_ last: HTTPURLResponse) -> HTTPURLResponse {
        guard count > 1 || !resumed, last.statusCode == 206, let total, let url = last.url else { return last }
        var headers = last.headerFields.filter {
            $0.key.lowercased() != "content-range" && $0.key.lowercased() != "content-length"
        }
        headers["Content-Length"] = String(total - startOffset)
        var status = 200
        if resumed {
            status = 206
            headers["Content-Range"] = "bytes \(startOffset)-\(total - 1)/\(total)"
        }
        return HTTPURLResponse(url: url, statusCode: status, httpVersion: "HTTP/1.1", headerFields: headers) ?? last
    }
}
