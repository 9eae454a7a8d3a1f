import Foundation

/// One server-sent event (`text/event-stream`), as the WHATWG HTML standard's event-stream rules dispatch it.
public struct ServerSentEvent: Sendable, Hashable {
    /// The event type: the last `event:` field of its block, or `"message"`.
    public var type: String
    /// The `data:` fields of its block, joined with `"\n"`.
    public var data: String
    /// The last event ID as of this event (the standard's `lastEventId`): set by an `id:` field in this block or an
    /// earlier one (what a client reconnecting sends as `Last-Event-ID`); `""` when there has been none.
    public var id: String
    /// The reconnection time a `retry:` field in this block asked for, if any.
    public var retry: Duration?

    /// Creates an event.
    public init(type: String = "message", data: String, id: String = "", retry: Duration? = nil) {
        self.type = type
        self.data = data
        self.id = id
        self.retry = retry
    }
}

/// Splits bytes into lines at LF, CRLF or CR, across chunk boundaries (a CR at the end of one chunk and an LF at
/// the start of the next are one terminator).
///
/// A line longer than `limit` bytes (without its terminator) is refused, wherever the chunks were cut: the part of
/// it that arrived is not held beyond the limit, so a body without line breaks cannot grow the splitter without end.
struct LineSplitter: Sendable {
    /// The most bytes a line may have.
    let limit: Int
    private var partial: [UInt8] = []
    private var afterCR = false

    init(limit: Int = .max) {
        self.limit = max(0, limit)
    }

    /// Calls `line` with each line the chunk completes, without its terminator.
    ///
    /// - Throws: `.streamOverflow` at the first line longer than `limit`, after `line` was called with every line
    ///   before it.
    mutating func push(_ chunk: Data, _ line: (ArraySlice<UInt8>) -> Void) throws(HTTPError) {
        // `withUnsafeBytes` rethrows untyped: the closure answers whether it stopped at a line too long instead.
        let tooLong = chunk.withUnsafeBytes { (bytes: UnsafeRawBufferPointer) -> Bool in
            // An empty chunk changes nothing: between a CR and its LF, it made the LF a second line break.
            if bytes.isEmpty { return false }
            var start = 0
            var index = 0
            if afterCR, bytes.first == 0x0A {
                start = 1
                index = 1
            }
            afterCR = false
            while index < bytes.count {
                let byte = bytes[index]
                if byte == 0x0A || byte == 0x0D {
                    guard partial.count + (index - start) <= limit else { return true }
                    if partial.isEmpty {
                        line(ArraySlice(bytes[start..<index]))
                    } else {
                        partial.append(contentsOf: bytes[start..<index])
                        line(partial[...])
                        partial.removeAll(keepingCapacity: true)
                    }
                    if byte == 0x0D {
                        if index + 1 < bytes.count {
                            if bytes[index + 1] == 0x0A { index += 1 }
                        } else {
                            afterCR = true
                        }
                    }
                    start = index + 1
                }
                index += 1
            }
            guard partial.count + (bytes.count - start) <= limit else { return true }
            if start < bytes.count { partial.append(contentsOf: bytes[start...]) }
            return false
        }
        if tooLong { throw overflow() }
    }

    /// The last line, when the bytes did not end with a terminator.
    mutating func finish() -> ArraySlice<UInt8>? {
        defer { partial = [] }
        return partial.isEmpty ? nil : partial[...]
    }

    /// The error for a line longer than the limit; the splitter holds nothing after it.
    private mutating func overflow() -> HTTPError {
        partial = []
        return HTTPError(
            .streamOverflow,
            "a line of the stream is longer than \(limit) bytes, the most a stream holds for its reader "
                + "(Request.streamBufferSize; raise it to read longer lines)")
    }
}

/// The WHATWG rule for an event stream's response: its `Content-Type` must be `text/event-stream`, or the connection
/// fails and is not reopened. A `200` with `text/html` (a captive portal's login page, a proxy's error page) is no
/// stream of events, and reading it as one showed an app a healthy, quiet feed.
enum EventStreamType {
    static let mediaType = "text/event-stream"

    /// The error for a response whose head is not an event stream's, or `nil` when it is one.
    static func refusal(_ headers: HTTPHeaders, status: Int, url: URL?) -> HTTPError? {
        let type = headers["Content-Type"]
        if let type, ResponseDecoding.mediaType(of: type) == mediaType { return nil }
        let received = type.map { "\"\($0)\"" } ?? "no Content-Type"
        let target = url.map { " from \(Redaction.standard.url($0))" } ?? ""
        return HTTPError(
            .decoding,
            "expected an event stream (\(mediaType)) but the \(StatusReason.described(status)) answer\(target) has "
                + "\(received); the connection is not reopened")
    }
}

