import Foundation
import Testing

@testable import Switchboard

/// The launcher's one decision: work that stops by its signal and whose caller waits runs in the caller's task; any
/// other in a task of its own. Either way a cancel by identifier reaches it.
@Suite struct LaunchTests {
    let launcher = Launcher(registry: Registry())

    /// The running task, told apart from others by its hash (the task's address), which a closure may capture.
    private static var currentTask: Int? { withUnsafeCurrentTask { $0?.hashValue } }

    @Test func waitingWorkThatStopsBySignalRunsInTheCallersTask() async {
        let request = Request()
        let (registry, caller) = (launcher.registry, Self.currentTask)
        let (ranInCaller, signal) = await launcher.run(.single(request), bySignal: true) { signal in
            // Registered before it runs, with its own signal, which a cancel by identifier fires.
            #expect(registry.work(for: request.id) != nil)
            _ = registry.cancel(request.id)
            return (Self.currentTask == caller, signal)
        }
        #expect(ranInCaller, "it ran in a task of its own")
        #expect(signal?.isCancelled == true)
    }

    @Test func waitingWorkThatCannotStopBySignalRunsInATaskOfItsOwn() async {
        let request = Request()
        let (registry, caller) = (launcher.registry, Self.currentTask)
        let (ranInOwnTask, reached, signal) = await launcher.run(.single(request), bySignal: false) { signal in
            // A cancel by identifier reaches its task.
            _ = registry.cancel(request.id)
            return (Self.currentTask != caller, Task.isCancelled, signal)
        }
        #expect(ranInOwnTask, "it ran in its caller's task")
        #expect(reached, "a cancel by identifier did not reach its task")
        #expect(signal == nil)
    }

    @Test func workWhoseCallerGoesOnRunsInATaskThatACancelReaches() async {
        let request = Request()
        let started = AsyncStream<Void>.makeStream()
        let launched = launcher.launch(.single(request), Launcher.Plan(bySignal: false)) { signal in
            started.continuation.yield()
            while !Task.isCancelled { await Task.yield() }
            return signal == nil
        }
        for await _ in started.stream { break }
        launched.cancel()
        #expect(await launched.value())
    }

    @Test func aRetryStopsThroughItsTaskWhateverTheEngine() async {
        let request = Request()
        launcher.registry.insert(request.id, .single(request))
        let plan = Launcher.Plan(bySignal: true, registration: .retried)
        let launched = launcher.launch(.single(request), plan) { signal in signal == nil }
        #expect(await launched.value(), "a retry ran with a signal of its own")
    }
}
