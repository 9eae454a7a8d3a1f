import Foundation

/// Runs async work to its end from top-level code, then exits: 0 when it returned, 1 (saying why on standard error)
/// when it threw.
///
/// The main thread serves the main queue with a run loop meanwhile, instead of the `dispatchMain()` an async main
/// ends in: valgrind (see `.ci/engine-count`) cannot run a process whose main thread waits in `sigsuspend`, as
/// `dispatchMain()`'s does on Linux, while others start threads. So the benchmark's top-level code has no `await`.
func runToEnd(_ what: String, _ work: @escaping @Sendable () async throws -> Void) -> Never {
    Task.detached {
        do {
            try await work()
            exit(0)
        } catch {
            FileHandle.standardError.write(Data("\(what) failed: \(error)\n".utf8))
            exit(1)
        }
    }
    while true { _ = RunLoop.main.run(mode: .default, before: .distantFuture) }
}
