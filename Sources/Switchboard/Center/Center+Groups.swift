import Foundation

extension Center {
    // MARK: - Batch

    /// Sends a batch: members run concurrently (at most `maxConcurrent` at a time) and report together.
    ///
    /// ```swift
    /// let id = center.sendBatch { batch in
    ///     batch.add { $0.api = "profile" }
    ///     batch.add { $0.api = "settings" }
    /// } onSuccess: { responses in
    ///     print(responses.count)              // 2, in member order
    /// } onFailure: { results in
    ///     print(results)                      // every member's Result, in member order
    /// }
    /// ```
    ///
    /// Each member goes through the whole request path (merging, hooks, validation, decoding). `onSuccess` runs when
    /// every member succeeded, `onFailure` otherwise, then `onFinished`, each once, on the batch's `callbackQueue`
    /// (else the configuration's). `onProgress` sums the members' progress. Under `.failFast` the first failure
    /// cancels the other members. Members that never ran are `.notSent`; an empty batch fails with one
    /// `.invalidGroup` result. The callback form needs `onSuccess`, or else `onFailure` or `onFinished` alone;
    /// `onProgress` comes last.
    ///
    /// - Returns: the batch's identifier, valid before any member starts; `request(for:)` lists the members'.
    @discardableResult
    public func sendBatch(
        _ configure: (inout BatchRequest) -> Void,
        onSuccess: @escaping @Sendable ([Response]) -> Void,
        onFailure: (@Sendable ([Result<Response, HTTPError>]) -> Void)? = nil,
        onFinished: (@Sendable ([Result<Response, HTTPError>]) -> Void)? = nil,
        onProgress: (@Sendable (TransferProgress) -> Void)? = nil
    ) -> RequestID {
        sendBatch(
            configure,
            GroupCallbacks(
                onProgress: onProgress, onSuccess: onSuccess, onFailure: onFailure, onFinished: onFinished))
    }

    /// Sends a batch, and reports a failure through `onFailure`.
    @discardableResult
    public func sendBatch(
        _ configure: (inout BatchRequest) -> Void,
        onFailure: @escaping @Sendable ([Result<Response, HTTPError>]) -> Void,
        onProgress: (@Sendable (TransferProgress) -> Void)? = nil
    ) -> RequestID {
        sendBatch(configure, GroupCallbacks(onProgress: onProgress, onFailure: onFailure))
    }

    /// Sends a batch, and reports every member's result to `onFinished`, once, in member order.
    @discardableResult
    public func sendBatch(
        _ configure: (inout BatchRequest) -> Void,
        onFinished: @escaping @Sendable ([Result<Response, HTTPError>]) -> Void,
        onProgress: (@Sendable (TransferProgress) -> Void)? = nil
    ) -> RequestID {
        sendBatch(configure, GroupCallbacks(onProgress: onProgress, onFinished: onFinished))
    }

    private func sendBatch(_ configure: (inout BatchRequest) -> Void, _ callbacks: GroupCallbacks) -> RequestID {
        let batch = Launcher.numbered(BatchRequest(configure))
        startGroup(.batch(batch), previous: nil, callbacks: callbacks, registration: .new)
        return batch.id
    }

    /// Sends a batch and returns every member's response, in member order.
    ///
    /// ```swift
    /// let responses = try await center.batch { batch in
    ///     batch.add { $0.api = "a" }
    ///     batch.add { $0.api = "b" }
    /// }
    /// ```
    ///
    /// - Throws: `HTTPError` whose `memberResults` holds every member's outcome; its code is that of the failure that
    ///   decided the outcome (`.cancelled` when the batch or its task was cancelled).
    @discardableResult
    nonisolated(nonsending) public func batch(_ configure: (inout BatchRequest) -> Void) async throws(HTTPError)
        -> [Response]
    {
        try await runGroup(.batch(Launcher.numbered(BatchRequest(configure))))
    }

    // MARK: - Chain

    /// Sends a chain: each step runs after the previous one succeeded, built from its response.
    ///
    /// ```swift
    /// center.sendChain { chain in
    ///     chain.first { $0.api = "login"; $0.method = .post }
    ///     chain.next { request, previous in
    ///         request.api = "profile/" + (previous.json?["id"]?.string ?? "")
    ///     }
    /// } onSuccess: { responses in
    ///     print(responses.map(\.status))
    /// } onFailure: { results in
    ///     print(results)
    /// }
    /// ```
    ///
    /// A step that throws declines to send: the chain fails, and that step and the later ones are `.notSent`. A chain
    /// without `first` fails with one `.invalidGroup` result. Step closures run off the callback queue, between steps.
    /// The callback form needs `onSuccess`, or else `onFailure` or `onFinished` alone; `onProgress` comes last.
    @discardableResult
    public func sendChain(
        _ configure: (inout ChainRequest) -> Void,
        onSuccess: @escaping @Sendable ([Response]) -> Void,
        onFailure: (@Sendable ([Result<Response, HTTPError>]) -> Void)? = nil,
        onFinished: (@Sendable ([Result<Response, HTTPError>]) -> Void)? = nil,
        onProgress: (@Sendable (TransferProgress) -> Void)? = nil
    ) -> RequestID {
        sendChain(
            configure,
            GroupCallbacks(
                onProgress: onProgress, onSuccess: onSuccess, onFailure: onFailure, onFinished: onFinished))
    }

    /// Sends a chain, and reports a failure through `onFailure`.
    @discardableResult
    public func sendChain(
        _ configure: (inout ChainRequest) -> Void,
        onFailure: @escaping @Sendable ([Result<Response, HTTPError>]) -> Void,
        onProgress: (@Sendable (TransferProgress) -> Void)? = nil
    ) -> RequestID {
        sendChain(configure, GroupCallbacks(onProgress: onProgress, onFailure: onFailure))
    }

