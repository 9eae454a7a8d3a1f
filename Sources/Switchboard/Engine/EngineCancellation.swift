import Foundation
#if os(Linux)
import Synchronization
#endif

/// Cancels one exchange from outside its Swift task.
///
/// The center runs an `async` request in the caller's own task, which saves a task and two thread hops a request;
/// `Center.cancel(_:)` then cannot cancel that task (it is the caller's), so it fires this instead. An engine that
/// honours it (see `Engine.honoursCancellation`) stops the exchange as it would for task cancellation, most simply
/// by using `EngineRequest.withCancellationHandler(operation:onCancel:)` where it would use
/// `withTaskCancellationHandler`.
public final class EngineCancellation: Sendable {
    private struct State {
        var cancelled = false
        /// The first handler added (most signals have one at a time, the engine's), then any others: a dictionary
        /// only when there are two at once.
        var first: (key: UInt64, handler: @Sendable () -> Void)?
        var others = [UInt64: @Sendable () -> Void]()
        var next: UInt64 = 0

        mutating func take() -> [@Sendable () -> Void] {
            defer {
                first = nil
                others = [:]
            }
            return (first.map { [$0.handler] } ?? []) + Array(others.values)
        }
    }

    #if os(Linux)
    // The state and its lock live in the signal itself: one allocation for each request run in its caller's task,
    // instead of two. `Mutex` needs macOS 15 / iOS 18, above the Apple platform floor, so Apple platforms keep
    // `Locked`, whose `withLock` has the same shape.
    private let state = Mutex(State())
    /// `State.cancelled`, read without the lock: a request asks at several of its steps.
    private let fired = Atomic(false)
    #else
    private let state = Locked(State())
    #endif

    /// Creates a signal that has not fired.
    public init() {}

    /// Whether it has fired.
    public var isCancelled: Bool {
        #if os(Linux)
        fired.load(ordering: .acquiring)
        #else
        state.withLock { $0.cancelled }
        #endif
    }

    /// Fires: runs every handler once, now. Later calls do nothing.
    public func cancel() {
        let handlers = state.withLock { state -> [@Sendable () -> Void] in
            guard !state.cancelled else { return [] }
            state.cancelled = true
            #if os(Linux)
            fired.store(true, ordering: .releasing)
            #endif
            return state.take()
        }
        for handler in handlers { handler() }
    }

    /// Runs `handler` when the signal fires (at once, on this thread, if it has); returns a key for `remove(_:)`.
    @discardableResult
    public func add(_ handler: @escaping @Sendable () -> Void) -> UInt64? {
        let key = state.withLock { state -> UInt64? in
            guard !state.cancelled else { return nil }
            state.next += 1
            if state.first == nil {
                state.first = (state.next, handler)
            } else {
                state.others[state.next] = handler
            }
            return state.next
        }
        if key == nil { handler() }
        return key
    }

    /// Forgets a handler that has not run.
    public func remove(_ key: UInt64?) {
        guard let key else { return }
        state.withLock { state in
            if state.first?.key == key {
                state.first = nil
            } else {
                state.others[key] = nil
            }
        }
    }

    /// Sleeps on the continuous clock, ending early (with `CancellationError`) when the signal fires or the task is
    /// cancelled.
    func sleep(for duration: Duration) async throws {
        let woken = Locked<CheckedContinuation<Void, any Error>?>(nil)
        let key = Locked<UInt64?>(nil)
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                woken.withLock { $0 = continuation }
                let wake: @Sendable (Result<Void, any Error>) -> Void = { result in
                    woken.withLock { pending -> CheckedContinuation<Void, any Error>? in
                        defer { pending = nil }
                        return pending
                    }?.resume(with: result)
                }
                key.withLock { $0 = add { wake(.failure(CancellationError())) } }
                if Task.isCancelled { wake(.failure(CancellationError())) }
                DispatchQueue.global().asyncAfter(deadline: .now() + duration.seconds) { wake(.success(())) }
            }
        } onCancel: {
            woken.withLock { pending -> CheckedContinuation<Void, any Error>? in
                defer { pending = nil }
                return pending
            }?.resume(throwing: CancellationError())
        }
        remove(key.withLock { $0 })
    }
}

extension EngineRequest {
    /// Runs `operation`, calling `onCancel` once if the task is cancelled or the request's `cancellation` fires while
    /// it runs: what `withTaskCancellationHandler` does, for engines that honour `EngineCancellation`.
    public func withCancellationHandler<T>(
        operation: () async throws -> T, onCancel: @escaping @Sendable () -> Void
    ) async rethrows -> T {
        // Without a signal only the task calls the handler, and at most once: nothing to guard.
        guard let cancellation else {
            return try await withTaskCancellationHandler(operation: operation, onCancel: onCancel)
        }
        // The handler and whether it ran, in one allocation; the closure captures only that.
        let once = Locked<(@Sendable () -> Void)?>(onCancel)
        let fire: @Sendable () -> Void = {
            once.withLock { handler in
                defer { handler = nil }
                return handler
            }?()
        }
        let key = cancellation.add(fire)
        defer { cancellation.remove(key) }
        return try await withTaskCancellationHandler(operation: operation, onCancel: fire)
    }

    /// Whether the task is cancelled or the request's `cancellation` has fired.
    public var isCancelled: Bool {
        Task.isCancelled || cancellation?.isCancelled == true
    }

    /// Throws `CancellationError` when `isCancelled`.
    public func checkCancellation() throws {
        if isCancelled { throw CancellationError() }
    }
}

extension EngineCancellation {
    /// Sleeps on a clock (the center's); work that runs in its caller's task also wakes when `cancellation` fires.
    static func sleep(
        for duration: Duration, on clock: any Clock<Duration>, cancellation: EngineCancellation?
    ) async throws {
        let duration = duration.boundedAsWait
        guard let cancellation else { return try await clock.sleep(for: duration) }
        if clock is ContinuousClock { return try await cancellation.sleep(for: duration) }
        let sleeper = Task { try await clock.sleep(for: duration) }
        let key = cancellation.add { sleeper.cancel() }
        defer { cancellation.remove(key) }
        try await withTaskCancellationHandler {
            try await sleeper.value
        } onCancel: {
            sleeper.cancel()
        }
    }
}
