/// Runs the members of a batch, at most `maxConcurrent` at a time, and collects their results in member order.
///
/// Each member runs through the whole single-request path under its own identifier, in a task of its own; when one
/// ends, its task starts the next. The run stops starting members when the batch is cancelled, or at the first
/// failure under `.failFast`; it then cancels the running ones through the registry (so each ends as `.cancelled`),
/// and reports members that never started as `.notSent`. What to do is decided by `BatchState`; this class does it.
final class BatchRun: Sendable {
    private struct State {
        var machine: BatchState
        /// The run's caller, waiting for the last member.
        var waiter: CheckedContinuation<Void, Never>?
    }

    private let runner: MemberRunner
    private let batch: BatchRequest
    private let relay: ProgressRelay?
    private let state: Locked<State>

    /// - Parameter previous: results to keep from an earlier run (for `retry`); members with a success there are not
    ///   run again.
    init(runner: MemberRunner, batch: BatchRequest, previous: [Result<Response, HTTPError>]?, relay: ProgressRelay?) {
        self.runner = runner
        self.batch = batch
        self.relay = relay
        state = Locked(
            State(
                machine: BatchState(
                    count: batch.members.count, previous: previous, failFast: batch.policy == .failFast)))
    }

    /// Runs every member that has no success yet; returns one result per member, in member order.
    func run() async -> [Result<Response, HTTPError>] {
        if let invalid = invalidReason() {
            return [.failure(HTTPError(.invalidGroup, invalid))]
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (waiter: CheckedContinuation<Void, Never>) in
                let limit = state.withLock { state in
                    state.waiter = waiter
                    return min(batch.maxConcurrent ?? .max, state.machine.pending)
                }
                for _ in 0..<limit { startNext() }
                completeIfOver()
            }
        } onCancel: {
            stop(because: "the batch was cancelled")
        }
        return state.withLock { $0.machine.outcomes(batch.members) }
    }

    /// The member whose failure stopped a `.failFast` batch, if one did.
    var trigger: Int? {
        state.withLock { $0.machine.trigger }
    }

    private func invalidReason() -> String? {
        if batch.members.isEmpty { return "the batch has no members: add some with `batch.add { ... }`" }
        if let limit = batch.maxConcurrent, limit < 1 { return "maxConcurrent is \(limit); it must be at least 1" }
        return nil
    }

    /// Starts the next member unless the batch has stopped.
    private func startNext() {
        guard let index = state.withLock({ $0.machine.next() }) else { return }
        start(index)
    }

    /// Starts a member taken from the queue. It is registered before it counts as running, so a cancel that sees it
    /// running can always reach it. When it ends, one trip through the lock records its outcome, takes the next
    /// member, and, when there is none, tells whether the run is over.
    private func start(_ index: Int) {
        let member = batch.members[index]
        let cancellation = runner.register(member)
        guard state.withLock({ $0.machine.begin(index, id: member.id!) }) else {
            runner.unregister(member)
            completeIfOver()
            return
        }
        var progress: (@Sendable (TransferProgress) -> Void)?
        if let relay {
            progress = { [state] report in
                let (progress, final) = state.withLock { $0.machine.report(index, report) }
                relay.report(progress, final: final)
            }
        }
        runner.start(member, cancellation: cancellation, progress: progress) { [self] result in
            let (stopped, next, waiter) = state.withLock { state in
                let stopped = state.machine.finish(index, result)
                let next = state.machine.next()
                let waiter = next == nil && state.machine.takeCompletion() ? state.waiter.take() : nil
                return (stopped, next, waiter)
            }
            if stopped { cancelRunning() }
            if let next { start(next) }
            waiter?.resume()
        }
    }

    /// Resumes the caller when the run is over (the waiter is stored before any member starts, and `takeCompletion`
    /// says so once).
    private func completeIfOver() {
        let waiter = state.withLock { state in state.machine.takeCompletion() ? state.waiter.take() : nil }
        waiter?.resume()
    }

    private func stop(because reason: String) {
        let running = state.withLock { $0.machine.stop(because: reason) }
        for id in running { runner.cancel(id) }
    }

    private func cancelRunning() {
        let running = state.withLock { Array($0.machine.running.values) }
        for id in running { runner.cancel(id) }
    }
}
