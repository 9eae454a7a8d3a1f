import Dispatch

/// What a center is running, by identifier, and what it remembers of finished work for `retry`.
///
/// Cancellation is decided here, under the lock, so that work that finishes and a cancel that arrives at the same
/// moment agree on one outcome: whichever takes the lock first wins, and the other sees that. Retry records live
/// under the same lock, so that taking a record and marking the work running again is one step.
final class Registry: Sendable {
    private struct Entry {
        var work: AnyRequest
        var cancelTask: (@Sendable () -> Void)?
        var cancelled = false
        /// Kept apart from `work`, which `update` replaces: what `cancel(tag:)` and the owner watch look at.
        let tag: String?
        let owner: WeakOwner?

        init(work: AnyRequest) {
            self.work = work
            let scope = work.scope
            tag = scope.tag
            owner = scope.owner
        }
    }

    private struct State {
        var entries: [RequestID: Entry] = [:]
        var failures: [RequestID: RetryRecord] = [:]
        var failureOrder: [RequestID] = []
        var successes: Set<RequestID> = []
        var successOrder: [RequestID] = []
        /// Whether a check for deallocated owners is scheduled.
        var watchingOwners = false

        /// Adds an entry; returns whether a check for deallocated owners must be scheduled.
        mutating func add(_ id: RequestID, _ work: AnyRequest) -> Bool {
            let entry = Entry(work: work)
            entries[id] = entry
            guard entry.owner != nil, !watchingOwners else { return false }
            watchingOwners = true
            return true
        }
    }

    private let state = Locked(State())
    /// How often running work with an owner is checked for a deallocated owner.
    static let ownerCheckInterval = DispatchTimeInterval.milliseconds(100)

    // MARK: - Running

    /// Records work that is about to start.
    func insert(_ id: RequestID, _ work: AnyRequest) {
        if state.withLock({ $0.add(id, work) }) { scheduleOwnerCheck() }
    }

    /// Attaches the way to cancel the task running the work, cancelling it at once if a cancel came first.
    func attach<Success, Failure>(_ task: Task<Success, Failure>, to id: RequestID) {
        attach(cancel: { task.cancel() }, to: id)
    }

    /// Attaches the way to stop the work (its task, or the signal of work that runs in its caller's task), stopping
    /// it at once if a cancel came first.
    func attach(cancel: @escaping @Sendable () -> Void, to id: RequestID) {
        let cancelNow = state.withLock { state -> Bool in
            guard state.entries[id] != nil else { return false }
            state.entries[id]!.cancelTask = cancel
            return state.entries[id]!.cancelled
        }
        if cancelNow { cancel() }
    }

    /// Replaces the description on record, so that lookups see it as merged, hooked or progressed.
    func update(_ id: RequestID, _ work: AnyRequest) {
        state.withLock { state in
            if state.entries[id] != nil { state.entries[id]!.work = work }
        }
    }

    /// Marks running work cancelled and cancels its task; returns the work, or `nil` if none was running.
    func cancel(_ id: RequestID) -> AnyRequest? {
        let found = state.withLock { state -> (AnyRequest, (@Sendable () -> Void)?)? in
            guard let entry = state.entries[id], !entry.cancelled else { return nil }
            state.entries[id]!.cancelled = true
            return (entry.work, entry.cancelTask)
        }
        found?.1?()
        return found?.0
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
    private func cancel(where matches: (Entry) -> Bool) -> [AnyRequest] {
        let found = state.withLock { state -> [(AnyRequest, (@Sendable () -> Void)?)] in
            var found: [(AnyRequest, (@Sendable () -> Void)?)] = []
            for (id, entry) in state.entries where !entry.cancelled && matches(entry) {
                state.entries[id]!.cancelled = true
                found.append((entry.work, entry.cancelTask))
            }
            return found
        }
        for (_, cancelTask) in found { cancelTask?() }
        return found.map(\.0)
    }

    // MARK: - Owners

    /// Checks for deallocated owners after the interval: their work is cancelled, and the check repeats while any
    /// running work has an owner.
    private func scheduleOwnerCheck() {
        DispatchQueue.global().asyncAfter(deadline: .now() + Registry.ownerCheckInterval) { [self] in
            cancel { $0.owner?.isGone == true }
            let again = state.withLock { state -> Bool in
                state.watchingOwners = state.entries.values.contains { $0.owner != nil && !$0.cancelled }
                return state.watchingOwners
            }
            if again { scheduleOwnerCheck() }
        }
    }

    /// Removes finished work; returns whether it had been cancelled.
    func finish(_ id: RequestID) -> Bool {
        state.withLock { $0.entries.removeValue(forKey: id)?.cancelled ?? false }
    }

    /// The running work with this identifier.
    func work(for id: RequestID) -> AnyRequest? {
        state.withLock { state in
            guard let entry = state.entries[id], !entry.cancelled else { return nil }
            return entry.work
        }
    }

    /// How many requests and groups are running (members of groups count on their own).
    var count: Int {
        state.withLock { $0.entries.count }
    }

    // MARK: - Remembering outcomes for retry

    /// Remembers how finished work ended: a failure with what is needed to run it again, or a success. At most
    /// `limit` of each are kept; the oldest go first.
    func remember(_ id: RequestID, failure record: RetryRecord?, limit: Int) {
        guard limit > 0 else { return }
        state.withLock { state in
            if let record {
                if state.failures.updateValue(record, forKey: id) == nil { state.failureOrder.append(id) }
                state.successes.remove(id)
                while state.failureOrder.count > limit {
                    state.failures.removeValue(forKey: state.failureOrder.removeFirst())
                }
            } else {
                state.failures.removeValue(forKey: id)
                if state.successes.insert(id).inserted { state.successOrder.append(id) }
                while state.successOrder.count > limit {
                    state.successes.remove(state.successOrder.removeFirst())
                }
            }
        }
    }

    /// What `retry` finds for an identifier; a failure record is taken, and the work marked running, in one step.
    enum Lookup {
        case running
        case failed(RetryRecord)
        case succeeded
        case unknown
    }

    func takeForRetry(_ id: RequestID) -> Lookup {
        var watch = false
        defer { if watch { scheduleOwnerCheck() } }
        return state.withLock { state in
            if state.entries[id] != nil { return .running }
            if let record = state.failures.removeValue(forKey: id) {
                state.failureOrder.removeAll { $0 == id }
                watch = state.add(id, record.work)
                return .failed(record)
            }
            return state.successes.contains(id) ? .succeeded : .unknown
        }
    }
}
