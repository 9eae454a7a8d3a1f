import Foundation

#if !canImport(Darwin)
/// Runs a task's jobs on a dispatch queue: a callback-form request whose callbacks go to the center's private queue
/// runs there from the start, so that its callbacks are made where it already is.
///
/// Without it, such a request ran on Swift's pool and then handed its callbacks to the queue: one more thread woken
/// for every request (on Linux, Swift's tasks and Dispatch's queues share about one thread a core, and the threads
/// left idle while a request runs have gone to sleep by the time it ends). Linux only: on Apple platforms a task
/// executor needs macOS 15 and iOS 18, and their pool is apart from Dispatch's queues.
final class QueueExecutor: TaskExecutor {
    let queue: DispatchQueue

    init(_ queue: DispatchQueue) {
        self.queue = queue
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        queue.async { [self] in job.runSynchronously(on: asUnownedTaskExecutor()) }
    }
}
#else
/// Apple platforms run callback-form requests on Swift's pool and hand the callbacks to their queue (see the Linux
/// declaration): no value of this type exists there.
enum QueueExecutor: Sendable {}
#endif
