import Foundation
import Testing
@testable import Switchboard

/// Retries through the Center with `StubEngine` and a manual clock: no test sleeps.
@Suite struct RetryPolicyTests {
    func center(
        _ stub: StubEngine, clock: ManualClock, policy: RetryPolicy = .default
    ) -> Center {
        stubCenter(stub) { config in
            config.retryPolicy = policy
            config.clock = clock
        }.0
    }

    @Test func succeedsOnTheThirdAttemptUnderTheSameIdentifier() async throws {
        let stub = StubEngine()
        stub.on(nil, "*", replies: [.status(503), .status(503), .json(["ok": true])])
        let clock = ManualClock()
        let center = center(stub, clock: clock)
        let seenIDs = Locked<Set<RequestID>>([])
        center.setup { config in
            config.onRequest = { request in _ = seenIDs.withLock { $0.insert(request.id) } }
        }
        let task = Task { await center.sendRecording { $0.api = "x" } }
        await waitUntil { clock.sleeping == 1 }
        #expect(center.retry(stub.requests[0].id!) { _ in } == .running)
        clock.advance(by: .seconds(60))
        await waitUntil { clock.sleeping == 1 && stub.statistics.calls == 2 }
        clock.advance(by: .seconds(60))
        let outcome = await task.value
        #expect(outcome.events == ["success", "finished"])
        #expect(outcome.response?.attempts == 3)
        #expect(stub.statistics.calls == 3)
        #expect(seenIDs.snapshot == [outcome.id])
        #expect(Set(stub.requests.map(\.id)) == [outcome.id])
    }

    /// XMNetworking's retryCount, for ported code: a POST answered 404, then 500, is sent again, 2 s
    /// after each failure; a cancel is not (XMNetworking resent a cancelled request).
    @Test func theXMNetworkingPolicyRetriesAnyFailureEveryTwoSecondsButNotACancel() async throws {
        let stub = StubEngine()
        stub.on(.post, "/v1/orders", replies: [.status(404), .status(500), .json(["ok": true])])
        let clock = ManualClock()
        let center = center(stub, clock: clock, policy: .never)
        let task = Task {
            await center.sendRecording { request in
                request.api = "orders"
                request.method = .post
                request.retry = .xmNetworking(retryCount: 2)
            }
        }
        for retry in 1...2 {
            await waitUntil { clock.sleeping == 1 && clock.sleeps.count == retry }
            clock.advance(by: .seconds(2))
        }
        let outcome = await task.value
        #expect(outcome.response?.attempts == 3)
        #expect(clock.sleeps == [.seconds(2), .seconds(2)], "a fixed 2 s, no backoff, no jitter")

        // Out of attempts: the last failure is the outcome.
        stub.on(.post, "/v1/broken", reply: .status(404))
        let failing = Task {
            await center.sendRecording {
                $0.api = "broken"; $0.method = .post; $0.retry = .xmNetworking(retryCount: 1)
            }
        }
        await waitUntil { clock.sleeping == 1 }
        clock.advance(by: .seconds(2))
        #expect(await failing.value.error?.status == 404)
        #expect(stub.requests.filter { $0.url?.path == "/v1/broken" }.count == 2)

        // A cancel ends it: nothing is sent again.
        stub.on(.post, "/v1/slow", reply: .status(200).delayed(by: .seconds(30)))
        let cancelled = Task {
            await center.sendRecording(
                {
                    $0.api = "slow"; $0.method = .post; $0.retry = .xmNetworking(retryCount: 3)
                },
                afterSending: { id in
                    // Cancelled once it is on the (stub) network, so that there is something not to send again.
                    BlockingWork.start {
                        while !stub.requests.contains(where: { $0.url?.path == "/v1/slow" }) { usleep(1000) }
                        center.cancel(id)
                    }
                }
            )
        }
        #expect(await cancelled.value.error?.code == .cancelled)
        #expect(stub.requests.filter { $0.url?.path == "/v1/slow" }.count == 1)
        #expect(RetryPolicy.xmNetworking(retryCount: 1).errorCodes.contains(.cancelled) == false)
    }