/// Parses `text/event-stream` bytes incrementally, by the WHATWG rules: a byte order mark at the start is skipped;
/// a line starting with `:` is a comment; `field: value` drops one space after the colon; a line without a colon is
/// a field with an empty value; a blank line dispatches the block, unless its data is empty; `id` with a NUL is
/// ignored; `retry` counts only when it is all digits; unknown fields are ignored.
struct ServerSentEventParser: ChunkDecoder {
    private var lines: LineSplitter
    private var started = false
    private var pendingBOM: [UInt8] = []
    private var data = ""
    private var hasData = false
    private var type = ""
    private var retry: Duration?
    /// The last event ID buffer: set by each `id` field, kept across events.
    private(set) var lastEventID = ""
    /// The last event ID as of the last block a blank line closed (with or without data): what a reconnection
    /// sends as `Last-Event-ID`. An `id` in a block the connection cut off does not count.
    private(set) var dispatchedEventID = ""
    /// The reconnection time from the latest valid `retry` field, kept across events.
    private(set) var reconnectionTime: Duration?

    /// - Parameter limit: the most bytes a line, and an event's data, may have (`Request.streamBufferSize`).
    init(lastEventID: String = "", reconnectionTime: Duration? = nil, limit: Int = .max) {
        lines = LineSplitter(limit: limit)
        self.lastEventID = lastEventID
        dispatchedEventID = lastEventID
        self.reconnectionTime = reconnectionTime
    }

    /// Calls `event` with each event the chunk completes.
    ///
    /// - Throws: `.streamOverflow` at the first line, or event's data, longer than the limit, after `event` was
    ///   called with every event before it.
    mutating func push(_ chunk: Data, _ event: (ServerSentEvent) -> Void) throws(HTTPError) {
        var chunk = chunk
        if !started {
            // The byte order mark (EF BB BF) may itself arrive split across chunks.
            pendingBOM.append(contentsOf: chunk)
            let bom: [UInt8] = [0xEF, 0xBB, 0xBF]
            if pendingBOM.count < 3, bom.starts(with: pendingBOM) { return }
            started = true
            chunk = Data(pendingBOM.starts(with: bom) ? pendingBOM.dropFirst(3) : pendingBOM[...])
            pendingBOM = []
        }
        // The splitter is taken out while it runs (no copy of its buffer), since `process` changes `self`.
        var splitter = LineSplitter()
        swap(&splitter, &lines)
        var complete: [[UInt8]] = []
        var refused: HTTPError?
        do {
            try splitter.push(chunk) { complete.append(Array($0)) }
        } catch {
            refused = error
        }
        lines = splitter
        for line in complete {
            if let ready = try process(line[...]) { event(ready) }
        }
        if let refused { throw refused }
    }

    /// The end of the body completes nothing: an event without its closing blank line is dropped.
    func finish(_ event: (ServerSentEvent) -> Void) {}

    private mutating func process(_ line: ArraySlice<UInt8>) throws(HTTPError) -> ServerSentEvent? {
        if line.isEmpty { return dispatch() }
        if line.first == UInt8(ascii: ":") { return nil }
        let field: ArraySlice<UInt8>
        var value: ArraySlice<UInt8>
        if let colon = line.firstIndex(of: UInt8(ascii: ":")) {
            field = line[..<colon]
            value = line[(colon + 1)...]
            if value.first == UInt8(ascii: " ") { value = value.dropFirst() }
        } else {
            field = line
            value = []
        }
        switch String(decoding: field, as: UTF8.self) {
        case "event":
            type = String(decoding: value, as: UTF8.self)
        case "data":
            // Lines are bounded by the splitter; their sum is bounded here, so that an event that never ends (data
            // lines without a blank line) cannot grow without end either.
            guard data.utf8.count + (hasData ? 1 : 0) + value.count <= lines.limit else {
                data = ""
                hasData = false
                throw HTTPError(
                    .streamOverflow,
                    "an event of the stream has more than \(lines.limit) bytes of data, the most a stream holds for "
                        + "its reader (Request.streamBufferSize; raise it to read larger events)")
            }
            if hasData { data += "\n" }
            data += String(decoding: value, as: UTF8.self)
            hasData = true
        case "id":
            if !value.contains(0) { lastEventID = String(decoding: value, as: UTF8.self) }
        case "retry":
            if !value.isEmpty, value.allSatisfy({ (0x30...0x39).contains($0) }),
                let milliseconds = Int64(String(decoding: value, as: UTF8.self))
            {
                retry = .milliseconds(milliseconds)
                reconnectionTime = retry
            }
        default:
            break
        }
        return nil
    }

    private mutating func dispatch() -> ServerSentEvent? {
        defer {
            data = ""
            hasData = false
            type = ""
            retry = nil
        }
        dispatchedEventID = lastEventID
        guard hasData else { return nil }
        return ServerSentEvent(type: type.isEmpty ? "message" : type, data: data, id: lastEventID, retry: retry)
    }
}
