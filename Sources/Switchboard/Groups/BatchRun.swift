/// Runs the members of a batch, at most `maxConcurrent` at a time, and collects their results in member order.
///
/// Each member runs through the whole single-request path under its own identifier. The run stops starting members
/// when the batch is cancelled, or at the first failure under `.failFast`; it then cancels the running ones through
/// the registry (so each ends as `.cancelled`), and reports members that never started as `.notSent`.
final class BatchRun: Sendable {
    private struct State {
        var results: [Result<Response, HTTPError>?]
        var running: [Int: RequestID] = [:]
        var stopReason: String?
        var trigger: Int?
        var progress: [Int: TransferProgress] = [:]
        /// Sums over `progress`, kept as reports come, so a report costs the same however large the batch.
        var completed: Int64 = 0
        var expected: Int64 = 0
        var withoutTotal = 0
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
        var results = [Result<Response, HTTPError>?](repeating: nil, count: batch.members.count)
        if let previous, previous.count == results.count {
            for (index, result) in previous.enumerated() where result.isSuccess { results[index] = result }
        }
        state = Locked(State(results: results))
    }

    /// Runs every member that has no success yet; returns one result per member, in member order.
    func run() async -> [Result<Response, HTTPError>] {
        if let invalid = invalidReason() {
            return [.failure(HTTPError(.invalidGroup, invalid))]
        }
        let pending = state.withLock { state in state.results.indices.filter { state.results[$0] == nil } }
        await withTaskCancellationHandler {
            await withTaskGroup(of: (Int, Result<Response, HTTPError>).self) { group in
                var queue = pending[...]
                let limit = batch.maxConcurrent ?? pending.count
                for _ in 0..<limit {
                    guard let index = queue.popFirst() else { break }
                    if !launch(index, in: &group) { queue.removeAll() }
                }
                for await (index, result) in group {
                    record(index, result)
                    if let next = queue.popFirst(), !launch(next, in: &group) { queue.removeAll() }
                }
            }
        } onCancel: {
            stop(because: "the batch was cancelled")
        }
        return state.withLock { state in
            state.results.enumerated().map { index, result in
                result ?? .failure(HTTPError(
                    .notSent,
                    "member \(index + 1) of \(state.results.count) was not sent: \(state.stopReason ?? "stopped")",
                    request: batch.members[index]))
            }
        }
    }

    /// The member whose failure stopped a `.failFast` batch, if one did.
    var trigger: Int? {
        state.withLock { $0.trigger }
    }

    private func invalidReason() -> String? {
        if batch.members.isEmpty { return "the batch has no members: add some with `batch.add { ... }`" }
        if let limit = batch.maxConcurrent, limit < 1 { return "maxConcurrent is \(limit); it must be at least 1" }
        return nil
    }

    /// Starts a member unless the batch has stopped. The member is registered before it counts as running, so a
    /// cancel that sees it running can always reach it.
    private func launch(_ index: Int, in group: inout TaskGroup<(Int, Result<Response, HTTPError>)>) -> Bool {
        let member = batch.members[index]
        runner.register(member)
        let started = state.withLock { state -> Bool in
            guard state.stopReason == nil else { return false }
            state.running[index] = member.id!
            return true
        }
        guard started else {
            runner.unregister(member)
            return false
        }
        var progress: (@Sendable (TransferProgress) -> Void)?
        if relay != nil {
            progress = { [self] report in self.report(index, report) }
        }
        let task = runner.start(member, progress: progress)
        group.addTask { (index, await task.value) }
        return true
    }

    private func record(_ index: Int, _ result: Result<Response, HTTPError>) {
        let failFast = state.withLock { state -> Bool in
            state.results[index] = result
            state.running[index] = nil
            guard case .failure(let error) = result, batch.policy == .failFast, state.stopReason == nil else {
                return false
            }
            state.trigger = index
            state.stopReason = "member \(index + 1) failed first (\(error.code))"
            return true
        }
        if failFast { cancelRunning() }
    }

    private func stop(because reason: String) {
        state.withLock { state in
            if state.stopReason == nil { state.stopReason = reason }
        }
        cancelRunning()
    }

    private func cancelRunning() {
        let running = state.withLock { Array($0.running.values) }
        for id in running { runner.cancel(id) }
    }

    /// Sums the members' latest reports: bytes done, and bytes expected when every reporting member knows its total.
    private func report(_ index: Int, _ progress: TransferProgress) {
        let total = state.withLock { state -> TransferProgress in
            if let old = state.progress.updateValue(progress, forKey: index) {
                state.completed -= old.completed
                if let expected = old.expected { state.expected -= expected } else { state.withoutTotal -= 1 }
            }
            state.completed += progress.completed
            if let expected = progress.expected { state.expected += expected } else { state.withoutTotal += 1 }
            return TransferProgress(
                direction: progress.direction, completed: state.completed,
                expected: state.withoutTotal == 0 ? state.expected : nil)
        }
        relay?.report(total)
    }
}