    /// `retryCount = .max` (retry forever) stopped the process: one attempt more than `Int.max` overflowed. It now
    /// retries until the request is cancelled; a negative count means no retry.
    @Test func aRetryCountOfIntMaxRetriesWithoutStoppingTheProcess() async throws {
        #expect(RetryPolicy.attempts(retrying: .max) == .max)
        #expect(RetryPolicy.attempts(retrying: -4) == 1)
        #expect(RetryPolicy.attempts(retrying: 2) == 3)
        #expect(RetryPolicy.xmNetworking(retryCount: .max).maxAttempts == .max)
        let stub = StubEngine()
        stub.on(nil, "*", reply: .status(503))
        let clock = ManualClock()
        let center = center(stub, clock: clock)
        let task = Task {
            await center.sendRecording {
                $0.api = "x"; $0.retryCount = .max
            }
        }
        for calls in 1...5 {
            await waitUntil { clock.sleeping == 1 && stub.statistics.calls == calls }
            #expect(stub.statistics.calls == calls)
            clock.advance(by: .seconds(60))
        }
        await waitUntil { stub.requests.count == 6 }
        center.cancel(stub.requests[0].id!)
        let outcome = await task.value
        #expect(outcome.error?.code == .cancelled)
        #expect(stub.statistics.calls >= 6)
    }

    @Test func backoffGrowsWithinTheJitterBounds() async {
        let stub = StubEngine()
        stub.on(nil, "*", reply: .status(500))
        let clock = ManualClock()
        let policy = RetryPolicy(
            maxAttempts: 5, initialDelay: .seconds(1), multiplier: 2, maxDelay: .seconds(5), jitter: 0.5)
        let center = center(stub, clock: clock, policy: policy)
        let task = Task { await center.sendRecording { $0.api = "x" } }
        for retry in 1...4 {
            await waitUntil { clock.sleeping == 1 && clock.sleeps.count == retry }
            clock.advance(by: .seconds(10))
        }
        let outcome = await task.value
        #expect(outcome.error?.status == 500)
        #expect(outcome.error?.response?.attempts == 5)
        let sleeps = clock.sleeps
        // 1 s, 2 s, 4 s, then capped at 5 s; each less up to half of it.
        let expected: [Duration] = [.seconds(1), .seconds(2), .seconds(4), .seconds(5)]
        #expect(sleeps.count == 4)
        for (sleep, full) in zip(sleeps, expected) {
            #expect(sleep <= full && sleep >= full / 2, "\(sleep) not within [\(full / 2), \(full)]")
        }
    }

    @Test func retryAfterIsObeyedInSecondsAndAsADate() async {
        let stub = StubEngine()
        let date = Date().addingTimeInterval(300)
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        stub.on(
            nil, "*",
            replies: [
                .status(429, headers: ["Retry-After": "7"]),
                .status(503, headers: ["Retry-After": formatter.string(from: date)]),
                .status(204),
            ])
        let clock = ManualClock()
        let center = center(
            stub, clock: clock, policy: RetryPolicy(maxAttempts: 3, jitter: 0, maxRetryAfter: .seconds(600)))
        let task = Task { await center.sendRecording { $0.api = "x" } }
        await waitUntil { clock.sleeping == 1 }
        clock.advance(by: .seconds(7))
        await waitUntil { clock.sleeping == 1 && clock.sleeps.count == 2 }
        clock.advance(by: .seconds(301))
        let outcome = await task.value
        #expect(outcome.response?.status == 204)
        #expect(clock.sleeps.first == .seconds(7))
        // The date lies 300 s ahead when the test starts (less whatever time has passed since, even in a slow
        // sanitizer build; HTTP dates are whole seconds): far above the policy's own 1 s backoff, never more.
        let second = clock.sleeps.last ?? .zero
        #expect(second > .seconds(200) && second <= .seconds(300), "\(second)")
    }

    @Test func aRetryAfterBeyondTheCapEndsTheRequest() async {
        let stub = StubEngine()
        stub.on(nil, "*", reply: .status(503, headers: ["Retry-After": "3600"]))
        let clock = ManualClock()
        let center = center(stub, clock: clock, policy: RetryPolicy(maxAttempts: 3, maxRetryAfter: .seconds(60)))
        let outcome = await center.sendRecording { $0.api = "x" }
        #expect(outcome.error?.status == 503)
        #expect(stub.statistics.calls == 1)
        #expect(clock.sleeps.isEmpty)
    }

    @Test func postIsNotRetriedByDefaultButCanBe() async {
        let stub = StubEngine()
        stub.on(nil, "/v1/x", replies: [.status(503), .status(200)])
        stub.on(nil, "/v1/y", replies: [.status(503), .status(200)])
        let clock = ManualClock()
        let center = center(stub, clock: clock)
        let outcome = await center.sendRecording {
            $0.api = "x"; $0.method = .post
        }
        #expect(outcome.error?.status == 503)
        #expect(stub.statistics.calls == 1)

        let task = Task {
            await center.sendRecording { request in
                request.api = "y"
                request.method = .post
                request.retry = RetryPolicy(maxAttempts: 2, methods: [.post])
            }
        }
        await waitUntil { clock.sleeping == 1 }
        clock.advance(by: .seconds(60))
        #expect(await task.value.response?.status == 200)
    }

