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
        let id = request.id!
        let codes = request.acceptableStatusCodes ?? configuration.acceptableStatusCodes
        let channel = StreamChannel(limit: request.streamBufferSize) { codes.contains($0) }
        let registry = registry
        _ = launcher.start(.single(request)) { [self] in
            channel.finish(await run(request, configuration, progress: nil, stream: channel))
        }
        do {
            let head = try await withTaskCancellationHandler {
                try await channel.head()
            } onCancel: {
                _ = registry.cancel(id)
            }
            return ResponseStream(id: id, head: head, channel: channel) { _ = registry.cancel(id) }
        } catch {
            throw HTTPError.from(error, request: request)
        }
    }
}
