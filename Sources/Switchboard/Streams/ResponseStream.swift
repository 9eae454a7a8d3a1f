import Foundation

/// A response body read as it arrives: the head first, then the body as an asynchronous sequence of chunks, with
/// adapters for lines (`lines`), JSON Lines (`jsonLines(_:decoder:)`) and server-sent events (`events`).
///
/// ```swift
/// let stream = try await center.stream { $0.api = "feed" }
/// for try await line in stream.lines {
///     print(line)
/// }
/// ```
///
/// A stream is read once. Ending the iteration early (`break`, a thrown error, the reading task cancelled), or
/// dropping a stream that was never read, cancels the transfer; so does `Center.cancel(_:)` with its `id`. A
/// failure after the head (the connection dropped, the request cancelled) is thrown by the iteration, as
/// `HTTPError`. When the consumer reads slower than the body arrives, at most `Request.streamBufferSize` bytes wait
/// for it (see there for what each engine does when that is full).
public struct ResponseStream: AsyncSequence, Sendable {
    public typealias Element = Data

    /// The request's identifier: `Center.cancel(_:)` with it ends the stream.
    public let id: RequestID
    /// The status code: one the request accepts (2xx unless set otherwise).
    public let status: Int
    /// The response's header fields.
    public let headers: HTTPHeaders
    /// The URL that answered, after redirects.
    public let url: URL?

    let lease: Lease

    init(id: RequestID, head: StreamChannel.Head, channel: StreamChannel, cancel: @escaping @Sendable () -> Void) {
        self.id = id
        status = head.status
        headers = head.headers
        url = head.url
        lease = Lease(channel: channel, cancel: cancel)
    }

    /// Ends the stream now: the transfer is cancelled and an iteration in progress throws `.cancelled`.
    public func cancel() {
        lease.end()
    }

    public func makeAsyncIterator() -> Iterator {
        Iterator(reader: Reader(lease: lease, first: lease.claim()))
    }

    /// Reads the chunks in order.
    public struct Iterator: AsyncIteratorProtocol, Sendable {
        let reader: Reader

        /// The most bytes the stream holds for its reader (`Request.streamBufferSize`): also the most a line or an
        /// event read from it may have.
        var heldLimit: Int { reader.lease.channel.limit }

        /// Cancels the transfer: nothing more will be read.
        func stop() {
            reader.lease.end()
        }

        /// The next chunk of the body, or `nil` at its end.
        ///
        /// - Throws: `HTTPError`: the transfer failed or was cancelled after the head.
        public mutating func next() async throws -> Data? {
            try await reader.next()
        }
    }

    /// Keeps the transfer running while someone may still read it.
    final class Lease: Sendable {
        let channel: StreamChannel
        private let cancelTransfer: @Sendable () -> Void
        private let claimed = Locked(false)

        init(channel: StreamChannel, cancel: @escaping @Sendable () -> Void) {
            self.channel = channel
            cancelTransfer = cancel
        }

        deinit {
            // Dropped without being read to the end: nobody will read the rest.
            if !claimed.withLock({ $0 }) { end() }
        }

        /// Whether this is the first iterator (the one that reads).
        func claim() -> Bool {
            claimed.withLock { claimed in
                defer { claimed = true }
                return !claimed
            }
        }

        func end() {
            guard !channel.hasEnded else { return }
            channel.abandon()
            cancelTransfer()
        }
    }

    /// One iteration; ending it before the body's end cancels the transfer.
    final class Reader: Sendable {
        let lease: Lease
        private let first: Bool

        init(lease: Lease, first: Bool) {
            self.lease = lease
            self.first = first
        }

        deinit {
            if first { lease.end() }
        }

        func next() async throws -> Data? {
            guard first else {
                throw HTTPError(.unsupported, "a response stream can be read once; it is being read already")
            }
            let lease = lease
            return try await withTaskCancellationHandler {
                try await lease.channel.next()
            } onCancel: {
                lease.end()
            }
        }
    }
}