    @Test func notRetried() async {
        // A status that is not retryable, a decoding error and a business error all end at once.
        let stub = StubEngine()
        stub.on(nil, "/v1/missing", reply: .status(404))
        stub.on(nil, "/v1/garbled", reply: .string("not json"))
        let clock = ManualClock()
        let center = center(stub, clock: clock)
        #expect(await center.sendRecording { $0.api = "missing" }.error?.code == .unacceptableStatus)
        #expect(await center.sendRecording { $0.api = "garbled" }.error?.code == .decoding)
        #expect(stub.statistics.calls == 2)
        #expect(clock.sleeps.isEmpty)
    }

    @Test func theBudgetExhaustedReportsTheLastErrorToOnErrorOnce() async {
        let stub = StubEngine()
        stub.on(nil, "*", replies: [.status(502), .status(503), .status(504)])
        let clock = ManualClock()
        let mapped = Locked<[Int?]>([])
        let center = center(stub, clock: clock)
        center.setup { config in
            config.onError = { _, error in
                mapped.withLock { $0.append(error.status) }; return error
            }
        }
        let task = Task {
            await center.sendRecording {
                $0.api = "x"; $0.retryCount = 2
            }
        }
        for retry in 1...2 {
            await waitUntil { clock.sleeping == 1 && clock.sleeps.count == retry }
            clock.advance(by: .seconds(60))
        }
        let outcome = await task.value
        #expect(outcome.error?.status == 504)
        #expect(outcome.events == ["failure:unacceptableStatus", "finished"])
        #expect(mapped.snapshot == [504])
    }

    @Test func transportErrorsAreRetried() async {
        let stub = StubEngine()
        stub.on(nil, "*", replies: [.failure(URLError(.networkConnectionLost)), .json(["ok": true])])
        let clock = ManualClock()
        let center = center(stub, clock: clock)
        let task = Task { await center.sendRecording { $0.api = "x" } }
        await waitUntil { clock.sleeping == 1 }
        clock.advance(by: .seconds(60))
        #expect(await task.value.response?.attempts == 2)
    }

    @Test func cancellingDuringTheBackoffEndsTheRequestAtOnce() async {
        let stub = StubEngine()
        stub.on(nil, "*", reply: .status(503))
        let clock = ManualClock()
        let center = center(stub, clock: clock, policy: RetryPolicy(maxAttempts: 10, initialDelay: .seconds(3600)))
        let outcome = await center.sendRecording {
            $0.api = "x"
        } afterSending: { id in
            Task {
                await waitUntil { clock.sleeping == 1 }
                center.cancel(id)
            }
        }
        #expect(outcome.events == ["failure:cancelled", "finished"])
        #expect(stub.statistics.calls == 1)
        #expect(clock.sleeping == 0)
    }

    @Test func cancellingABatchDuringAMembersBackoffStopsItAtOnce() async {
        let stub = StubEngine()
        stub.on(nil, "/v1/flaky", reply: .status(503))
        stub.on(nil, "/v1/fine", reply: .status(200))
        let clock = ManualClock()
        let center = center(stub, clock: clock, policy: RetryPolicy(maxAttempts: 5, initialDelay: .seconds(3600)))
        let outcome = await center.groupRecording(
            batch: { batch in
                batch.add { $0.api = "fine" }
                batch.add { $0.api = "flaky" }
            },
            afterSending: { id in
                Task {
                    await waitUntil { clock.sleeping == 1 && stub.statistics.inFlight == 0 }
                    center.cancel(id)
                }
            })
        #expect(outcome.summary == ["ok", "cancelled"])
        #expect(stub.statistics.calls == 2)
        #expect(clock.sleeping == 0)
    }

    @Test func retryCountIsShorthandForTheAttemptBudget() {
        var request = Request()
        request.retryCount = 4
        var configuration = Center.Configuration()
        configuration.retryPolicy = RetryPolicy(maxAttempts: 2, initialDelay: .seconds(9))
        let policy = request.retryPolicy(in: configuration)
        #expect(policy.maxAttempts == 5)
        #expect(policy.initialDelay == .seconds(9))
        #expect(Request().retryPolicy(in: Center.Configuration()).maxAttempts == 1)
    }

    @Test func httpDatesParse() {
        let date = RetryPolicy.httpDate("Sun, 06 Nov 1994 08:49:37 GMT")
        #expect(date?.timeIntervalSince1970 == 784_111_777)
        #expect(RetryPolicy.httpDate("yesterday") == nil)
    }
}
