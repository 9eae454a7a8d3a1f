import Foundation

/// Passes progress reports on, at most about 60 a second: a report that comes too soon is held and passed on when
/// the interval is over (so a transfer that stalls still shows its latest count), or when the transfer finishes.
/// Nothing is passed on after that.
final class ProgressRelay: Sendable {
    private struct State {
        var last: ContinuousClock.Instant?
        var pending: TransferProgress?
        var flushScheduled = false
        var finished = false
        /// A batch's members' reports, summed here (see `report(member:_:)`).
        var members: BatchProgress?

        /// Passes `progress` on (inside the lock) or holds it; returns whether a flush must be scheduled.
        mutating func admit(
            _ progress: TransferProgress, final: Bool, at now: ContinuousClock.Instant,
            deliver: (TransferProgress) -> Void
        ) -> Bool {
            guard !finished else { return false }
            if !final, let last, now - last < ProgressRelay.interval {
                pending = progress
                if flushScheduled { return false }
                flushScheduled = true
                return true
            }
            last = now
            pending = nil
            deliver(progress)
            return false
        }
    }

    private let deliver: @Sendable (TransferProgress) -> Void
    private let state = Locked(State())
    private static let interval = Duration.milliseconds(16)

    init(deliver: @escaping @Sendable (TransferProgress) -> Void) {
        self.deliver = deliver
    }

    /// Delivers on a queue; a serial one keeps the reports in order and ahead of the outcome queued after them.
    convenience init(queue: DispatchQueue, handler: @escaping @Sendable (TransferProgress) -> Void) {
        self.init { progress in queue.async { handler(progress) } }
    }

    // Reports are handed over inside the lock, so they keep their order; `deliver` only enqueues (`queue.async`,
    // `AsyncStream.Continuation.yield`) and never runs user code there.

    /// Passes a report on at once when it is the first, complete, or the interval has passed since the last; else
    /// holds it (the newest held replaces the one before) and passes it on when the interval is over.
    func report(_ progress: TransferProgress) {
        report(progress, final: progress.isComplete)
    }

    /// As `report(_:)`, with `final` saying whether nothing more is to come (a batch's sum is final only when every
    /// member's report is complete, not when each member's is).
    func report(_ progress: TransferProgress, final: Bool) {
        // The time is read inside the lock: read before, by a thread held up on the way to the lock, it was older
        // than the report passed on meanwhile, and the next report then went out less than the interval after.
        let scheduleFlush = state.withLock { state in
            state.admit(progress, final: final, at: ContinuousClock.now, deliver: deliver)
        }
        if scheduleFlush { scheduleFlushHeld() }
    }

    /// Sums a batch's members' reports from now on (see `report(member:_:)`).
    func sum(_ members: BatchProgress) {
        state.withLock { $0.members = members }
    }

    /// A member's report, for a relay that sums a batch's (`sum(_:)`): it is added to the batch's sum, which is
    /// passed on as `report(_:final:)` would, in the same trip through the lock (a lock of the batch's own for the
    /// sum, then this one, were two trips for every member, each waited on by the other threads' members).
    func report(member index: Int, _ report: TransferProgress) {
        let scheduleFlush = state.withLock { state in
            guard let (progress, final) = state.members?.report(index, report) else { return false }
            return state.admit(progress, final: final, at: ContinuousClock.now, deliver: deliver)
        }
        if scheduleFlush { scheduleFlushHeld() }
    }

    private func scheduleFlushHeld() {
        DispatchQueue.global().asyncAfter(deadline: .now() + ProgressRelay.interval.seconds) { [self] in
            flushHeld()
        }
    }

    /// Passes on the report held back, if any, and stops.
    func finish() {
        state.withLock { state in
            guard !state.finished else { return }
            state.finished = true
            if let pending = state.pending { deliver(pending) }
            state.pending = nil
        }
    }

    private func flushHeld() {
        state.withLock { state in
            state.flushScheduled = false
            guard !state.finished, let pending = state.pending else { return }
            state.pending = nil
            state.last = ContinuousClock.now
            deliver(pending)
        }
    }
}
