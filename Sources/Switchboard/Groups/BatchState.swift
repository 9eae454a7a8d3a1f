/// The decisions of a batch run, as a value without I/O: which member starts next, how each ends, when the batch
/// stops, and when the run is over. `BatchRun` holds it under a lock and does what it decides.
///
/// A member goes `next()` (taken from the queue) → `begin(_:id:)` (registered, now running, unless the batch stopped
/// in between) → `finish(_:_:)`. The run is over when nothing is running or about to, and the queue is empty or the
/// batch stopped; `takeCompletion()` says so once.
struct BatchState {
    /// Each member's outcome, once it has one.
    private(set) var results: [Result<Response, HTTPError>?]
    /// Members not taken yet, in member order.
    private var queue: ArraySlice<Int>
    /// Each running member's identifier, by index (`nil` for a member not running): indexed, not hashed, since every
    /// member passes here twice under the batch's lock, which the other threads' members wait on meanwhile.
    private var runningIDs: [RequestID?]
    /// How many members are running.
    private var runningCount = 0
    /// Members taken from the queue and not yet running (or dropped).
    private var starting = 0
    /// Why the batch stopped starting members, once it has.
    private(set) var stopReason: String?
    /// The member whose failure stopped a `.failFast` batch.
    private(set) var trigger: Int?
    private let failFast: Bool
    private var completed = false

    /// - Parameter previous: outcomes of an earlier run (for `retry`): members with a success there keep it and are
    ///   not run again.
    init(count: Int, previous: [Result<Response, HTTPError>]?, failFast: Bool) {
        var results = [Result<Response, HTTPError>?](repeating: nil, count: count)
        if let previous, previous.count == count {
            for (index, result) in previous.enumerated() where result.isSuccess { results[index] = result }
        }
        self.results = results
        runningIDs = Array(repeating: nil, count: count)
        queue = results.indices.filter { results[$0] == nil }[...]
        self.failFast = failFast
    }

    /// How many members are left to run.
    var pending: Int { queue.count }

    /// The running members' identifiers, in member order.
    var running: [RequestID] {
        runningIDs.compactMap { $0 }
    }

    /// Takes the next member to start, unless the batch has stopped or every member has been taken.
    mutating func next() -> Int? {
        guard stopReason == nil, let index = queue.popFirst() else { return nil }
        starting += 1
        return index
    }

    /// A member taken by `next()` and registered under `id`: whether it starts. `false` when the batch stopped in
    /// between; the member is then dropped (it will be `.notSent`).
    mutating func begin(_ index: Int, id: RequestID) -> Bool {
        starting -= 1
        guard stopReason == nil else { return false }
        runningIDs[index] = id
        runningCount += 1
        return true
    }

    /// Records a running member's outcome; returns whether it stopped the batch (the first failure under
    /// `.failFast`), so that the others must be cancelled.
    mutating func finish(_ index: Int, _ result: Result<Response, HTTPError>) -> Bool {
        if runningIDs[index] != nil {
            runningIDs[index] = nil
            runningCount -= 1
        }
        results[index] = result
        guard case .failure(let error) = result, failFast, stopReason == nil else { return false }
        trigger = index
        stopReason = "member \(index + 1) failed first (\(error.code))"
        return true
    }

    /// Stops starting members; the first reason given is kept. Returns the running members, to cancel.
    mutating func stop(because reason: String) -> [RequestID] {
        if stopReason == nil { stopReason = reason }
        return running
    }

    /// Whether the run has just become over: true once, when nothing runs or is about to, and nothing more will start.
    mutating func takeCompletion() -> Bool {
        guard !completed, runningCount == 0, starting == 0, queue.isEmpty || stopReason != nil else { return false }
        completed = true
        return true
    }

    /// One outcome per member, in member order: members that never ran are `.notSent`, with the reason.
    func outcomes(_ members: [Request]) -> [Result<Response, HTTPError>] {
        results.enumerated().map { index, result in
            result
                ?? .failure(
                    HTTPError(
                        .notSent, "member \(index + 1) of \(results.count) was not sent: \(stopReason ?? "stopped")",
                        request: members[index]))
        }
    }
}

/// A batch's progress: each member's latest report, summed as reports come, so that a report costs the same however
/// large the batch. `ProgressRelay` keeps it under the lock it passes reports on under, so that a member's report
/// takes one trip through one lock.
struct BatchProgress {
    /// Each member's latest report, by index (allocated with the first report).
    private var reports: [TransferProgress?] = []
    private let count: Int
    private var bytesDone: Int64 = 0
    private var bytesExpected: Int64 = 0
    private var withoutTotal = 0
    /// Members to run whose latest report is not complete (or who have not reported): the batch's report is final,
    /// and worth passing on at once, only when none is left.
    private var incomplete: Int

    /// - Parameters:
    ///   - count: the batch's members.
    ///   - toRun: how many of them run (members with a success from an earlier run do not, and never report).
    init(count: Int, toRun: Int) {
        self.count = count
        incomplete = toRun
    }

    /// Takes a member's latest progress report; returns the batch's (bytes done, and bytes expected when every
    /// reporting member knows its total), and whether it is final: every member to run has reported all its bytes.
    /// A member's own complete report is not the batch's: passing each on at once would cost a delivery a member.
    mutating func report(_ index: Int, _ report: TransferProgress) -> (progress: TransferProgress, final: Bool) {
        if reports.isEmpty { reports = Array(repeating: nil, count: count) }
        let previous = reports[index]
        reports[index] = report
        if let old = previous {
            bytesDone -= old.completed
            if let expected = old.expected { bytesExpected -= expected } else { withoutTotal -= 1 }
        }
        bytesDone += report.completed
        if let expected = report.expected { bytesExpected += expected } else { withoutTotal += 1 }
        let wasComplete = previous?.isComplete ?? false
        if report.isComplete != wasComplete { incomplete += report.isComplete ? -1 : 1 }
        return (
            TransferProgress(
                direction: report.direction, completed: bytesDone, expected: withoutTotal == 0 ? bytesExpected : nil),
            incomplete == 0
        )
    }
}
