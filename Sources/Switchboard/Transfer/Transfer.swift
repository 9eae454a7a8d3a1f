/// A request under way for an `async` caller who wants its progress: an `AsyncStream` of reports and the response.
///
/// ```swift
/// let transfer = center.transfer { request in
///     request.kind = .download
///     request.url = "https://example.com/big.iso"
///     request.destination = .file(URL(fileURLWithPath: "/tmp/big.iso"))
/// }
/// for await progress in transfer.progress {
///     print(progress.fraction ?? 0)
/// }
/// let response = try await transfer.response()
/// ```
public struct Transfer: Sendable {
    /// The request's identifier.
    public var id: RequestID { launched.id }
    /// Progress reports, at most about 60 a second; the stream ends when the request does.
    public let progress: AsyncStream<TransferProgress>
    let launched: Launched<ClosureBody<Result<Response, HTTPError>>>

    /// Waits for the outcome. Cancelling the waiting task cancels the transfer.
    ///
    /// - Throws: `HTTPError`.
    nonisolated(nonsending) public func response() async throws(HTTPError) -> Response {
        try await launched.value().get()
    }

    /// Cancels the transfer; `response()` then throws `.cancelled`.
    public func cancel() {
        launched.cancel()
    }
}
