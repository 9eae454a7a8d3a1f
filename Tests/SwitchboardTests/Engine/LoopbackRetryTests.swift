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

    /// A center on the named engine whose policy waits 30 s before its one retry, on a clock the test moves.
    static func backoffCenter(_ engineName: String) throws -> (Center, ManualClock) {
        let clock = ManualClock()
        let center = try loopbackCenter(engineName) { config in
            config.retryPolicy = RetryPolicy(maxAttempts: 2, initialDelay: .seconds(30), jitter: 0)
            config.clock = clock
        }
        return (center, clock)
    }

    /// Sends a request that fails once with a 503 carrying `retryAfter`, and expects the policy's own 30 s wait
    /// before the second attempt, which succeeds.
    static func expectTheBackoff(
        _ center: Center, _ clock: ManualClock, retryAfter: String, _ label: String
    ) async throws {
        let before = clock.sleeps.count
        let sent = Task {
            try await center.send { request in
                request.api = "fail-times/1/\(UUID().uuidString)"
                request.parameters = ["status": 503, "retry_after": retryAfter]
            }
        }
        // A wait of zero is asked for too, and ends at once.
        await waitUntil { clock.sleeps.count > before }
        #expect(clock.sleeps.last == .seconds(30), "\(label), \(retryAfter)")
        clock.advance(by: .seconds(30))
        #expect(try await sent.value.attempts == 2, "\(label), \(retryAfter)")
    }

    /// A `Retry-After` that is no date or number (here `m` and a combining mark, which stopped the process inside
    /// `DateFormatter` on Linux) is ignored, on both engines: the policy's own backoff applies.
    @Test(arguments: bothEngines)
    func aRetryAfterThatIsNoDateIsIgnored(engineName: String) async throws {
        let (center, clock) = try Self.backoffCenter(engineName)
        try await Self.expectTheBackoff(center, clock, retryAfter: "m\u{338}, 06 Nov 1994 08:49:37 GMT", engineName)
    }

    /// `Retry-After` is digits (RFC 9110 section 10.2.3). A signed value is no number of seconds: `-1` was read as no
    /// wait, and the request was sent again at once, past the policy's backoff; now the backoff applies. A number of
    /// seconds too large for any clock is as good as forever, beyond the cap, so the error is final: it was read as
    /// no `Retry-After`, and the request was sent again after the backoff. Both engines.
    @Test(arguments: bothEngines)
    func aSignedOrEndlessRetryAfterIsNotAShortWait(engineName: String) async throws {
        let (center, clock) = try Self.backoffCenter(engineName)
        for signed in ["-1", "+0"] {
            try await Self.expectTheBackoff(center, clock, retryAfter: signed, engineName)
        }
        let sleeps = clock.sleeps.count
        let finished = Locked(false)
        let sent = Task {
            defer { finished.withLock { $0 = true } }
            return await center.sendRecording { request in
                request.api = "fail-times/1/\(UUID().uuidString)"
                request.parameters = ["status": 503, "retry_after": "99999999999999999999999"]
            }
        }
        await waitUntil { finished.withLock { $0 } || clock.sleeping == 1 }
        if clock.sleeping == 1 { clock.advance(by: .seconds(30)) }  // a wait asked for: let it end, and fail below
        let endless = await sent.value
        #expect(endless.error?.status == 503, "\(engineName)")
        #expect(endless.error?.response?.attempts == 1, "\(engineName)")
        #expect(clock.sleeps.count == sleeps, "\(engineName): no wait, no second attempt")
    }

    /// HTTP dates are printable ASCII; anything else is no date, and is not given to `DateFormatter`.
    @Test func httpDatesAreReadFromASCIIOnly() {
        #expect(RetryPolicy.httpDate("Sun, 06 Nov 1994 08:49:37 GMT") == Date(timeIntervalSince1970: 784_111_777))
        for text in [
            "m\u{338}", "Sun\u{301}, 06 Nov 1994 08:49:37 GMT", "Sun, 06 Nov 1994 08:49:37 GMT\u{301}",
            "\u{1F1EB}\u{1F1F7}",
        ] {
            #expect(RetryPolicy.httpDate(text) == nil, "\(text.debugDescription)")
        }
        // The cache's freshness rules read `Date`, `Expires` and `Last-Modified` the same way.
        let headers: HTTPHeaders = [
            "Date": "m\u{338}", "Expires": "Sun\u{301}, 06 Nov 1994 08:49:37 GMT", "Last-Modified": "m\u{338}",
        ]
        let now = Date()
        _ = CacheRules.currentAge(headers, requestTime: now, responseTime: now, now: now)
        _ = CacheRules.freshnessLifetime(headers, status: 200, responseTime: now, heuristic: true)
    }
}
