/// Work a center is running, as a value without I/O: `Registry` holds one for each of its stripes (the work whose
/// identifiers fall in it), each under its own lock, and runs the cancel actions it hands back outside the lock.
///
/// Cancellation is decided here, so that work that finishes and a cancel that arrives at the same moment agree on one
/// outcome: whichever is applied first wins, and the other sees it.
struct RegistryState {
    /// A way to stop running work: the signal of work that runs in its caller's task, or an action (cancelling its
    /// task). The signal is held as it is, which spares a closure per inline request.
    enum Stop: Sendable {
        case signal(EngineCancellation)
        case action(@Sendable () -> Void)

        func callAsFunction() {
            switch self {
            case .signal(let cancellation): cancellation.cancel()
            case .action(let action): action()
            }
        }
    }

    struct Entry {
        var work: AnyRequest
        var stop: Stop?
        var cancelled = false
        /// Past the point of no return (a download's file is in place): a cancel no longer reaches it.
        var committed = false
        /// The tag and owner of the work on record, which `update` replaces (a hook that tags a request makes it
        /// cancellable by that tag): read only by `cancel(tag:)` and the owner checks, so not kept apart.
        var tag: String? { work.scope.tag }
        var owner: WeakOwner? { work.scope.owner }

        init(work: AnyRequest, stop: Stop? = nil) {
            self.work = work
            self.stop = stop
        }
    }

    private(set) var entries = IDTable<Entry>()

    /// Records work that is about to start, with its way to stop when it is known already; returns whether it has an
    /// owner (whose deallocation must then be watched for).
    mutating func insert(_ id: RequestID, _ work: AnyRequest, stop: Stop? = nil) -> Bool {
        let entry = Entry(work: work, stop: stop)
        let hasOwner = entry.owner != nil
        entries.set(entry, for: id)
        return hasOwner
    }

    /// Attaches the way to stop the work; returns whether to stop it at once (a cancel came first).
    mutating func attach(_ stop: @escaping @Sendable () -> Void, to id: RequestID) -> Bool {
        entries.modify(id) { entry in
            entry.stop = .action(stop)
            return entry.cancelled
        } ?? false
    }

    /// Replaces the description on record, so that lookups see it as merged, hooked or progressed; returns the one
    /// it replaced, so that the caller releases it after the lock (the last reference to a request's storage frees
    /// it, which takes the allocator's own lock).
    mutating func update(_ id: RequestID, _ work: AnyRequest) -> AnyRequest? {
        var replaced = work
        return entries.modify(id) { entry in
            swap(&entry.work, &replaced)
            return replaced
        }
    }

    /// Marks running work cancelled; returns it and its way to stop (to call outside the lock), or `nil` when it is
    /// not running or was cancelled already.
    mutating func cancel(_ id: RequestID) -> (work: AnyRequest, stop: Stop?)? {
        entries.modify(id) { entry in
            guard !entry.cancelled, !entry.committed else { return nil }
            entry.cancelled = true
            return (entry.work, entry.stop)
        } ?? nil
    }

    /// Marks the running entries that match cancelled; returns them and their ways to stop.
    mutating func cancel(where matches: (Entry) -> Bool) -> [(work: AnyRequest, stop: Stop?)] {
        var found: [(work: AnyRequest, stop: Stop?)] = []
        entries.modifyAll { entry in
            guard !entry.cancelled, !entry.committed, matches(entry) else { return }
            entry.cancelled = true
            found.append((entry.work, entry.stop))
        }
        return found
    }

    /// Whether running work that is not cancelled has an owner, so that owners must still be watched.
    var hasOwners: Bool {
        entries.contains { $0.owner != nil && !$0.cancelled && !$0.committed }
    }

    /// Marks running work past the point of no return, unless a cancel came first; returns whether it did. From then
    /// on a cancel does not reach the work, and it finishes with its own outcome: what it did cannot be undone (a
    /// download's file replaced the one at its destination), so it must not be reported as cancelled. Work that is
    /// not running has nothing to refuse.
    mutating func commit(_ id: RequestID) -> Bool {
        entries.modify(id) { entry in
            if entry.cancelled { return false }
            entry.committed = true
            return true
        } ?? true
    }

