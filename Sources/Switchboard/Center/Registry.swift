import Dispatch

/// What a center is running, by identifier, and what it remembers of finished work for `retry`.
///
/// What to do is decided by `RegistryState`, under one lock, so that work that finishes and a cancel that arrives at
/// the same moment agree on one outcome, and taking a retry record and marking the work running again is one step.
/// Cancel actions run outside the lock.
final class Registry: Sendable {
    private let state = Locked(RegistryState())
    /// How often running work with an owner is checked for a deallocated owner.
    static let ownerCheckInterval = DispatchTimeInterval.milliseconds(100)

    // MARK: - Running

    /// Records work that is about to start; work that runs in its caller's task comes with the signal that stops it,
    /// recorded in the same step, so that a cancel that finds the work always finds the signal.
    func insert(_ id: RequestID, _ work: AnyRequest, cancellation: EngineCancellation? = nil) {
        if state.withLock({ $0.insert(id, work, stop: cancellation.map(RegistryState.Stop.signal)) }) {
            scheduleOwnerCheck()
        }
    }

    /// Attaches the way to cancel the task running the work, cancelling it at once if a cancel came first.
    func attach<Success, Failure>(_ task: Task<Success, Failure>, to id: RequestID) {
        attach(cancel: { task.cancel() }, to: id)
    }

    /// Attaches the way to stop the work (its task, or the signal of work that runs in its caller's task), stopping
    /// it at once if a cancel came first.
    func attach(cancel: @escaping @Sendable () -> Void, to id: RequestID) {
        if state.withLock({ $0.attach(cancel, to: id) }) { cancel() }
    }

    /// Replaces the description on record, so that lookups see it as merged, hooked or progressed.
    func update(_ id: RequestID, _ work: AnyRequest) {
        // Released here, after the lock.
        _ = state.withLock { $0.update(id, work) }
    }

    /// Marks running work cancelled and cancels its task; returns the work, or `nil` if none was running.
    func cancel(_ id: RequestID) -> AnyRequest? {
        let found = state.withLock { $0.cancel(id) }
        found?.stop?()
        return found?.work
    }

    /// Cancels every running request and group; returns what was cancelled.
    func cancelAll() -> [AnyRequest] {
        cancel { _ in true }
    }

    /// Cancels every running request and group with this tag; returns what was cancelled.
    func cancel(tag: String) -> [AnyRequest] {
        cancel { $0.tag == tag }
    }

    /// Marks the running entries that match cancelled (under the lock), then cancels their tasks (outside it).
    @discardableResult
    private func cancel(where matches: (RegistryState.Entry) -> Bool) -> [AnyRequest] {
        let found = state.withLock { $0.cancel(where: matches) }
        for entry in found { entry.stop?() }
        return found.map(\.work)
    }

    // MARK: - Owners

    /// Checks for deallocated owners after the interval: their work is cancelled, and the check repeats while any
    /// running work has an owner.
    private func scheduleOwnerCheck() {
        DispatchQueue.global().asyncAfter(deadline: .now() + Registry.ownerCheckInterval) { [self] in
            cancel { $0.owner?.isGone == true }
            if state.withLock({ $0.ownerCheckDone() }) { scheduleOwnerCheck() }
        }
    }

    /// Removes finished work; returns whether it had been cancelled.
    func finish(_ id: RequestID) -> Bool {
        // The entry is released here, after the lock.
        state.withLock { $0.finish(id) }?.cancelled ?? false
    }

    /// The running work with this identifier.
    func work(for id: RequestID) -> AnyRequest? {
        state.withLock { $0.work(for: id) }
    }

    /// How many requests and groups are running (members of groups count on their own).
    var count: Int {
        state.withLock { $0.entries.count }
    }

    // MARK: - Remembering outcomes for retry

    /// Remembers how finished work ended (see `RegistryState.remember`).
    func remember(_ id: RequestID, failure record: RetryRecord?, limit: Int) {
        state.withLock { $0.remember(id, failure: record, limit: limit) }
    }

    /// What `retry` finds for an identifier; a failure record is taken, and the work marked running, in one step.
    func takeForRetry(_ id: RequestID) -> RegistryState.Lookup {
        let (lookup, watch) = state.withLock { $0.takeForRetry(id) }
        if watch { scheduleOwnerCheck() }
        return lookup
    }
}
