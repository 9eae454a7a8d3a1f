#if canImport(os)
import os
#elseif canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// A value guarded by a lock: the one place Switchboard shares mutable state between threads.
///
/// `Synchronization.Mutex` is not available on the Apple platform floor (iOS 16). The value and the lock live in
/// one allocation (`os_unfair_lock` on Apple platforms, a `pthread_mutex_t` elsewhere): Foundation's `NSLock` costs
/// several allocations on Linux, and requests create a few of these each. A copy of a `Locked` shares its value.
struct Locked<Value>: @unchecked Sendable {
    // Safety: the value is only read or written inside `withLock`, which holds the buffer's lock for the whole
    // access. Callers never await, call user code or cancel tasks inside the closure (see STYLE.md, Concurrency).
    private let buffer: Buffer

    init(_ value: Value) {
        buffer = Buffer.make(value)
    }

    @discardableResult
    func withLock<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
        try buffer.withUnsafeMutablePointers { value, lock in
            Self.lock(lock)
            defer { Self.unlock(lock) }
            return try body(&value.pointee)
        }
    }

    #if canImport(os)
    private typealias Primitive = os_unfair_lock

    private static func initialize(_ lock: UnsafeMutablePointer<Primitive>) {
        lock.initialize(to: os_unfair_lock())
    }

    private static func lock(_ lock: UnsafeMutablePointer<Primitive>) { os_unfair_lock_lock(lock) }
    private static func unlock(_ lock: UnsafeMutablePointer<Primitive>) { os_unfair_lock_unlock(lock) }
    private static func destroy(_ lock: UnsafeMutablePointer<Primitive>) {}
    #else
    private typealias Primitive = pthread_mutex_t

    private static func initialize(_ lock: UnsafeMutablePointer<Primitive>) {
        lock.initialize(to: pthread_mutex_t())
        let status = pthread_mutex_init(lock, nil)
        precondition(status == 0, "pthread_mutex_init failed: \(status)")
    }

    private static func lock(_ lock: UnsafeMutablePointer<Primitive>) {
        let status = pthread_mutex_lock(lock)
        precondition(status == 0, "pthread_mutex_lock failed: \(status)")
    }

    private static func unlock(_ lock: UnsafeMutablePointer<Primitive>) {
        let status = pthread_mutex_unlock(lock)
        precondition(status == 0, "pthread_mutex_unlock failed: \(status)")
    }

    private static func destroy(_ lock: UnsafeMutablePointer<Primitive>) {
        pthread_mutex_destroy(lock)
    }
    #endif

    /// The value (the header) and one lock (the only element), in one allocation.
    private final class Buffer: ManagedBuffer<Value, Primitive> {
        static func make(_ value: Value) -> Buffer {
            let buffer = create(minimumCapacity: 1) { _ in value }
            buffer.withUnsafeMutablePointerToElements { Locked.initialize($0) }
            // `create` is inherited from `ManagedBuffer` and returns that type; the instance is a `Buffer`.
            return unsafeDowncast(buffer, to: Buffer.self)
        }

        deinit {
            withUnsafeMutablePointerToElements { lock in
                Locked.destroy(lock)
                lock.deinitialize(count: 1)
            }
        }
    }
}

extension Locked where Value: Sendable {
    /// A copy of the current value.
    var snapshot: Value {
        withLock { $0 }
    }
}