    /// Sends a chain, and reports every step's result to `onFinished`, once, in step order.
    @discardableResult
    public func sendChain(
        _ configure: (inout ChainRequest) -> Void,
        onFinished: @escaping @Sendable ([Result<Response, HTTPError>]) -> Void,
        onProgress: (@Sendable (TransferProgress) -> Void)? = nil
    ) -> RequestID {
        sendChain(configure, GroupCallbacks(onProgress: onProgress, onFinished: onFinished))
    }

    private func sendChain(_ configure: (inout ChainRequest) -> Void, _ callbacks: GroupCallbacks) -> RequestID {
        let chain = Launcher.numbered(ChainRequest(configure))
        startGroup(.chain(chain), previous: nil, callbacks: callbacks, registration: .new)
        return chain.id
    }

    /// Sends a chain and returns every step's response, in step order.
    ///
    /// - Throws: `HTTPError` whose `memberResults` holds every step's outcome.
    @discardableResult
    nonisolated(nonsending) public func chain(_ configure: (inout ChainRequest) -> Void) async throws(HTTPError)
        -> [Response]
    {
        try await runGroup(.chain(Launcher.numbered(ChainRequest(configure))))
    }

    // MARK: - Running groups

    /// Runs a batch or chain and delivers its results to callbacks; `retry` uses it too, with `then` to hear the
    /// outcome after the callbacks.
    func startGroup(
        _ group: GroupRequest, previous: [Result<Response, HTTPError>]?, callbacks: GroupCallbacks,
        registration: Launcher.Registration,
        then: (@Sendable ([Result<Response, HTTPError>], HTTPError?) -> Void)? = nil
    ) {
        let id = group.id
        let configuration = configuration
        let (queue, relay) = delivery(group.work.scope.callbackQueue, configuration, onProgress: callbacks.onProgress)
        let plan = Launcher.Plan(bySignal: false, registration: registration, detached: true)
        _ = launcher.launch(group.work, plan) { [self, queue] _ in
            let (results, error) = await runMembers(group, configuration, previous: previous, relay: relay)
            relay?.finish()
            let failed = error != nil
            // Remembered with the idempotency keys the failed members' attempts sent, if any were made: a retry
            // sends the same operations again.
            let record: RetryRecord? =
                switch group {
                case .batch(let batch):
                    failed ? .batch(batch.carryingIdempotencyKeys(of: results, configuration), results) : nil
                case .chain(let chain):
                    failed ? .chain(chain.carryingIdempotencyKeys(of: results, configuration), results) : nil
                }
            registry.remember(id, failure: record, limit: configuration.retainedFailures)
            queue.async {
                callbacks.deliver(results, succeeded: !failed)
                then?(results, error)
            }
        }
    }

    /// Runs a batch or chain for an `async` caller.
    nonisolated(nonsending) private func runGroup(_ group: GroupRequest) async throws(HTTPError) -> [Response] {
        let configuration = configuration
        let (results, error) = await launcher.run(group.work, bySignal: false) { [self] _ in
            await runMembers(group, configuration, previous: nil, relay: nil)
        }
        if let error { throw error }
        return results.compactMap { try? $0.get() }
    }

    /// Runs the members and ends the group's registration; returns the results and, when the group failed, the
    /// error that sums it up.
    private func runMembers(
        _ group: GroupRequest, _ configuration: Configuration, previous: [Result<Response, HTTPError>]?,
        relay: ProgressRelay?
    ) async -> ([Result<Response, HTTPError>], HTTPError?) {
        let results: [Result<Response, HTTPError>]
        var trigger: Int?
        var kind = "batch"
        switch group {
        case .batch(let batch):
            let run = BatchRun(
                runner: memberRunner(configuration), batch: batch, previous: previous, relay: relay)
            results = await run.run()
            trigger = run.trigger
        case .chain(let chain):
            kind = "chain"
            results = await ChainRun(runner: memberRunner(configuration), chain: chain, relay: relay)
                .run(previous: previous)
        }
        let cancelled = registry.finish(group.id) || Task.isCancelled
        return (results, Center.groupError(kind, results, cancelled: cancelled, trigger: trigger))
    }

    /// The error that sums up a failed group: cancellation, or the member failure that decided the outcome.
    static func groupError(
        _ kind: String, _ results: [Result<Response, HTTPError>], cancelled: Bool, trigger: Int?
    ) -> HTTPError? {
        if cancelled {
            var error = HTTPError(.cancelled, "the \(kind) was cancelled")
            error.memberResults = results
            return error
        }
        let failures = results.enumerated().compactMap { index, result -> (Int, HTTPError)? in
            if case .failure(let error) = result { (index, error) } else { nil }
        }
        guard let (index, cause) = failures.first(where: { $0.0 == trigger }) ?? failures.first else { return nil }
        var error = cause
        if results.count > 1 || cause.code != .invalidGroup {
            error.message = "member \(index + 1) of \(results.count) failed: \(cause.message)"
            error.underlying = cause
        }
        error.memberResults = results
        return error
    }

    /// How a group of this center runs its members: through the launcher, on the whole request path.
    private func memberRunner(_ configuration: Configuration) -> MemberRunner {
        MemberRunner(launcher: launcher) { member in
            Center.stopsBySignal(member, configuration)
        } perform: { [self] member, progress, cancellation in
            await pipeline.run(member, configuration, progress: progress, cancellation: cancellation)
        }
    }
}
