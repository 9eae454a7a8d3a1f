import Foundation

/// Blocking work in tests (hashing a large file, polling with `usleep`) runs on a thread of its own.
///
/// Not on `DispatchQueue.global()`: on Linux the Swift task pool and Dispatch's global queues share one set of
/// threads, about one per core, and Dispatch adds more only slowly when they block. Two blocked dispatch threads on a
/// 2-core machine held up every task and every `Task.sleep` of the test run for seconds (a 100 ms sleep was seen to
/// take 9 s), which made timing in unrelated tests meaningless.
enum OwnThread {
    /// Starts `work` on a new thread and returns at once.
    static func start(_ work: @escaping @Sendable () -> Void) {
        let thread = Thread { work() }
        thread.stackSize = 1 << 20
        thread.start()
    }

    /// Runs `work` on a new thread and waits for its result without holding a thread of the shared pool.
    static func run<T: Sendable>(_ work: @escaping @Sendable () -> T) async -> T {
        await withCheckedContinuation { continuation in
            start { continuation.resume(returning: work()) }
        }
    }
}
