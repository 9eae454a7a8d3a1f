import Foundation

/// Runs the members of a batch, at most `maxConcurrent` at a time, and collects their results in member order.
///
/// Each member runs through the whole single-request path under its own identifier, in a task of its own; with a
/// limit, when one ends, its task starts the next. The first members start in waves, each running up to its first
/// wait in the thread that starts it (on an engine that stops by signal); a large batch without a limit is started
/// from one thread a core. The run stops starting members when the batch is cancelled, or at the first
/// failure under `.failFast`; it then cancels the running ones through the registry (so each ends as `.cancelled`),
/// and reports members that never started as `.notSent`. What to do is decided by `BatchState`; this class does it.
final class BatchRun: MemberOutcomes {
    private struct State {
        var machine: BatchState
        /// The run's caller, waiting for the last member.
        var waiter: CheckedContinuation<Void, Never>?
    }

    private let runner: any MemberStarting
    private let batch: BatchRequest
    private let relay: ProgressRelay?
    private let state: Locked<State>

    /// - Parameter previous: results to keep from an earlier run (for `retry`); members with a success there are not
    ///   run again.
    init(
        runner: any MemberStarting, batch: BatchRequest, previous: [Result<Response, HTTPError>]?, relay: ProgressRelay?
    ) {
        self.runner = runner
        self.batch = batch
        self.relay = relay
        let machine = BatchState(count: batch.members.count, previous: previous, failFast: batch.policy == .failFast)
        relay?.sum(BatchProgress(count: batch.members.count, toRun: machine.pending))
        state = Locked(State(machine: machine))
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
                // A large batch without a limit is started from as many threads as there are cores: its members
                // run up to their first wait in the thread that starts them (see `MemberStarting.start`).
                if batch.maxConcurrent == nil {
                    let starters = min(ProcessInfo.processInfo.activeProcessorCount, limit / (2 * BatchRun.waveSize))
                    for _ in 0..<max(0, starters - 1) {
                        Task { [self] in
                            startWave(.max)
                            completeIfOver()
                        }
                    }
                }
                startWave(limit)
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

    /// How many members a wave takes from the queue at a time.
    private static let waveSize = 64

    /// Starts up to `count` members, the first ones of a run, in waves: a wave's members are taken from the queue in
    /// one trip through the lock, registered, marked running in a second trip, then started. Taken one trip at a time,
    /// a large batch's first members kept the threads that ran them waiting for the thread that started the rest.
    private func startWave(_ count: Int) {
        var left = count
        while left > 0 {
            let indices: [Int] = state.withLock { state in
                var taken: [Int] = []
                taken.reserveCapacity(min(left, BatchRun.waveSize))
                while taken.count < min(left, BatchRun.waveSize), let index = state.machine.next() {
                    taken.append(index)
                }
                return taken
            }
            if indices.isEmpty { return }
            left -= indices.count
            // Registered before they count as running, so that a cancel that sees one running can always reach it.
            let cancellations = indices.map { runner.register(batch.members[$0]) }
            let begun = state.withLock { state in
                indices.map { state.machine.begin($0, id: batch.members[$0].id) }
            }
            for (position, index) in indices.enumerated() {
                if begun[position] {
                    launch(index, cancellation: cancellations[position], immediately: true)
                } else {
                    runner.unregister(batch.members[index])
                }
            }
            if begun.contains(false) {
                completeIfOver()
                return
            }
        }
    }

    /// Starts a member taken from the queue when another ended. It is registered before it counts as running, so a
    /// cancel that sees it running can always reach it.
    private func start(_ index: Int) {
        let member = batch.members[index]
        let cancellation = runner.register(member)
        guard state.withLock({ $0.machine.begin(index, id: member.id) }) else {
            runner.unregister(member)
            completeIfOver()
            return
        }
        launch(index, cancellation: cancellation)
    }

    /// Runs a registered, running member; `member(_:endedWith:)` hears how it ended. `immediately`: in this thread up
    /// to its first wait (see `MemberStarting.start`).
    private func launch(_ index: Int, cancellation: EngineCancellation?, immediately: Bool = false) {
        let member = batch.members[index]
        var progress: (@Sendable (TransferProgress) -> Void)?
        if let relay {
            progress = { report in relay.report(member: index, report) }
        }
        runner.start(
            member, at: index, cancellation: cancellation, progress: progress, reportingTo: self,
            immediately: immediately)
    }

    /// A member ended: one trip through the lock records its outcome, takes the next member, and, when there is
    /// none, tells whether the run is over.
    func member(_ index: Int, endedWith result: Result<Response, HTTPError>) {
        let (stopped, next, waiter) = state.withLock { state in
            let stopped = state.machine.finish(index, result)
            // Without a limit, the first waves start every member (a member that ended while they ran would
            // otherwise take the next one from them).
            let next = batch.maxConcurrent == nil ? nil : state.machine.next()
            let waiter = next == nil && state.machine.takeCompletion() ? state.waiter.take() : nil
            return (stopped, next, waiter)
        }
        if stopped { cancelRunning() }
        if let next { start(next) }
        waiter?.resume()
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
        let running = state.withLock { $0.machine.running }
        for id in running { runner.cancel(id) }
    }
}
