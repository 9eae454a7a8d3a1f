import Foundation

extension Center {
    /// Sends an endpoint and decodes its response.
    ///
    /// - Throws: `HTTPError`; a body that does not decode as `E.Response` gives `.decoding`.
    @discardableResult
    nonisolated(nonsending) public func send<E: Endpoint>(_ endpoint: E) async throws(HTTPError) -> E.Response {
        let request = endpoint.request
        return try endpoint.decoded(await send { $0 = request })
    }

    /// Sends an endpoint and reports its decoded response through callbacks (on the callback queue, each once).
    ///
    /// The callback form needs `onSuccess`, or else `onFailure` or `onFinished` alone, so a closure without a label
    /// after `send(endpoint)` is `onSuccess`; without a callback, `send(endpoint)` is the `async` form.
    @discardableResult
    public func send<E: Endpoint>(
        _ endpoint: E,
        onSuccess: @escaping @Sendable (E.Response) -> Void,
        onFailure: (@Sendable (HTTPError) -> Void)? = nil,
        onFinished: (@Sendable (Result<E.Response, HTTPError>) -> Void)? = nil
    ) -> RequestID {
        sendDecoding(endpoint, onSuccess: onSuccess, onFailure: onFailure, onFinished: onFinished)
    }

    /// Sends an endpoint and reports a failure through `onFailure`.
    @discardableResult
    public func send<E: Endpoint>(_ endpoint: E, onFailure: @escaping @Sendable (HTTPError) -> Void) -> RequestID {
        sendDecoding(endpoint, onSuccess: nil, onFailure: onFailure, onFinished: nil)
    }

    /// Sends an endpoint and reports its decoded outcome to `onFinished`, once.
    @discardableResult
    public func send<E: Endpoint>(
        _ endpoint: E,
        onFinished: @escaping @Sendable (Result<E.Response, HTTPError>) -> Void
    ) -> RequestID {
        sendDecoding(endpoint, onSuccess: nil, onFailure: nil, onFinished: onFinished)
    }

    private func sendDecoding<E: Endpoint>(
        _ endpoint: E,
        onSuccess: (@Sendable (E.Response) -> Void)?,
        onFailure: (@Sendable (HTTPError) -> Void)?,
        onFinished: (@Sendable (Result<E.Response, HTTPError>) -> Void)?
    ) -> RequestID {
        let request = endpoint.request
        return send {
            $0 = request
        } onSuccess: { response in
            let value = try endpoint.decoded(response)
            onSuccess?(value)
            onFinished?(.success(value))
        } onFailure: { error in
            onFailure?(error)
            onFinished?(.failure(error))
        }
    }
}

extension Center {
    /// Sends an endpoint and yields its decoded responses: two for `.cacheThenNetwork` when something is cached.
    public func responses<E: Endpoint>(_ endpoint: E) -> AsyncThrowingStream<E.Response, any Error> {
        let request = endpoint.request
        let responses = responses { $0 = request }
        return AsyncThrowingStream { continuation in
            let task = Task {
                do {
                    for try await response in responses {
                        continuation.yield(try endpoint.decoded(response))
                    }
                    continuation.finish()
                } catch {
                    continuation.finish(throwing: error)
                }
            }
            continuation.onTermination = { _ in task.cancel() }
        }
    }
}

extension Endpoint {
    /// `decode(_:)`'s value, or its error as an `HTTPError` (`.decoding` unless it threw one).
    func decoded(_ response: Switchboard.Response) throws(HTTPError) -> Response {
        do {
            return try decode(response)
        } catch {
            throw HTTPError.wrapping(
                error, as: .decoding, "the \(Self.self) endpoint could not make its \(Response.self)",
                request: response.request, response: response)
        }
    }
}
