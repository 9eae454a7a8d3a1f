import Foundation

extension Center {
    /// Sends a request and returns its body as a stream, as soon as an acceptable response head has arrived.
    ///
    /// ```swift
    /// let stream = try await center.stream { $0.api = "events" }
    /// for try await event in stream.events {
    ///     print(event.type, event.data)
    /// }
    /// ```
    ///
    /// The request goes through the same path as any other: the configuration, plugins and hooks, the
    /// authenticator (a `401` before the stream starts refreshes the credential and sends again once), the retry
    /// policy (before the head only: once a chunk may have been read, nothing is sent again), the console log
    /// (the head; no body is logged) and `cancel(_:)` by identifier. The status is validated before any chunk is
    /// read: an unacceptable one throws here, with the body of the error response. The `onResponse` hook and
    /// response decoding do not apply; there is no whole body to give them.
    ///
    /// The engine must stream (`Engine.streamsResponses`; the built-in ones do), else the call throws
    /// `.unsupported` before anything is sent.
    ///
    /// - Returns: the head and the body to read; see `ResponseStream`.
    /// - Throws: `HTTPError`, after the `onError` hook mapped it. Cancelling the calling task while it waits for the
    ///   head cancels the request.
    nonisolated(nonsending) public func stream(_ configure: (inout Request) -> Void) async throws(HTTPError)
        -> ResponseStream
    {
        let (request, configuration) = configured(configure)
        return try await openStream(request, configuration)
    }

    /// Starts a numbered request as a stream and waits for its head (`stream(_:)`, and each connection of an
    /// `EventSource`).
    nonisolated(nonsending) func openStream(_ request: Request, _ configuration: Configuration) async throws(HTTPError)
        -> ResponseStream
    {
        let codes = request.acceptableStatusCodes ?? configuration.acceptableStatusCodes
        // Under `.never` a redirect is the answer, and its body the stream's.
        let answersRedirects = !request.redirectPolicy(in: configuration).follows
        let channel = StreamChannel(limit: request.streamBufferSize, answersRedirects: answersRedirects) {
            codes.contains($0)
        }
        let pipeline = pipeline
        let launched = launcher.launch(.single(request), Launcher.Plan(bySignal: false)) { _ in
            channel.finish(await pipeline.run(request, configuration, progress: nil, stream: channel))
        }
        do {
            let head = try await launched.whileWaiting { try await channel.head() }
            return ResponseStream(id: launched.id, head: head, channel: channel) { launched.cancel() }
        } catch {
            throw HTTPError.from(error, request: request)
        }
    }
}

extension Center: EventSourceHost {}

extension Center {
    /// Server-sent events from an endpoint, reconnecting when the connection ends, as a browser's `EventSource`
    /// does.
    ///
    /// ```swift
    /// let source = center.events { $0.api = "notifications" }
    /// for try await update in source {
    ///     switch update {
    ///     case .open(let status, _): print("connected", status)
    ///     case .event(let event): print(event.type, event.data)
    ///     case .reconnecting(let reconnection): print("reconnecting in", reconnection.delay)
    ///     }
    /// }
    /// ```
    ///
    /// Nothing is sent until the source is iterated; it is read once. Each connection is a request through the
    /// whole path (configuration, plugins and hooks, the authenticator, the console log), with an identifier of its
    /// own; `EventSource.id` stands for the source and cancels it with `cancel(_:)`, during a connection or the wait
    /// between two.
    ///
    /// When a connection ends (the body ends, or the connection fails with an error the retry policy deems
    /// transient, or the status is one it retries, such as 503), the source reconnects, sending the last event
    /// ID as `Last-Event-ID`, after the server's `Retry-After` for an error status, else the server's last `retry`
    /// field, else the request's retry policy's backoff (`RetryPolicy.initialDelay`, `multiplier`, `maxDelay`,
    /// `jitter`). Each reconnection is announced by an `.reconnecting` update before the wait. The source stops:
    /// - on a `204`, by ending the iteration (the server's way to say there is nothing more);
    /// - on any other error (a 404, a 401 the authenticator could not fix, a cancel), by throwing it;
    /// - after `maxReconnections` reconnections in a row without an event between them, by throwing the last error
    ///   (or ending, when the connections ended without one);
    /// - for a method the retry policy does not retry (a `POST`, by default), at the first end: sending it again
    ///   could repeat what it did.
    ///
    /// - Parameters:
    ///   - configure: sets up the request (each connection sends it again, with `Last-Event-ID` when there is one).
    ///   - maxReconnections: the most reconnections in a row without an event in between.
    public func events(_ configure: (inout Request) -> Void, maxReconnections: Int = 10) -> EventSource {
        var (request, _) = configured(configure)
        if request.headers["Accept"] == nil { request.headers["Accept"] = EventStreamType.mediaType }
        return EventSource(EventSource.Session(host: self, request: request, maxReconnections: maxReconnections))
    }

    /// Server-sent events from an endpoint, reconnecting when the connection ends, delivered to callbacks.
    ///
    /// ```swift
    /// let id = center.events({ $0.api = "notifications" }, onEvent: { event in
    ///     print(event.data)
    /// }, onFailure: { error in
    ///     print(error)
    /// })
    /// center.cancel(id)   // later: ends the source; onFailure gets .cancelled
    /// ```
    ///
    /// The connections, reconnections and stops are those of `events(_:maxReconnections:)`. The callbacks run on
    /// the callback queue, in order: `onEvent` for each event, `onReconnect` before each wait, then at the end
    /// `onFailure` (for an error) and `onFinished` once (`nil` when the server ended the source with a `204`, or
    /// the connections ended without an error).
    ///
    /// - Returns: the identifier of the source, which cancels it.
    @discardableResult
    public func events(
        _ configure: (inout Request) -> Void,
        maxReconnections: Int = 10,
        onEvent: @escaping @Sendable (ServerSentEvent) -> Void,
        onReconnect: (@Sendable (EventSource.Reconnection) -> Void)? = nil,
        onFailure: (@Sendable (HTTPError) -> Void)? = nil,
        onFinished: (@Sendable (HTTPError?) -> Void)? = nil
    ) -> RequestID {
        let source = events(configure, maxReconnections: maxReconnections)
        let (queue, _) = delivery(
            source.session.request.scope.callbackQueue, configuration, onProgress: nil, ordered: true)
        Task.detached(priority: Task.currentPriority) {
            do {
                for try await update in source {
                    switch update {
                    case .event(let event): queue.async { onEvent(event) }
                    case .reconnecting(let reconnection): queue.async { onReconnect?(reconnection) }
                    case .open: break
                    }
                }
                queue.async { onFinished?(nil) }
            } catch {
                let error = HTTPError.from(error, request: source.session.request)
                queue.async {
                    onFailure?(error)
                    onFinished?(error)
                }
            }
        }
        return source.id
    }
}
