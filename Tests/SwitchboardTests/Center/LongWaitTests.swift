import Foundation
import Testing
@testable import Switchboard
import SwitchboardTestSupport

/// A timeout or wait of any length is kept (as at most `Duration.longestWait`, about 31.7 years), never a crash:
/// `.seconds(Int64.max)` stopped the process in URLSession on Linux (an idle timeout), in CurlEngine (a total
/// timeout), in Swift's own sleep (a stub's or a retry's wait) and in the backoff's arithmetic.
@Suite struct LongWaitTests {
    @Test(arguments: bothEngines)
    func aTimeoutOfAnyLengthIsKept(engineName: String) async throws {
        let response = try await loopbackCenter(engineName).send { request in
            request.api = "get"
            request.timeout = .seconds(Int64.max)
            request.totalTimeout = .seconds(Int64.max)
        }
        #expect(response.status == 200)
        var encoded = EngineRequest(url: URL(string: "http://127.0.0.1/")!, timeout: .seconds(Int64.max))
        encoded.totalTimeout = .seconds(Int64.max)
        #expect(encoded.timeout == .longestWait)
        #expect(encoded.totalTimeout == .longestWait)
    }

    /// A stub's delay of any length waits, and a cancel ends it, in the caller's task and in a task of the request's
    /// own (the callback form).
    @Test func aWaitOfAnyLengthEndsWhenCancelled() async throws {
        let (center, stub) = stubCenter()
        stub.on(nil, "*", reply: .status(200).delayed(by: .seconds(Int64.max)))
        let waiting = Task { try await center.send { $0.api = "slow" } }
        let finished = AsyncStream<HTTPError.Code?>.makeStream()
        let id = center.send {
            $0.api = "slow"
        } onFinished: { result in
            finished.continuation.yield(result.failureCode)
            finished.continuation.finish()
        }
        try await Task.sleep(for: .milliseconds(100))
        waiting.cancel()
        center.cancel(id)
        do {
            _ = try await waiting.value
            Issue.record("the request ended without being cancelled")
        } catch {
            #expect((error as? HTTPError)?.code == .cancelled)
        }
        var codes: [HTTPError.Code?] = []
        for await code in finished.stream { codes.append(code) }
        #expect(codes == [.cancelled])
    }

    /// The backoff stays a wait it can sleep for, whatever its settings: a huge delay is bounded, one that is not a
    /// number is no wait.
    @Test func theBackoffStaysInRange() {
        var policy = RetryPolicy(maxAttempts: 100)
        policy.initialDelay = .seconds(Int64.max)
        policy.maxDelay = .seconds(Int64.max)
        policy.multiplier = 10
        for attempt in [1, 2, 50, 99] { #expect(policy.backoff(after: attempt) <= .longestWait) }
        policy.multiplier = .nan
        #expect(policy.backoff(after: 3) == .zero)
        policy.multiplier = 2
        policy.initialDelay = .seconds(1)
        policy.maxDelay = .seconds(4)
        policy.jitter = .nan
        #expect(policy.backoff(after: 2) == .zero)
        policy.jitter = 0
        #expect(policy.backoff(after: 2) == .seconds(2))
    }
}
