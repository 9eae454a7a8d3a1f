import Dispatch

/// What a center is running, by identifier, and what it remembers of finished work for `retry`.
///
/// Running work is kept in stripes by identifier, each a `RegistryState` under a lock of its own: every request
/// passes the registry three times (start, the description after prepare, finish), and with one lock for all, work
/// starting on one thread and work finishing on another kept waiting for each other (a 10,000-member batch on two
/// threads made a system call of every other trip). Within a stripe, work that finishes and a cancel that arrives at
/// the same moment agree on one outcome, and taking a retry record and marking the work running again is one step
/// (under the memory's lock and the stripe's, always taken in that order). Cancel actions run outside the locks.
final class Registry: Sendable {
    private static let stripeCount = 16
    private let stripes: [Locked<RegistryState>]
    private let memory = Locked(RetryMemory())
    /// The center's limit on requests in flight on its engine (`maxRequestsInFlight`), and who waits for a place.
    let admission = Admission()
    /// Whether a check for deallocated owners is scheduled. Its lock is taken alone, or before a stripe's.
    private let watchingOwners = Locked(false)
    /// How often running work with an owner is checked for a deallocated owner.
    static let ownerCheckInterval = DispatchTimeInterval.milliseconds(100)

    init() {
        stripes = (0..<Registry.stripeCount).map { _ in Locked(RegistryState()) }
    }

    /// The stripe that keeps this identifier's work. Identifiers are handed out in sequence, so work started together
    /// spreads over every stripe.
    private func stripe(_ id: RequestID) -> Locked<RegistryState> {
        stripes[Int(id.rawValue % UInt64(Registry.stripeCount))]
    }

    // MARK: - Running

    /// Records work that is about to start; work that runs in its caller's task comes with the signal that stops it,
    /// recorded in the same step, so that a cancel that finds the work always finds the signal.
    func insert(_ id: RequestID, _ work: AnyRequest, cancellation: EngineCancellation? = nil) {
        if stripe(id).withLock({ $0.insert(id, work, stop: cancellation.map(RegistryState.Stop.signal)) }) {
            watchOwners()
        }
    }

    /// Attaches the way to cancel the task running the work, cancelling it at once if a cancel came first.
    func attach<Success, Failure>(_ task: Task<Success, Failure>, to id: RequestID) {
        attach(cancel: { task.cancel() }, to: id)
    }

    /// Attaches the way to stop the work (its task, or the signal of work that runs in its caller's task), stopping
    /// it at once if a cancel came first.
    func attach(cancel: @escaping @Sendable () -> Void, to id: RequestID) {
        if stripe(id).withLock({ $0.attach(cancel, to: id) }) { cancel() }
    }

    /// Replaces the description on record, so that lookups see it as merged, hooked or progressed (and cancels by
    /// its tag and owner, which a hook may have set).
    func update(_ id: RequestID, _ work: AnyRequest) {
        // Released here, after the lock.
        _ = stripe(id).withLock { $0.update(id, work) }
        if work.scope.owner != nil { watchOwners() }
    }

    /// Marks running work cancelled and cancels its task; returns the work, or `nil` if none was running.
    func cancel(_ id: RequestID) -> AnyRequest? {
        let found = stripe(id).withLock { $0.cancel(id) }
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

    /// Marks the running entries that match cancelled (stripe by stripe, each under its lock), then cancels their
    /// tasks (outside the locks).
    @discardableResult
    private func cancel(where matches: (RegistryState.Entry) -> Bool) -> [AnyRequest] {
        var found: [(work: AnyRequest, stop: RegistryState.Stop?)] = []
        for stripe in stripes { found += stripe.withLock { $0.cancel(where: matches) } }
        for entry in found { entry.stop?() }
        return found.map(\.work)
    }

    // MARK: - Owners

    /// Starts the checks for deallocated owners, unless they run already.
    private func watchOwners() {
        let start = watchingOwners.withLock { watching in
            defer { watching = true }
            return !watching
        }
        if start { scheduleOwnerCheck() }
    }

    /// Checks for deallocated owners after the interval: their work is cancelled, and the check repeats while any
    /// running work has an owner. Whether one has is decided under the flag's lock, so that work with an owner
    /// inserted meanwhile either is seen here or finds the flag down and starts the checks again.
    private func scheduleOwnerCheck() {
        DispatchQueue.global().asyncAfter(deadline: .now() + Registry.ownerCheckInterval) { [self] in
            cancel { $0.owner?.isGone == true }
            let again = watchingOwners.withLock { watching in
                watching = stripes.contains { $0.withLock { $0.hasOwners } }
                return watching
            }
            if again { scheduleOwnerCheck() }
        }
    }

    /// Removes finished work; returns whether it had been cancelled.
    func finish(_ id: RequestID) -> Bool {
        finishing(id) == .cancelled
    }

    /// How finished work stood when it was removed.
    enum Ending {
        /// A cancel reached it.
        case cancelled
        /// It had passed the point of no return (`commit`): its outcome is its own, whatever cancels came after.
        case committed
        /// Neither, or it was not running.
        case finished
    }

    /// Removes finished work; returns how it stood.
    func finishing(_ id: RequestID) -> Ending {
        // The entry is released here, after the lock.
        guard let entry = stripe(id).withLock({ $0.finish(id) }) else { return .finished }
        return entry.cancelled ? .cancelled : entry.committed ? .committed : .finished
    }

    /// Marks running work past the point of no return, unless a cancel came first; returns whether it did (see
    /// `RegistryState.commit`).
    func commit(_ id: RequestID) -> Bool {
        stripe(id).withLock { $0.commit(id) }
    }

    /// The running work with this identifier.
    func work(for id: RequestID) -> AnyRequest? {
        stripe(id).withLock { $0.work(for: id) }
    }

    /// How many requests and groups are running (members of groups count on their own).
    var count: Int {
        stripes.reduce(0) { count, stripe in count + stripe.withLock { $0.entries.count } }
    }

    // MARK: - Remembering outcomes for retry

    /// Remembers how finished work ended (see `RetryMemory.remember`).
    func remember(_ id: RequestID, failure record: RetryRecord?, limit: Int) {
        memory.withLock { $0.remember(id, failure: record, limit: limit) }
    }

    /// What `retry` finds for an identifier; a failure record is taken, and the work marked running, in one step.
    func takeForRetry(_ id: RequestID) -> RetryMemory.Lookup {
        let stripe = stripe(id)
        let (lookup, hasOwner) = memory.withLock { memory in
            stripe.withLock { $0.takeForRetry(id, from: &memory) }
        }
        if hasOwner { watchOwners() }
        return lookup
    }
}
