import Foundation

/// What an event source needs from its center: the configuration each connection reads (the current one, as a new
/// request would), a way to open each connection, and the launcher whose registry knows the source by its
/// identifier.
protocol EventSourceHost: AnyObject, Sendable {
    var configuration: CenterConfiguration { get }
    var launcher: Launcher { get }
    nonisolated(nonsending) func openStream(_ request: Request, _ configuration: CenterConfiguration)
        async throws(HTTPError) -> ResponseStream
}

/// Server-sent events that reconnect: what `Center.events(_:maxReconnections:)` returns. An asynchronous sequence
/// of updates: each connection's opening, each event, each reconnection.
public struct EventSource: AsyncSequence, Sendable {
    public typealias Element = Update

    /// What happened on the source.
    public enum Update: Sendable {
        /// A connection opened with this status and these header fields (the first one, and each after a
        /// reconnection).
        case open(status: Int, headers: HTTPHeaders)
        /// An event arrived.
        case event(ServerSentEvent)
        /// The connection ended; the source connects again after the wait.
        case reconnecting(Reconnection)
    }

    /// A reconnection about to happen.
    public struct Reconnection: Sendable {
        /// Which reconnection in a row this is, from 1 (an event in between starts the count again).
        public var attempt: Int
        /// How long the source waits before connecting again.
        public var delay: Duration
        /// The `Last-Event-ID` it will send; empty when no event had an ID.
        public var lastEventID: String
        /// Why the connection ended: `nil` when its body ended normally.
        public var error: HTTPError?
    }

    /// The source's identifier: `Center.cancel(_:)` with it ends the source.
    public var id: RequestID { session.request.id }

    let session: Session

    init(_ session: Session) {
        self.session = session
    }

    /// Ends the source: the connection is cancelled, and the iteration throws `.cancelled`.
    public func cancel() {
        session.cancellation.cancel()
    }

    /// Only the events, the openings and reconnections passed over.
    public var events: Events { Events(source: self) }

    public func makeAsyncIterator() -> Iterator {
        Iterator(session: session, reads: session.claim())
    }

    /// Reads the updates in order, connecting and reconnecting as it goes.
    public struct Iterator: AsyncIteratorProtocol, Sendable {
        let session: Session
        private let reads: Bool
        /// Ends the source when the reading iterator goes away (a `break` out of the loop, say).
        private let reading: Reading?
        private var reader: DecodingReader<ServerSentEventParser>?
        /// How long to wait before the next connection, which is made whenever none is open and the source has not
        /// ended: zero for the first, the announced delay after a `.reconnecting` update.
        private var connectAfter: Duration = .zero
        private var lastEventID = ""
        private var reconnectionTime: Duration?
        private var reconnections = 0
        private var finished = false

        init(session: Session, reads: Bool) {
            self.session = session
            self.reads = reads
            reading = reads ? Reading(session) : nil
        }

        /// The next update, or `nil` when the source has ended (a `204`, or connections that ended without an
        /// error until the limit).
        ///
        /// - Throws: `HTTPError`: the error that stopped the source (`.cancelled` when it was cancelled).
        public mutating func next() async throws -> Update? {
            guard reads else {
                throw HTTPError(.unsupported, "an event source can be read once; it is being read already")
            }
            while !finished {
                if session.cancellation.isCancelled { throw stop(cancelled()) }
                if reader != nil {
                    do {
                        if let event = try await reader!.next() {
                            reconnections = 0
                            return .event(event)
                        }
                        closeConnection()
                        if let update = try reconnect(after: nil) { return update }
                    } catch {
                        closeConnection()
                        if let update = try reconnect(after: HTTPError.from(error, request: session.request)) {
                            return update
                        }
                    }
                } else {
                    let delay = connectAfter
                    connectAfter = .zero
                    if delay > .zero {
                        do {
                            try await EngineCancellation.sleep(
                                for: delay, on: session.host.configuration.clock, cancellation: session.cancellation)
                        } catch {
                            throw stop(cancelled())
                        }
                    }
                    do {
                        if let update = try await connect() { return update }
                    } catch {
                        // A connection that failed for good (not an event stream) is not reopened.
                        if finished { throw error }
                        if let update = try reconnect(after: error) { return update }
                    }
                }
            }
            return nil
        }

        /// Opens the next connection: the `.open` update, or `nil` when the server ended the source (`204`).
        private mutating func connect() async throws(HTTPError) -> Update? {
            var request = session.request
            request.id = RequestID.next()
            if !lastEventID.isEmpty { request.headers["Last-Event-ID"] = lastEventID }
            session.connecting(request.id)
            let stream = try await session.host.openStream(request, session.host.configuration)
            if session.cancellation.isCancelled {
                stream.cancel()
                throw cancelled()
            }
            if stream.status == 204 {
                stream.cancel()
                end()
                return nil
            }
            if let refusal = EventStreamType.refusal(stream.headers, status: stream.status, url: stream.url) {
                stream.cancel()
                throw stop(refusal.with(request: request))
            }
            let chunks = stream.makeAsyncIterator()
            reader = DecodingReader(
                chunks: chunks,
                decoder: ServerSentEventParser(
                    lastEventID: lastEventID, reconnectionTime: reconnectionTime, limit: chunks.heldLimit))
            return .open(status: stream.status, headers: stream.headers)
        }

