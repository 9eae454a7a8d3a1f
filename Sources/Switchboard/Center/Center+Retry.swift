extension Center {
    /// What `retry(_:completion:)` did.
    public enum RetryAnswer: Sendable, Hashable {
        /// The failed request or group is running again under the same identifier; its outcome goes to the retry's
        /// own completion, never to the callbacks it was sent with (which have fired).
        case retrying
        /// It is still running: nothing to retry yet.
        case running
        /// It succeeded: nothing to retry.
        case succeeded
        /// The center does not know it: never sent here, sent with `async` (just call again), or forgotten (the
        /// center remembers `retainedFailures` failures).
        case unknown
    }

    /// Runs a finished, failed request or group again, under the same identifier, and delivers its new outcome to
    /// `completion`, once, on the callback queue it was sent with (the center's when it named none).
    ///
    /// A single request is sent again with the current configuration. A batch re-runs only the members that failed
    /// or never ran, keeping the responses it has; a chain resumes from the step that failed or was not sent. The
    /// callbacks it was sent with have fired, once, and do not fire again.
    ///
    /// ```swift
    /// let id = center.sendBatch { batch in ... } onFailure: { results in showRetryButton() }
    /// // later, when the user taps it:
    /// center.retry(id) { outcome in
    ///     if case .success(let retried) = outcome { show(retried.responses) }
    /// }
    /// ```
    ///
    /// `completion` runs only when the answer is `.retrying`; the callbacks the work was sent with do not fire again.
    @discardableResult
    public func retry(
        _ id: RequestID, completion: @escaping @Sendable (Result<RetryOutcome, HTTPError>) -> Void
    ) -> RetryAnswer {
        retry(id, then: completion)
    }

    /// Runs a finished, failed request or group again, like `retry(_:completion:)`, and returns its new outcome.
    ///
    /// ```swift
    /// let outcome = try await center.retry(batchID)   // the original callbacks do not fire again
    /// print(outcome.responses.count)                  // every member's response, in member order
    /// ```
    ///
    /// Cancelling the calling task cancels the retried work.
    ///
    /// - Throws: `HTTPError`: the new failure (for a group, with every member's outcome in `memberResults`), or
    ///   `.notRetryable` when the identifier names nothing that failed (still running, succeeded, unknown to this
    ///   center, or sent with `async`: call that again instead).
    @discardableResult
    nonisolated(nonsending) public func retry(_ id: RequestID) async throws(HTTPError) -> RetryOutcome {
        let outcome = await withTaskCancellationHandler {
            await withCheckedContinuation {
                (continuation: CheckedContinuation<Result<RetryOutcome, HTTPError>, Never>)
                in
                let answer = retry(id) { continuation.resume(returning: $0) }
                if answer != .retrying {
                    let reason =
                        switch answer {
                        case .running: "it is still running"
                        case .succeeded: "it succeeded"
                        default: "this center has no failure on record for it"
                        }
                    let error = HTTPError(.notRetryable, "nothing to retry for \(id): \(reason)")
                    continuation.resume(returning: .failure(error))
                } else if Task.isCancelled {
                    cancel(id)
                }
            }
        } onCancel: {
            cancel(id)
        }
        return try outcome.get()
    }

    /// Runs failed work again; `then`, when given, hears its outcome (nothing else does).
    private func retry(_ id: RequestID, then: (@Sendable (Result<RetryOutcome, HTTPError>) -> Void)?) -> RetryAnswer {
        switch registry.takeForRetry(id) {
        case .running:
            return .running
        case .succeeded:
            return .succeeded
        case .unknown:
            return .unknown
        case .failed(.single(let request)):
            var single: (@Sendable (Result<Response, HTTPError>) -> Void)?
            if let then { single = { result in then(result.map { RetryOutcome.response($0) }) } }
            start(request, callbacks: SingleCallbacks(), registration: .retried, then: single)
        case .failed(.batch(let batch, let results)):
            startGroup(
                .batch(batch), previous: results, callbacks: GroupCallbacks(), registration: .retried,
                then: Center.groupThen(then))
        case .failed(.chain(let chain, let results)):
            startGroup(
                .chain(chain), previous: results, callbacks: GroupCallbacks(), registration: .retried,
                then: Center.groupThen(then))
        }
        return .retrying
    }

    private static func groupThen(
        _ then: (@Sendable (Result<RetryOutcome, HTTPError>) -> Void)?
    ) -> (@Sendable ([Result<Response, HTTPError>], HTTPError?) -> Void)? {
        guard let then else { return nil }
        return { results, error in
            if let error {
                then(.failure(error))
            } else {
                then(.success(.responses(results.compactMap { try? $0.get() })))
            }
        }
    }
}

/// The new outcome of work run again with `try await center.retry(id)`.
public enum RetryOutcome: Sendable {
    /// A single request's response.
    case response(Response)
    /// A batch's or chain's responses, in member order.
    case responses([Response])

    /// The response of a single request; for a group, its last member's.
    public var response: Response? {
        switch self {
        case .response(let response): response
        case .responses(let responses): responses.last
        }
    }

    /// Every response: the single request's alone, or the group's in member order.
    public var responses: [Response] {
        switch self {
        case .response(let response): [response]
        case .responses(let responses): responses
        }
    }
}
