/// The requests a center is running, by identifier: what `cancel(_:)` and `request(for:)` reach.
///
/// Cancellation is decided here, under the lock, so that a request that finishes and a cancel that arrives at the
/// same moment agree on one outcome: whichever takes the lock first wins, and the other sees that.
final class Registry: Sendable {
    private struct Entry {
        var request: Request
        var cancelTask: (@Sendable () -> Void)?
        var cancelled = false
    }

    private let entries = Locked<[RequestID: Entry]>([:])

    /// Records a request that is about to start.
    func insert(_ id: RequestID, _ request: Request) {
        entries.withLock { $0[id] = Entry(request: request) }
    }

    /// Attaches the way to cancel the task running a request, cancelling it at once if a cancel came first.
    func attach<Success, Failure>(_ task: Task<Success, Failure>, to id: RequestID) {
        let cancelNow = entries.withLock { entries -> Bool in
            guard entries[id] != nil else { return false }
            entries[id]!.cancelTask = { task.cancel() }
            return entries[id]!.cancelled
        }
        if cancelNow { task.cancel() }
    }

    /// Replaces the request on record, so that lookups see it as merged and hooked.
    func update(_ id: RequestID, _ request: Request) {
        entries.withLock { entries in
            if entries[id] != nil { entries[id]!.request = request }
        }
    }

    /// Marks a running request cancelled and cancels its task; returns the request, or `nil` if none was running.
    func cancel(_ id: RequestID) -> Request? {
        let found = entries.withLock { entries -> (Request, (@Sendable () -> Void)?)? in
            guard entries[id] != nil, !entries[id]!.cancelled else { return nil }
            entries[id]!.cancelled = true
            return (entries[id]!.request, entries[id]!.cancelTask)
        }
        found?.1?()
        return found?.0
    }

    /// Removes a finished request; returns whether it had been cancelled.
    func finish(_ id: RequestID) -> Bool {
        entries.withLock { $0.removeValue(forKey: id)?.cancelled ?? false }
    }

    /// Whether a cancel has been requested for a running request.
    func isCancelled(_ id: RequestID) -> Bool {
        entries.withLock { $0[id]?.cancelled ?? false }
    }

    /// The running request with this identifier.
    func request(for id: RequestID) -> Request? {
        entries.withLock { entries in
            guard let entry = entries[id], !entry.cancelled else { return nil }
            return entry.request
        }
    }

    /// Cancels every running request; returns how many were cancelled.
    func cancelAll() -> [Request] {
        let found = entries.withLock { entries -> [(Request, (@Sendable () -> Void)?)] in
            var found: [(Request, (@Sendable () -> Void)?)] = []
            for id in entries.keys where !entries[id]!.cancelled {
                entries[id]!.cancelled = true
                found.append((entries[id]!.request, entries[id]!.cancelTask))
            }
            return found
        }
        for (_, cancelTask) in found { cancelTask?() }
        return found.map(\.0)
    }

    /// How many requests are running.
    var count: Int {
        entries.withLock { $0.count }
    }
}
