import Foundation

/// A value guarded by a lock: the one place Switchboard shares mutable state between threads.
///
/// `Synchronization.Mutex` is not available on the Apple platform floor (iOS 16), so this wraps `NSLock`.
final class Locked<Value>: @unchecked Sendable {
    // Safety: `value` is only read or written inside `withLock`, which holds `lock` for the whole access.
    // Callers never await, call user code or cancel tasks inside the closure (see STYLE.md, Concurrency).
    private let lock = NSLock()
    private var value: Value

    init(_ value: Value) {
        self.value = value
    }

    @discardableResult
    func withLock<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
    }
}

extension Locked where Value: Sendable {
    /// A copy of the current value.
    var snapshot: Value {
        withLock { $0 }
    }
}