extension ResponseStream {
    /// The body as lines of text (UTF-8), split at LF, CRLF or CR; the terminators are not included. A last line
    /// without a terminator comes at the end.
    ///
    /// A line longer than the request's `streamBufferSize` ends the iteration with `HTTPError` `.streamOverflow`
    /// (after the lines before it), and cancels the transfer.
    public var lines: Lines { Lines(stream: self) }

    /// The body as JSON Lines: each line that is not blank decoded as `T`.
    ///
    /// ```swift
    /// for try await item in stream.jsonLines(Item.self) { print(item) }
    /// ```
    ///
    /// A line that does not decode ends the iteration with `HTTPError` `.decoding`, naming the line's number. With a
    /// `JSONDecoder` whose settings Switchboard follows (see `Response.decode(_:using:)`), each line is parsed by
    /// Switchboard and decoded as `Response.decode(_:using:)` decodes a body.
    public func jsonLines<T: Decodable>(_ type: T.Type, decoder: JSONDecoder = JSONDecoder()) -> JSONLines<T> {
        JSONLines(stream: self, decoder: decoder)
    }

    /// The body as server-sent events (`text/event-stream`), parsed by the WHATWG rules, from this one response
    /// (it does not reconnect when the connection ends).
    ///
    /// A response whose `Content-Type` is not `text/event-stream` is no event stream: the iteration throws
    /// `HTTPError` `.decoding`, naming the type received, before reading anything, and cancels the transfer.
    ///
    /// A line, or an event's data, longer than the request's `streamBufferSize` ends the iteration with `HTTPError`
    /// `.streamOverflow` (after the events before it), and cancels the transfer.
    public var events: ServerSentEvents { ServerSentEvents(stream: self) }

    /// Lines of a response body.
    public struct Lines: AsyncSequence, Sendable {
        public typealias Element = String
        let stream: ResponseStream

        public func makeAsyncIterator() -> Iterator {
            Iterator(chunks: stream.makeAsyncIterator())
        }

        /// Reads the lines in order.
        public struct Iterator: AsyncIteratorProtocol, Sendable {
            var reader: DecodingReader<LineDecoder>

            init(chunks: ResponseStream.Iterator) {
                reader = DecodingReader(chunks: chunks, decoder: LineDecoder(limit: chunks.heldLimit))
            }

            /// The next line, or `nil` at the end of the body.
            public mutating func next() async throws -> String? {
                try await reader.next()
            }
        }
    }

    /// JSON Lines of a response body, decoded.
    public struct JSONLines<T: Decodable>: AsyncSequence, @unchecked Sendable {
        // Safety: `decoder` is only read (a JSONDecoder is not changed by decoding); every other field is Sendable.
        public typealias Element = T
        let stream: ResponseStream
        let decoder: JSONDecoder

        public func makeAsyncIterator() -> Iterator {
            Iterator(
                lines: stream.lines.makeAsyncIterator(), decoder: decoder,
                parsedOptions: JSONValueDecoder.Options(decoder))
        }

        /// Reads and decodes the lines in order.
        public struct Iterator: AsyncIteratorProtocol {
            var lines: Lines.Iterator
            let decoder: JSONDecoder
            /// The settings to decode lines parsed by Switchboard with, when `decoder` has settings this follows.
            let parsedOptions: JSONValueDecoder.Options?
            var number = 0

            /// The next value, or `nil` at the end of the body.
            ///
            /// - Throws: `HTTPError` `.decoding` for a line that is not a `T`; the stream's failure.
            public mutating func next() async throws -> T? {
                while let line = try await lines.next() {
                    number += 1
                    guard line.contains(where: { !$0.isWhitespace }) else { continue }
                    do {
                        // Parsed by Switchboard and decoded from that, as a response body is, when the decoder has
                        // settings that Switchboard follows (see `Response.decode(_:using:)`).
                        let data = Data(line.utf8)
                        var parsed: JSON?
                        if parsedOptions != nil {
                            let (value, decodable) = try JSON.parsed(data)
                            if decodable { parsed = value }
                        }
                        return try JSONValueDecoder.decode(
                            T.self, parsed: parsed, options: parsedOptions, else: decoder, from: data)
                    } catch {
                        throw HTTPError(
                            .decoding, "line \(number) of the stream is not a \(T.self): \(error)", underlying: error)
                    }
                }
                return nil
            }
        }
    }

