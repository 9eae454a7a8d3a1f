/// The authenticator as a plugin of one request: it puts the credential on (its `prepare`, which the prepare step
/// runs once the URL is final and one of the center's origins), refreshes it once when the origin refused it and
/// asks for the request to be sent again at once (its `retryDelay`, the first asked), and reports a failed refresh
/// as the outcome (its `process`, the first to run).
///
/// One is made for each request that uses the authenticator: it remembers which credential the last attempt
/// carried, and whether the request was already sent again after a refresh.
final class CredentialPlugin: Plugin {
    private let authenticator: Authenticator
    private let scope: CredentialScope
    /// What the refresh sends its own requests through: the center.
    private let owner: any AnyObject & Sendable
    private struct State {
        /// The generation of the credential the last attempt carried; `nil` before one was put on.
        var generation: UInt64?
        var replayed = false
        var refreshFailure: HTTPError?
    }
    private let state = Locked(State())

    init(_ authenticator: Authenticator, scope: CredentialScope, owner: any AnyObject & Sendable) {
        (self.authenticator, self.scope, self.owner) = (authenticator, scope, owner)
    }

    func prepare(_ request: inout Request) async throws {
        let generation = try await authenticator.authenticate(&request, owner: owner)
        state.withLock { $0.generation = generation }
    }

    func retryDelay(after error: HTTPError, attempt: Int, for original: Request) async -> Duration? {
        let generation = state.withLock { state -> UInt64? in
            guard !state.replayed, let generation = state.generation else { return nil }
            return generation
        }
        // A refusal counts only from one of the center's origins: the URL that answered, after any redirect.
        guard let generation, authenticator.refused(error),
            scope.covers(error.response?.address.text ?? original.url)
        else { return nil }
        state.withLock { $0.replayed = true }
        do {
            try await authenticator.refresh(after: generation, owner: owner)
            return .zero
        } catch {
            state.withLock { $0.refreshFailure = error.with(request: original) }
            return nil
        }
    }

    func process(_ result: Result<Response, HTTPError>, for original: Request) async -> Result<Response, HTTPError> {
        guard case .failure = result, let failure = state.withLock({ $0.refreshFailure }) else { return result }
        return .failure(failure)
    }
}
