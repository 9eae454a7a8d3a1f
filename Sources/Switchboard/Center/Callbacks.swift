import Foundation

/// The callbacks of a single request, each fired at most once: a retry delivers its outcome to its own completion.
struct SingleCallbacks: Sendable {
    var onProgress: (@Sendable (TransferProgress) -> Void)? = nil
    var onSuccess: (@Sendable (Response) throws -> Void)? = nil
    var onFailure: (@Sendable (HTTPError) -> Void)? = nil
    var onFinished: (@Sendable (Result<Response, HTTPError>) -> Void)? = nil

    /// What a throwing `onSuccess` reports, with the response it was given: an `HTTPError` as it is (the request and
    /// response filled in), a `DecodingError` as `.decoding`, and any other error as `.business`, as an error thrown by
    /// `onResponse` or `validate` is: the app rejected a response that arrived whole (not `.transport`, which says the
    /// transfer failed).
    static func failure(thrownBy error: any Error, for response: Response) -> HTTPError {
        if error is DecodingError {
            var error = HTTPError.from(error, request: response.request)
            error.response = response
            return error
        }
        return HTTPError.wrapping(
            error, as: .business, "onSuccess threw", request: response.request, response: response)
    }

    /// Success then finished, or failure then finished; a throwing `onSuccess` turns the outcome into a failure.
    /// Returns the outcome the callbacks saw.
    @discardableResult
    func deliver(_ result: Result<Response, HTTPError>) -> Result<Response, HTTPError> {
        switch result {
        case .success(let response):
            do {
                try onSuccess?(response)
                onFinished?(.success(response))
                return result
            } catch {
                let error = Self.failure(thrownBy: error, for: response)
                onFailure?(error)
                onFinished?(.failure(error))
                return .failure(error)
            }
        case .failure(let error):
            onFailure?(error)
            onFinished?(.failure(error))
            return result
        }
    }
}

/// The callbacks of a batch or chain.
struct GroupCallbacks: Sendable {
    var onProgress: (@Sendable (TransferProgress) -> Void)? = nil
    var onSuccess: (@Sendable ([Response]) -> Void)? = nil
    var onFailure: (@Sendable ([Result<Response, HTTPError>]) -> Void)? = nil
    var onFinished: (@Sendable ([Result<Response, HTTPError>]) -> Void)? = nil

    /// Success then finished, or failure then finished, with results in member order. A group succeeds when every
    /// member did and it was not cancelled before it finished.
    func deliver(_ results: [Result<Response, HTTPError>], succeeded: Bool) {
        if succeeded {
            onSuccess?(results.compactMap { try? $0.get() })
        } else {
            onFailure?(results)
        }
        onFinished?(results)
    }
}

extension Result {
    var isSuccess: Bool {
        if case .success = self { true } else { false }
    }
}
