import Foundation
import Testing

@testable import Switchboard

/// The launcher's one decision: work that stops by its signal and whose caller waits runs in the caller's task; any
/// other in a task of its own. Either way a cancel by identifier reaches it.
@Suite struct LaunchTests {
    let launcher = Launcher(registry: Registry())

    @Test func waitingWorkThatStopsBySignalRunsInTheCallersTask() async {
        let request = Request()
        let launched = launcher.launch(.single(request), Launcher.Plan(waits: true, bySignal: true)) { signal in
            signal
        }
        guard case .here(let signal, _) = launched.run else {
            Issue.record("it did not wait for its caller")
            return
        }
        #expect(launcher.registry.work(for: request.id) != nil)
        launched.cancel()
        #expect(signal.isCancelled)
        // The body runs when the caller asks for the value, with the work's own signal.
        let given = await launched.value()
        #expect(given === signal)
    }

    @Test func workWhoseCallerGoesOnRunsInATaskThatACancelReaches() async {
        let request = Request()
        let started = AsyncStream<Void>.makeStream()
        let launched = launcher.launch(.single(request), Launcher.Plan(waits: false, bySignal: false)) { signal in
            started.continuation.yield()
            while !Task.isCancelled { await Task.yield() }
            return signal == nil
        }
        guard case .task = launched.run else {
            Issue.record("it ran in no task of its own")
            return
        }
        for await _ in started.stream { break }
        launched.cancel()
        #expect(await launched.value())
    }

    @Test func aRetryStopsThroughItsTaskWhateverTheEngine() async {
        let request = Request()
        launcher.registry.insert(request.id, .single(request))
        let plan = Launcher.Plan(waits: true, bySignal: true, registration: .retried)
        let launched = launcher.launch(.single(request), plan) { signal in signal == nil }
        guard case .task = launched.run else {
            Issue.record("a retry ran in its caller's task")
            return
        }
        #expect(await launched.value())
    }
}
