import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
@testable import Switchboard
import SwitchboardTestSupport

/// An `async` request on an engine that honours `EngineCancellation` runs in its caller's task; cancelling it by
/// identifier, tag or `cancelAll` must still end it at once as `.cancelled`, wherever it waits: in the engine, in
/// the engine's per-host queue, in a retry's backoff, or in a stub's delay. Each wait is 30 s or more and the outcome
/// must come within 20 s of the cancel (a loose bound, for loaded machines): without the signal the request would
/// still end as `.cancelled` (the registry says so), but only when the wait was over.
@Suite struct InlineCancellationTests {
    /// Sends in a task, waits until the center lists the request, cancels it with `cancel`, and returns the error.
    static func cancelled(
        _ center: Center, after running: Int = 1, _ configure: @escaping @Sendable (inout Request) -> Void,
        cancel: @escaping @Sendable (Center) -> Void
    ) async -> HTTPError? {
        let task = Task { try await center.send(configure) }
        await waitUntil({ center.registry.count >= running }, timeout: .seconds(10))
        try? await Task.sleep(for: .milliseconds(100))
        let clock = ContinuousClock()
        let start = clock.now
        cancel(center)
        let result = await task.result
        #expect(clock.now - start < .seconds(20), "the cancel took effect only after the wait")
        if case .failure(let error) = result { return error as? HTTPError }
        return nil
    }

    @Test func theBuiltInEnginesRunAsyncRequestsInline() throws {
        #expect(URLSessionEngine().honoursCancellation)
        #expect(try CurlEngine().honoursCancellation)
        #expect(StubEngine().honoursCancellation)
        let center = Center { $0.engine = StubEngine() }
        #expect(Center.stopsBySignal(Request(), center.configuration))
        #expect(!Center.stopsBySignal(Request { $0.deduplicate = true }, center.configuration))
    }

    @Test(arguments: bothEngines)
    func cancelAllEndsARequestWaitingOnTheServer(engineName: String) async throws {
        let engine = try namedEngine(engineName)
        let center = Center {
            $0.engine = engine; $0.server = LoopbackServer.shared.baseURL + "/"
        }
        let error = await Self.cancelled(center, { $0.api = "fault/stall-after-head?seconds=30" }) {
            _ = $0.cancelAll()
        }
        #expect(error?.code == .cancelled, "\(engineName): \(String(describing: error))")
        #expect(center.registry.count == 0)
    }

    @Test(arguments: bothEngines)
    func cancelByTagEndsARequestQueuedForAConnection(engineName: String) async throws {
        let engine = try namedEngine(engineName, perHost: 1)
        let center = Center {
            $0.engine = engine; $0.server = LoopbackServer.shared.baseURL + "/"
        }
        let blocker = Task {
            try await center.send {
                $0.api = "fault/stall-after-head?seconds=30"; $0.tag = "blocker"
            }
        }
        await waitUntil({ center.registry.count == 1 }, timeout: .seconds(10))
        let error = await Self.cancelled(
            center, after: 2,
            {
                $0.api = "get"; $0.tag = "queued"
            }
        ) {
            _ = $0.cancel(tag: "queued")
        }
        #expect(error?.code == .cancelled, "\(engineName): \(String(describing: error))")
        center.cancel(tag: "blocker")
        if case .failure(let error) = await blocker.result {
            #expect((error as? HTTPError)?.code == .cancelled)
        } else {
            Issue.record("\(engineName): the blocker was not cancelled")
        }
    }

    @Test func cancelAllEndsARetryBackoff() async throws {
        let stub = StubEngine()
        stub.on(nil, "*", reply: .status(503))
        let center = Center { config in
            config.engine = stub
            config.server = "https://api.example.com/"
            config.retryPolicy = RetryPolicy(
                maxAttempts: 3, initialDelay: .seconds(60), maxDelay: .seconds(60), jitter: 0)
        }
        let error = await Self.cancelled(center, { $0.api = "flaky" }) { _ = $0.cancelAll() }
        #expect(error?.code == .cancelled, "\(String(describing: error))")
        #expect(stub.requests.count == 1)
    }

    @Test func cancelAllEndsAStubDelay() async throws {
        let stub = StubEngine()
        stub.on(nil, "*", reply: .status(200).delayed(by: .seconds(60)))
        let center = Center {
            $0.engine = stub; $0.server = "https://api.example.com/"
        }
        let error = await Self.cancelled(center, { $0.api = "slow" }) { _ = $0.cancelAll() }
        #expect(error?.code == .cancelled, "\(String(describing: error))")
        #expect(stub.statistics.cancellations == 1)
    }

    /// An engine that does not honour the signal keeps the request in a task of its own, which `cancelAll` cancels.
    @Test func anEngineWithoutTheSignalStillCancels() async throws {
        struct Waiting: Engine {
            func perform(
                _ request: EngineRequest, progress: @escaping @Sendable (TransferProgress) -> Void
            ) async throws -> EngineResponse {
                try await Task.sleep(for: .seconds(60))
                throw URLError(.timedOut)
            }
        }
        #expect(!Waiting().honoursCancellation)
        let center = Center {
            $0.engine = Waiting(); $0.server = "https://api.example.com/"
        }
        #expect(!Center.stopsBySignal(Request(), center.configuration))
        let error = await Self.cancelled(center, { $0.api = "x" }) { _ = $0.cancelAll() }
        #expect(error?.code == .cancelled, "\(String(describing: error))")
    }
}
