import Foundation

/// Runs blocking work (waiting for a process, reading a pipe, sleeping between looks) on a thread of its own and
/// returns its result, so that it holds no thread of Swift's pool.
///
/// The pool has about one thread per core: two on CI's machine. A test that blocks one for seconds (stopping a
/// process waits for it) halves what every other test's tasks can run on, and two such tests at once stop them all;
/// a test that cancels after a delay then cancels late, and what it checks has already happened.
func offPool<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
        Thread.detachNewThread { continuation.resume(with: Result { try work() }) }
    }
}
