import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
@testable import Switchboard
import SwitchboardTestSupport

/// The per-host limit of both engines: requests beyond it wait in the engine, the wait does not count against the
/// idle timeout, it does count against the total timeout, and a cancelled waiter never reaches the server.
@Suite struct HostQueueTests {
    static func peak(_ key: String, window: Double) async throws -> (count: Int, peak: Int) {
        let json = try await testCenter().send {
            $0.url = LoopbackServer.shared.baseURL + "/arrivals-peak/\(key)?window=\(window)"
        }.json
        return (json?["count"]?.int ?? -1, json?["peak"]?.int ?? -1)
    }

    @Test func theLimitCountsPerOriginWhateverItsSpelling() {
        func origin(_ text: String) -> Origin { HostQueue.origin(of: URL(string: text)) }
        let plain = origin("http://api.example.com/users")
        #expect(plain == Origin(scheme: "http", host: "api.example.com", port: 80))
        #expect(origin("HTTP://API.Example.COM:80/other?q=1") == plain, "case and the default port do not matter")
        #expect(origin("http://api.ex%61mple.com/") == plain, "nor percent-encoding in the host")
        #expect(
            origin("https://api.example.com/") == Origin(scheme: "https", host: "api.example.com", port: 443))
        #expect(origin("http://api.example.com:8080/") != plain)
        #expect(origin("http://ÄPI.example.com/") == origin("http://äpi.example.com/"), "nor case beyond ASCII")
        #expect(HostQueue.origin(of: nil) == Origin(scheme: "", host: "", port: 0))
    }

    @Test func defaults() throws {
        #expect(URLSessionEngine().maximumConnectionsPerHost == 6)
        #expect(try CurlEngine().maximumConnectionsPerHost == nil)
        #expect(try CurlEngine(maximumConnectionsPerHost: 0).maximumConnectionsPerHost == 1)
    }

    /// 16 two-second requests, 4 at a time, each with a 4 s idle timeout: the last ones wait 6 s in the queue and
    /// still succeed (URLSession counted that wait as idle time and timed them out). Each exchange is idle for half
    /// the timeout: with one second to spare, a loaded machine timed one out in a full run of the suite. Requests
    /// that arrive within 1.8 s of each other are all still held (2 s each), so at most 4 can; a wider window would
    /// count two rounds, a narrower one is at the mercy of when a loaded machine starts the tasks.
    @Test(arguments: bothEngines)
    func waitingForAConnectionIsNotIdleTime(engineName: String) async throws {
        let center = testCenter { $0.engine = try! namedEngine(engineName, perHost: 4) }
        let key = "queue-idle-\(engineName)-\(UUID().uuidString)"
        let outcomes = await withTaskGroup(of: Outcome.self) { group in
            for _ in 0..<16 {
                group.addTask {
                    await center.sendRecording { request in
                        request.url = LoopbackServer.shared.baseURL + "/arrivals/\(key)?delay=2"
                        request.timeout = .seconds(4)
                    }
                }
            }
            return await group.reduce(into: []) { $0.append($1) }
        }
        let failures = outcomes.compactMap(\.error).map { "\($0.code)" }
        #expect(failures.isEmpty, "\(engineName): \(failures.count) of 16 failed: \(failures)")
        let seen = try await Self.peak(key, window: 1.8)
        #expect(seen.count == 16)
        #expect(seen.peak == 4, "\(engineName): \(seen.peak) requests at once, limit 4")
    }

    /// Without a limit CurlEngine runs them all at once. Each is held 4 s, so under a limit of N below 12 the
    /// request after the first N would arrive 4 s after the first: all 12 within 3.8 s shows there is none. (A 1 s
    /// hold and a 0.8 s window once saw 9 in a full run on a loaded machine, whose tasks started over more than
    /// 0.8 s.)
    @Test func curlEngineHasNoLimitByDefault() async throws {
        let center = testCenter { $0.engine = try! CurlEngine() }
        let key = "queue-none-\(UUID().uuidString)"
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<12 {
                group.addTask {
                    _ = await center.sendRecording {
                        $0.url = LoopbackServer.shared.baseURL + "/arrivals/\(key)?delay=4"
                    }
                }
            }
        }
        let seen = try await Self.peak(key, window: 3.8)
        #expect(seen == (12, 12))
    }

    @Test(arguments: bothEngines)
    func theWaitCountsAgainstTheTotalTimeout(engineName: String) async throws {
        let center = testCenter { $0.engine = try! namedEngine(engineName, perHost: 1) }
        let key = "queue-total-\(engineName)-\(UUID().uuidString)"
        // The first holds the only place for 120 s from its arrival, and the second is sent once the first has
        // arrived, not after a fixed time: on a busy machine the first's task may start late (the second then took
        // the place), and the steps between may take seconds (a 2 s hold once ended before the second was sent, and
        // a suite's tasks have waited 40 s for a thread as it starts). The first is cancelled once the second is
        // done.
        async let first = center.sendRecording { $0.url = LoopbackServer.shared.baseURL + "/arrivals/\(key)?delay=120" }
        while try await Self.peak(key, window: 150).count < 1 { try await Task.sleep(for: .milliseconds(20)) }
        let second = await center.sendRecording { request in
            request.url = LoopbackServer.shared.baseURL + "/arrivals/\(key)"
            request.totalTimeout = .milliseconds(500)
        }
        #expect(second.error?.code == .timedOut, "\(engineName): \(String(describing: second.error))")
        #expect(try await Self.peak(key, window: 150).count == 1)
        center.cancelAll()
        #expect(await first.error?.code == .cancelled)
    }

    @Test(arguments: bothEngines)
    func aCancelledWaiterNeverReachesTheServer(engineName: String) async throws {
        let center = testCenter { $0.engine = try! namedEngine(engineName, perHost: 1) }
        let key = "queue-cancel-\(engineName)-\(UUID().uuidString)"
        // The first holds the only place for 20 s from its arrival; the second is cancelled while it waits behind
        // it. Each step waits for the one before (not for a fixed time), so a busy machine cannot reorder them; the
        // 20 s are the time a busy machine gets for the steps (10 s ran out once, in a full run that took 84 s).
        async let first = center.sendRecording { $0.url = LoopbackServer.shared.baseURL + "/arrivals/\(key)?delay=20" }
        var polls = 0
        while try await Self.peak(key, window: 10).count == 0, polls < 500 {
            polls += 1
            try await Task.sleep(for: .milliseconds(10))
        }
        let waiting = Task { try await center.send { $0.url = LoopbackServer.shared.baseURL + "/arrivals/\(key)" } }
        await waitUntil { center.registry.count == 2 }
        waiting.cancel()
        do {
            _ = try await waiting.value
            Issue.record("\(engineName): the cancelled request succeeded")
        } catch {
            #expect((error as? HTTPError)?.code == .cancelled, "\(engineName): \(error)")
        }
        #expect(await first.error == nil)
        // The place the cancelled waiter held in line is not lost: a third request gets through.
        let third = await center.sendRecording { $0.url = LoopbackServer.shared.baseURL + "/arrivals/\(key)" }
        #expect(third.error == nil)
        #expect(try await Self.peak(key, window: 10).count == 2)
    }
}