    /// Removes finished work; returns its entry (for the caller to release after the lock, as with `update`), or
    /// `nil` when none was running.
    mutating func finish(_ id: RequestID) -> Entry? {
        entries.remove(id)
    }

    /// The running work with this identifier, unless it was cancelled.
    func work(for id: RequestID) -> AnyRequest? {
        guard let entry = entries[id], !entry.cancelled else { return nil }
        return entry.work
    }

    /// Looks an identifier up for `retry` in `memory`: a failure record is taken, and the work marked running here,
    /// in one step (the caller holds both locks). Returns whether the work taken back has an owner.
    mutating func takeForRetry(
        _ id: RequestID, from memory: inout RetryMemory
    ) -> (RetryMemory.Lookup, hasOwner: Bool) {
        if entries.contains(id) { return (.running, false) }
        if let record = memory.takeFailure(id) {
            return (.failed(record), insert(id, record.work))
        }
        return (memory.succeeded(id) ? .succeeded : .unknown, false)
    }
}

/// How a center's finished work ended, for `retry`: failures with what is needed to run them again, and successes.
/// At most `limit` of each are kept; the oldest go first. `Registry` holds it under a lock of its own.
struct RetryMemory {
    private var failures: [RequestID: RetryRecord] = [:]
    private var failureOrder = Order()
    /// Successes in order, looked up by a search: only `retry` looks, and hashing each success in and out of a set
    /// cost every callback-form request about 500 instructions.
    private var successes = Order()

    /// Identifiers in the order they were remembered. The oldest leaves first in constant time: the array's start
    /// moves, and the array is compacted once half of it is behind the start (removing the first element of an
    /// array moves all the others, and every success of a full memory removed one).
    struct Order {
        private var ids: [RequestID] = []
        private var start = 0

        var count: Int { ids.count - start }

        mutating func append(_ id: RequestID) {
            ids.append(id)
        }

        mutating func removeFirst() -> RequestID {
            let id = ids[start]
            start += 1
            if start >= 32 && start * 2 >= ids.count {
                ids.removeFirst(start)
                start = 0
            }
            return id
        }

        func contains(_ id: RequestID) -> Bool {
            ids[start...].contains(id)
        }

        mutating func removeAll(_ id: RequestID) {
            ids.removeFirst(start)
            start = 0
            ids.removeAll { $0 == id }
        }
    }

    /// Remembers how finished work ended: a failure with what is needed to run it again, or a success.
    mutating func remember(_ id: RequestID, failure record: RetryRecord?, limit: Int) {
        guard limit > 0 else { return }
        if let record {
            if failures.updateValue(record, forKey: id) == nil { failureOrder.append(id) }
            if successes.contains(id) { successes.removeAll(id) }
            while failureOrder.count > limit {
                failures.removeValue(forKey: failureOrder.removeFirst())
            }
        } else {
            if !failures.isEmpty { failures.removeValue(forKey: id) }
            successes.append(id)  // once: a success is final, and `retry` refuses it
            while successes.count > limit {
                _ = successes.removeFirst()
            }
        }
    }

    /// What `retry` finds for an identifier.
    enum Lookup {
        case running
        case failed(RetryRecord)
        case succeeded
        case unknown
    }

    /// Takes the failure record of an identifier, if one is kept.
    mutating func takeFailure(_ id: RequestID) -> RetryRecord? {
        guard let record = failures.removeValue(forKey: id) else { return nil }
        failureOrder.removeAll(id)
        return record
    }

    /// Whether the identifier's success is remembered.
    func succeeded(_ id: RequestID) -> Bool {
        successes.contains(id)
    }
}

/// What `retry` needs to run finished, failed work again under the same identifier: the work, and a group's results
/// so far. Not its callbacks, which have fired.
enum RetryRecord: Sendable {
    case single(Request)
    case batch(BatchRequest, [Result<Response, HTTPError>])
    case chain(ChainRequest, [Result<Response, HTTPError>])

    var work: AnyRequest {
        switch self {
        case .single(let request): .single(request)
        case .batch(let batch, _): .batch(batch)
        case .chain(let chain, _): .chain(chain)
        }
    }
}