        /// Keeps what the ended connection's parser knew (the last event ID, the server's reconnection time).
        private mutating func closeConnection() {
            guard let parser = reader?.decoder else { return }
            lastEventID = parser.dispatchedEventID
            reconnectionTime = parser.reconnectionTime
            reader = nil
        }

        /// After a connection ended (`error` is `nil` when its body ended normally): the `.reconnecting` update, or
        /// `nil` when the source ends without an error, or the error that stops it, thrown.
        private mutating func reconnect(after error: HTTPError?) throws(HTTPError) -> Update? {
            let request = session.request
            let policy = request.retryPolicy(in: session.host.configuration)
            if session.cancellation.isCancelled || error?.code == .cancelled { throw stop(cancelled()) }
            if let error, !policy.isRetryable(error, method: request.method) { throw stop(error) }
            guard policy.methods.contains(request.method), reconnections < session.maxReconnections else {
                if let error { throw stop(error) }
                end()
                return nil
            }
            reconnections += 1
            var delay = reconnectionTime ?? policy.backoff(after: reconnections)
            if let error, let retryAfter = error.response.flatMap(RetryPolicy.retryAfter) {
                guard retryAfter <= policy.maxRetryAfter else { throw stop(error) }
                delay = Swift.max(.zero, retryAfter)
            }
            connectAfter = delay
            return .reconnecting(
                Reconnection(
                    attempt: reconnections, delay: delay, lastEventID: lastEventID, error: error))
        }

        /// Ends the iteration.
        private mutating func end() {
            finished = true
            reader = nil
            session.end()
        }

        /// Ends the iteration with an error; returns it, for throwing.
        private mutating func stop(_ error: HTTPError) -> HTTPError {
            end()
            return error
        }

        private func cancelled() -> HTTPError {
            HTTPError(.cancelled, "the event source was cancelled", request: session.request)
        }
    }

    /// The events of a source, without its openings and reconnections.
    public struct Events: AsyncSequence, Sendable {
        public typealias Element = ServerSentEvent
        let source: EventSource

        public func makeAsyncIterator() -> Iterator {
            Iterator(updates: source.makeAsyncIterator())
        }

        /// Reads the events in order.
        public struct Iterator: AsyncIteratorProtocol, Sendable {
            var updates: EventSource.Iterator

            /// The next event, or `nil` when the source has ended.
            public mutating func next() async throws -> ServerSentEvent? {
                while let update = try await updates.next() {
                    if case .event(let event) = update { return event }
                }
                return nil
            }
        }
    }

    /// Held by the iterator that reads: when it goes away, nobody reads the rest, so the source ends.
    final class Reading: Sendable {
        let session: Session

        init(_ session: Session) {
            self.session = session
        }

        deinit {
            session.cancellation.cancel()
            session.end()
        }
    }

    /// The source's life at the center: registered under its identifier from its creation to its end, so that
    /// `Center.cancel(_:)` reaches it between connections too, and the connection in progress.
    final class Session: Sendable {
        let host: any EventSourceHost
        let request: Request
        let maxReconnections: Int
        let cancellation: EngineCancellation
        private struct State {
            var claimed = false
            var ended = false
            var connection: RequestID?
        }
        private let state = Locked(State())

        init(host: any EventSourceHost, request: Request, maxReconnections: Int) {
            self.host = host
            self.request = request
            self.maxReconnections = Swift.max(0, maxReconnections)
            // Registered for its whole life (between connections too), stopped by its signal.
            cancellation = host.launcher.registerStoppedBySignal(.single(request))
            let registry = host.launcher.registry
            let state = state
            _ = cancellation.add {
                if let connection = state.withLock({ $0.connection }) { _ = registry.cancel(connection) }
            }
        }

        deinit {
            // Dropped before its end: nobody reads the rest.
            cancellation.cancel()
            end()
        }

        /// Whether this is the first iterator (the one that reads).
        func claim() -> Bool {
            state.withLock { state in
                defer { state.claimed = true }
                return !state.claimed
            }
        }

        /// The connection in progress, which a cancel of the source cancels.
        func connecting(_ id: RequestID) {
            state.withLock { $0.connection = id }
            if cancellation.isCancelled { _ = host.launcher.registry.cancel(id) }
        }

        /// The source has ended: it leaves the registry.
        func end() {
            let first = state.withLock { state in
                defer { state.ended = true }
                return !state.ended
            }
            if first { _ = host.launcher.registry.finish(request.id) }
        }
    }
}
