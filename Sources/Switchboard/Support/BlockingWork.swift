import CCurlShim
import Foundation

/// File work that blocks for long (a checksum over a gigabyte, copying a large file part) runs on a thread of its
/// own.
///
/// Not on `DispatchQueue.global()`: on Linux the Swift task pool and Dispatch's global queues share one set of
/// threads, about one per core, and Dispatch adds threads only slowly when they block. Two such jobs on a 2-core
/// machine held up every task and every `Task.sleep` of the process for seconds. A thread costs tens of microseconds
/// to start, nothing beside work that takes milliseconds to seconds.
enum BlockingWork {
    /// Starts `work` on a new thread and returns at once.
    static func start(_ work: @escaping @Sendable () -> Void) {
        startThread(named: threadName, work)
    }

    /// Starts a thread named `name` (at most 15 bytes) that runs `body`; for any of Switchboard's own threads.
    static func startThread(named name: String, _ body: @escaping @Sendable () -> Void) {
        let thread = Thread {
            // Named from inside, through the shim: on Linux a name set before `start` is not applied (the thread
            // keeps its creator's, often a dispatch worker's), and `Thread.current.name` set here was seen not to be
            // applied in about 1 of 40 threads.
            sb_name_current_thread(name)
            body()
        }
        thread.start()
    }

    /// What the threads are called (in a debugger, `top -H`, `/proc/<pid>/task/*/comm`).
    static let threadName = "sb.file-work"

    /// Runs `work` on a new thread and waits for its result without holding a thread of the shared pool.
    static func run<T: Sendable>(_ work: @escaping @Sendable () -> T) async -> T {
        await withCheckedContinuation { continuation in
            start { continuation.resume(returning: work()) }
        }
    }
}
