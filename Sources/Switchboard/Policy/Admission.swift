/// A center's limit on requests in flight (`CenterConfiguration.maxRequestsInFlight`): a request past it waits for a
/// place before its engine gets it, and waiting requests start in priority order, first come first served within a
/// priority. A request cancelled while it waits leaves the queue and never reaches the engine.
final class Admission: Sendable {
    private let state = Locked(AdmissionState<CheckedContinuation<Void, any Error>>())

    /// Waits for a place, at once when there is one. `isCancelled` is read under the queue's lock, so that a cancel
    /// whose handler ran before the request joined the queue still stops it.
    ///
    /// - Throws: `CancellationError` when the request is cancelled while it waits; it then holds no place.
    func admit(
        _ id: RequestID, priority: RequestPriority, limit: Int, isCancelled: @escaping @Sendable () -> Bool
    ) async throws {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            enum Next { case start, wait, cancelled }
            let next = state.withLock { state -> Next in
                if isCancelled() { return .cancelled }
                return state.admit(id, priority: priority.value, limit: limit, waiter: continuation) ? .start : .wait
            }
            switch next {
            case .start: continuation.resume()
            case .cancelled: continuation.resume(throwing: CancellationError())
            case .wait: break
            }
        }
    }

    /// Takes a waiting request out of the queue (its cancel handler), failing its wait.
    func cancel(_ id: RequestID) {
        state.withLock { $0.remove(id) }?.resume(throwing: CancellationError())
    }

    /// Gives a place back: the next waiting requests start, as many as `limit` now allows.
    func release(limit: Int) {
        for waiter in state.withLock({ $0.release(limit: limit) }) { waiter.resume() }
    }

    /// How many requests wait (for tests).
    var waiting: Int { state.withLock { $0.waitingCount } }
}

/// What `Admission` decides, without I/O: who runs, who waits, who starts next. `Waiter` is what wakes a waiting
/// request (a continuation; a plain value in tests).
struct AdmissionState<Waiter> {
    private(set) var running = 0
    /// The waiting requests by priority, highest first; each queue first come first served, read from `head` on (a
    /// 10,000-member batch under a limit takes its queue's first member 10,000 times).
    private var queues: [(priority: Int, head: Int, waiting: [(id: RequestID, waiter: Waiter)])] = []
    private(set) var waitingCount = 0

    /// Whether the request starts now (there is a place and nobody waits for one); otherwise it joins its priority's
    /// queue.
    mutating func admit(_ id: RequestID, priority: Int, limit: Int, waiter: Waiter) -> Bool {
        if waitingCount == 0, running < max(1, limit) {
            running += 1
            return true
        }
        if let index = queues.firstIndex(where: { $0.priority == priority }) {
            queues[index].waiting.append((id, waiter))
        } else {
            let index = queues.firstIndex { $0.priority < priority } ?? queues.count
            queues.insert((priority, 0, [(id, waiter)]), at: index)
        }
        waitingCount += 1
        return false
    }

    /// A place given back; returns the waiters that start now, highest priority first.
    mutating func release(limit: Int) -> [Waiter] {
        running -= 1
        var starting: [Waiter] = []
        while running < max(1, limit), !queues.isEmpty {
            starting.append(queues[0].waiting[queues[0].head].waiter)
            queues[0].head += 1
            if queues[0].head == queues[0].waiting.count { queues.removeFirst() }
            waitingCount -= 1
            running += 1
        }
        return starting
    }

    /// Takes a waiting request out of its queue; `nil` when it is not waiting (it started, or never came).
    mutating func remove(_ id: RequestID) -> Waiter? {
        for index in queues.indices {
            let queue = queues[index]
            guard let position = queue.waiting[queue.head...].firstIndex(where: { $0.id == id }) else { continue }
            let waiter = queues[index].waiting.remove(at: position).waiter
            if queues[index].head == queues[index].waiting.count { queues.remove(at: index) }
            waitingCount -= 1
            return waiter
        }
        return nil
    }
}