    /// Server-sent events of a response body.
    public struct ServerSentEvents: AsyncSequence, Sendable {
        public typealias Element = ServerSentEvent
        let stream: ResponseStream

        public func makeAsyncIterator() -> Iterator {
            Iterator(stream: stream)
        }

        /// Reads the events in order.
        public struct Iterator: AsyncIteratorProtocol, Sendable {
            var reader: DecodingReader<ServerSentEventParser>
            /// Why the response is no event stream, thrown by the first `next()`, with the stream to cancel.
            private var refusal: (error: HTTPError, stream: ResponseStream)?

            init(stream: ResponseStream) {
                let chunks = stream.makeAsyncIterator()
                reader = DecodingReader(chunks: chunks, decoder: ServerSentEventParser(limit: chunks.heldLimit))
                refusal = EventStreamType.refusal(stream.headers, status: stream.status, url: stream.url).map {
                    ($0, stream)
                }
            }

            /// The next event, or `nil` at the end of the body (an event not closed by a blank line is dropped, as
            /// the rules say).
            public mutating func next() async throws -> ServerSentEvent? {
                if let refusal {
                    refusal.stream.cancel()
                    throw refusal.error
                }
                return try await reader.next()
            }
        }
    }
}

/// Turns the chunks of a body into the elements they complete (lines, events).
protocol ChunkDecoder: Sendable {
    associatedtype Element: Sendable
    /// Calls `emit` with each element the chunk completes; throws after emitting those before a fault.
    mutating func push(_ chunk: Data, _ emit: (Element) -> Void) throws(HTTPError)
    /// Calls `emit` with what the end of the body completes.
    mutating func finish(_ emit: (Element) -> Void)
}

/// Reads a stream's chunks through a decoder, one element at a time.
struct DecodingReader<Decoder: ChunkDecoder>: Sendable {
    var chunks: ResponseStream.Iterator
    var decoder: Decoder
    private var ready: [Decoder.Element] = []
    private var index = 0
    private var ended = false
    /// A fault the decoder found after the elements in `ready`: thrown once they are read.
    private var fault: HTTPError?

    init(chunks: ResponseStream.Iterator, decoder: Decoder) {
        self.chunks = chunks
        self.decoder = decoder
    }

    mutating func next() async throws -> Decoder.Element? {
        while index == ready.count {
            if let fault {
                // The rest of the body is not read: the transfer stops now, and the iteration ends with the fault.
                self.fault = nil
                ended = true
                chunks.stop()
                throw fault
            }
            if ended { return nil }
            var completed: [Decoder.Element] = []
            if let chunk = try await chunks.next() {
                do {
                    try decoder.push(chunk) { completed.append($0) }
                } catch {
                    fault = error
                }
            } else {
                ended = true
                decoder.finish { completed.append($0) }
            }
            ready = completed
            index = 0
        }
        defer { index += 1 }
        return ready[index]
    }
}

/// Lines of text: a last line without a terminator comes at the end.
struct LineDecoder: ChunkDecoder {
    private var splitter: LineSplitter

    /// - Parameter limit: the most bytes a line may have (`Request.streamBufferSize`).
    init(limit: Int = .max) {
        splitter = LineSplitter(limit: limit)
    }

    mutating func push(_ chunk: Data, _ emit: (String) -> Void) throws(HTTPError) {
        try splitter.push(chunk) { emit(String(decoding: $0, as: UTF8.self)) }
    }

    mutating func finish(_ emit: (String) -> Void) {
        if let last = splitter.finish() { emit(String(decoding: last, as: UTF8.self)) }
    }
}
