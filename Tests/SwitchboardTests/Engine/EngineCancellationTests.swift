import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
@testable import Switchboard
import SwitchboardTestSupport

/// `EngineCancellation`: every handler still registered runs once when it fires, a removed one never, and one added
/// after it fired runs at once.
@Suite struct EngineCancellationTests {
    final class Calls: Sendable {
        let names = Locked<[String]>([])
        func add(_ name: String) { names.withLock { $0.append(name) } }
        var sorted: [String] { names.withLock { $0.sorted() } }
    }

    @Test func handlersRunOnceUnlessRemoved() {
        let signal = EngineCancellation()
        let calls = Calls()
        let first = signal.add { calls.add("first") }
        let second = signal.add { calls.add("second") }
        _ = signal.add { calls.add("third") }
        signal.remove(first)
        let fourth = signal.add { calls.add("fourth") }
        signal.remove(second)
        _ = fourth
        #expect(calls.sorted.isEmpty)
        signal.cancel()
        #expect(calls.sorted == ["fourth", "third"])
        signal.cancel()
        #expect(calls.sorted == ["fourth", "third"], "a second cancel runs nothing")
        #expect(signal.isCancelled)
        let late = signal.add { calls.add("late") }
        #expect(late == nil)
        #expect(calls.sorted == ["fourth", "late", "third"], "added after it fired: runs at once")
    }

    @Test func theOnlyHandlerRemovedLeavesNothingToRun() {
        let signal = EngineCancellation()
        let calls = Calls()
        signal.remove(signal.add { calls.add("only") })
        signal.cancel()
        #expect(calls.sorted.isEmpty)
    }

    /// `withCancellationHandler` calls `onCancel` once, whether the signal or the task fires first, or both.
    @Test func theRequestsHandlerRunsOnceForBothSignals() async {
        var request = EngineRequest(url: URL(string: "http://example.com/")!)
        let signal = EngineCancellation()
        request.cancellation = signal
        let calls = Calls()
        let task = Task {
            await request.withCancellationHandler {
                signal.cancel()
                withUnsafeCurrentTask { $0?.cancel() }
            } onCancel: {
                calls.add("cancelled")
            }
        }
        await task.value
        #expect(calls.sorted == ["cancelled"])
    }
}

/// Both ways of cancelling an exchange at once, on each engine: the request's signal and the task.
@Suite struct EngineDoubleCancelTests {
    @Test(arguments: bothEngines)
    func theSignalAndTheTaskTogetherEndTheExchangeOnceAndTheEngineGoesOn(engineName: String) async throws {
        let engine = try namedEngine(engineName)
        let base = LoopbackServer.shared.baseURL
        // The route drips for a minute: an exchange the cancels did not stop would end with a response. No bound on
        // the time is asserted: under the whole suite's load the test's own task may wait seconds for a thread.
        for _ in 0..<3 {
            var request = EngineRequest(url: URL(string: base + "/drip?numbytes=10&duration=60")!)
            let signal = EngineCancellation()
            request.cancellation = signal
            let task = Task { try await engine.perform(request) { _ in } }
            try await Task.sleep(for: .milliseconds(100))
            signal.cancel()
            task.cancel()
            let outcome = await task.result
            guard case .failure(let error) = outcome else {
                Issue.record("\(engineName): a cancelled exchange returned a response")
                continue
            }
            #expect(error is CancellationError || (error as? URLError)?.code == .cancelled, "\(engineName): \(error)")
        }
        let after = try await engine.perform(EngineRequest(url: URL(string: base + "/get")!)) { _ in }
        #expect(after.status == 200, "\(engineName): the engine serves requests after the double cancels")
    }
}
