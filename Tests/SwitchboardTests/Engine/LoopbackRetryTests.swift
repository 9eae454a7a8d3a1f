import Foundation
import Testing
@testable import Switchboard
import SwitchboardTestSupport

/// Retries that cross the real engine and a real server (loopback only: the route is not httpbin's).
@Suite struct LoopbackRetryTests {
    @Test func aRealServerThatFailsTwiceSucceedsOnTheThirdAttempt() async throws {
        let center = testCenter { config in
            config.server = Server.loopback.baseURL + "/"
            config.retryPolicy = RetryPolicy(maxAttempts: 3, initialDelay: .milliseconds(10))
        }
        let key = UUID().uuidString
        let response = try await center.send { $0.api = "fail-times/2/\(key)" }
        #expect(response.attempts == 3)
        #expect(response.json?["call"]?.int == 3)
    }

    @Test func retryAfterFromARealServer() async throws {
        let clock = ManualClock()
        let center = testCenter { config in
            config.server = Server.loopback.baseURL + "/"
            config.retryPolicy = RetryPolicy(maxAttempts: 2, initialDelay: .seconds(30))
            config.clock = clock
        }
        let response = try await center.send { request in
            request.api = "fail-times/1/\(UUID().uuidString)"
            request.parameters = ["status": 429, "retry_after": 0]
        }
        #expect(response.attempts == 2)
        // The server's `Retry-After: 0`, not the policy's 30 s backoff.
        #expect(clock.sleeps == [.zero])
    }
}