/// The clock readings deadlines and durations are made of: they follow `ContinuousClock`, and a deadline past the
/// clock's range ("never") stays at its end instead of wrapping round to the past.
@Suite struct MomentTests {
    @Test func readingsFollowTheContinuousClock() async throws {
        let (clockStart, start) = (ContinuousClock.now, Moment.now)
        try await Task.sleep(for: .milliseconds(30))
        let (elapsed, clockElapsed) = (Moment.now - start, ContinuousClock.now - clockStart)
        #expect(elapsed >= .milliseconds(30))
        #expect(abs((elapsed - clockElapsed) / .milliseconds(1)) < 5, "\(elapsed) against \(clockElapsed)")
        #expect(start + .milliseconds(1500) - start == .milliseconds(1500))
        #expect(start + .seconds(-2) - start == .seconds(-2))
    }

    @Test func aDeadlinePastTheClocksRangeStaysAtItsEnd() {
        let now = Moment.now
        let never = now + .seconds(Int64.max)
        #expect(now < never && now < now + .seconds(Int64.max / 1_000_000_000 - 1_000_000_000))
        #expect(HostQueue.remaining(until: never) > .seconds(100 * 365 * 86_400))
        #expect(now + .seconds(Int64.min) < now)
        // Seconds that fit as nanoseconds, whose fraction then passes the end of the range.
        #expect(now + (.seconds(Int64.max / 1_000_000_000) + .milliseconds(999)) > now)
        #expect(now + (.seconds(Int64.min / 1_000_000_000) - .milliseconds(999)) < now)
        #expect(HostQueue.remaining(until: now + .seconds(-5)) == .milliseconds(1))
    }
}
