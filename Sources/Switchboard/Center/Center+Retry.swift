extension Center {
    /// What `retry(_:)` did.
    public enum RetryAnswer: Sendable, Hashable {
        /// The failed request or group is running again under the same identifier; its callbacks will fire again.
        case retrying
        /// It is still running: nothing to retry yet.
        case running
        /// It succeeded: nothing to retry.
        case succeeded
        /// The center does not know it: never sent here, sent with `async` (just call again), or forgotten (the
        /// center remembers `retainedFailures` failures).
        case unknown
    }

    /// Runs a finished, failed request or group again, under the same identifier, and fires its original callbacks
    /// with the new outcome.
    ///
    /// A single request is sent again with the current configuration. A batch re-runs only the members that failed
    /// or never ran, keeping the responses it has; a chain resumes from the step that failed or was not sent.
    ///
    /// ```swift
    /// let id = center.sendBatch { batch in ... } onFailure: { results in showRetryButton() }
    /// // later, when the user taps it:
    /// center.retry(id)
    /// ```
    @discardableResult
    public func retry(_ id: RequestID) -> RetryAnswer {
        switch registry.takeForRetry(id) {
        case .running:
            return .running
        case .succeeded:
            return .succeeded
        case .unknown:
            return .unknown
        case .failed(.single(let request, let callbacks)):
            start(request, id: id, callbacks: callbacks, registered: true)
        case .failed(.batch(let batch, let results, let callbacks)):
            startGroup(.batch(batch), previous: results, callbacks: callbacks, registered: true)
        case .failed(.chain(let chain, let results, let callbacks)):
            startGroup(.chain(chain), previous: results, callbacks: callbacks, registered: true)
        }
        return .retrying
    }
}
