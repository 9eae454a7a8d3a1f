import Foundation
import Testing
@testable import Switchboard
import SwitchboardTestSupport

/// `RetryPolicy.idempotencyKey`: a `POST` or `PATCH` carries one key, made for it, on every attempt, and is retried;
/// through `StubEngine` with a manual clock (no test sleeps), and over loopback on both engines.
@Suite struct IdempotencyKeyTests {
    static let header = "Idempotency-Key"

    func center(_ stub: StubEngine, clock: ManualClock, policy: RetryPolicy) -> Center {
        stubCenter(stub) { config in
            config.retryPolicy = policy
            config.clock = clock
        }.0
    }

    /// The keys the engine was sent, one per attempt, in order.
    func keys(_ stub: StubEngine) -> [String?] {
        stub.requests.map { $0.headers[Self.header] }
    }

    /// Sends `configure`'s request and lets every retry wait pass at once.
    func sendPassingWaits(
        _ center: Center, _ clock: ManualClock, _ stub: StubEngine, attempts: Int,
        _ configure: @escaping @Sendable (inout Request) -> Void
    ) async -> Outcome {
        let task = Task { await center.sendRecording(configure) }
        for retry in 1..<attempts {
            await waitUntil { clock.sleeping == 1 && stub.statistics.calls == retry }
            clock.advance(by: .seconds(60))
        }
        return await task.value
    }

    @Test func aPostCarriesOneKeyOnEveryAttemptAndIsRetried() async throws {
        let stub = StubEngine()
        stub.on(.post, "/v1/payments", replies: [.status(503), .status(503), .json(["paid": true])])
        let clock = ManualClock()
        let center = center(stub, clock: clock, policy: RetryPolicy(idempotencyKey: Self.header))
        let outcome = await sendPassingWaits(center, clock, stub, attempts: 3) { request in
            request.api = "payments"
            request.method = .post
            request.parameters = ["amount": 100]
        }
        #expect(outcome.events == ["success", "finished"])
        #expect(outcome.response?.attempts == 3)
        let keys = keys(stub)
        #expect(keys.count == 3)
        let key = try #require(keys.first ?? nil)
        #expect(UUID(uuidString: key) != nil, "a UUID: \(key)")
        #expect(keys.allSatisfy { $0 == key }, "one key for every attempt: \(keys)")
        #expect(outcome.response?.request.headers[Self.header] == key, "the response's request shows the key")
    }

    @Test func withoutAKeyAPostIsSentOnceAndCarriesNone() async {
        let stub = StubEngine()
        stub.on(.post, "/v1/payments", replies: [.status(503), .json(["paid": true])])
        let clock = ManualClock()
        let center = center(stub, clock: clock, policy: .default)
        let outcome = await center.sendRecording { request in
            request.api = "payments"
            request.method = .post
        }
        #expect(outcome.error?.status == 503)
        #expect(keys(stub) == [nil])
    }

    @Test func onlyPostAndPatchGetAKey() async {
        let stub = StubEngine()
        stub.on(nil, "*", reply: .json(["ok": true]))
        let center = center(stub, clock: ManualClock(), policy: RetryPolicy(idempotencyKey: Self.header))
        for method in [HTTPMethod.get, .head, .put, .delete, .options, .post, .patch] {
            _ = await center.sendRecording { request in
                request.api = "things"
                request.method = method
            }
        }
        let keyed = stub.requests.map { ($0.method, $0.headers[Self.header] != nil) }
        #expect(keyed.filter(\.1).map(\.0) == [.post, .patch])
        #expect(keyed.count == 7)
    }

    /// An upload left at `GET` goes as a `POST`, and gets its key.
    @Test func anUploadThatBecomesAPostGetsAKey() async {
        let stub = StubEngine()
        stub.on(nil, "*", reply: .json(["ok": true]))
        let center = center(stub, clock: ManualClock(), policy: RetryPolicy(idempotencyKey: Self.header))
        _ = await center.sendRecording { request in
            request.api = "avatars"
            request.kind = .upload
            request.addFormData(name: "avatar", data: Data("png".utf8), fileName: "a.png")
        }
        #expect(stub.requests.first?.method == .post)
        #expect(keys(stub).first??.isEmpty == false)
    }

    @Test func aKeyOfTheCallersOwnIsKeptAndRetried() async {
        let stub = StubEngine()
        stub.on(.patch, "/v1/orders/7", replies: [.status(502), .json(["ok": true])])
        let clock = ManualClock()
        let center = center(stub, clock: clock, policy: RetryPolicy(idempotencyKey: Self.header))
        let outcome = await sendPassingWaits(center, clock, stub, attempts: 2) { request in
            request.api = "orders/7"
            request.method = .patch
            request.headers[Self.header] = "order-7-change-1"
        }
        #expect(outcome.response?.attempts == 2)
        #expect(keys(stub) == ["order-7-change-1", "order-7-change-1"])
    }

    @Test func eachRequestAndBatchMemberHasAKeyOfItsOwn() async throws {
        let stub = StubEngine()
        stub.on(nil, "*", reply: .json(["ok": true]))
        let center = center(stub, clock: ManualClock(), policy: RetryPolicy(idempotencyKey: Self.header))
        for _ in 0..<2 {
            _ = try await center.send { request in
                request.api = "payments"
                request.method = .post
            }
        }
        _ = try await center.batch { batch in
            for index in 0..<3 {
                batch.add { request in
                    request.api = "payments/\(index)"
                    request.method = .post
                }
            }
        }
        let keys = keys(stub).compactMap { $0 }
        #expect(keys.count == 5)
        #expect(Set(keys).count == 5, "\(keys)")
    }

    /// A name that cannot be a header fails a POST clearly, before anything is sent; a GET, which gets no key, goes.
    @Test func aNameThatCannotBeAHeaderFailsBeforeAnythingIsSent() async {
        let stub = StubEngine()
        stub.on(nil, "*", reply: .json(["ok": true]))
        let center = center(stub, clock: ManualClock(), policy: RetryPolicy(idempotencyKey: "Idempotency Key"))
        let post = await center.sendRecording { request in
            request.api = "payments"
            request.method = .post
        }
        #expect(post.error?.code == .encoding)
        #expect(post.error?.message.contains("Idempotency Key") == true, "\(post.error?.message ?? "")")
        #expect(stub.statistics.calls == 0)
        let get = await center.sendRecording { $0.api = "payments" }
        #expect(get.events == ["success", "finished"])
    }

    /// The request's own policy replaces the center's, key and all.
    @Test func theRequestsOwnPolicyDecides() async {
        let stub = StubEngine()
        stub.on(nil, "*", reply: .json(["ok": true]))
        let keyed = center(stub, clock: ManualClock(), policy: RetryPolicy(idempotencyKey: Self.header))
        _ = await keyed.sendRecording { request in
            request.api = "payments"
            request.method = .post
            request.retry = RetryPolicy()
        }
        let plain = center(stub, clock: ManualClock(), policy: .never)
        _ = await plain.sendRecording { request in
            request.api = "payments"
            request.method = .post
            request.retry = RetryPolicy(maxAttempts: 2, idempotencyKey: "X-Request-Key")
        }
        #expect(keys(stub) == [nil, nil])
        #expect(stub.requests.last?.headers["X-Request-Key"]?.isEmpty == false)
    }

    /// `center.retry(id)` of a failed request sends the key its attempts sent: it is the same operation.
    @Test func aRetryByIdentifierSendsTheSameKey() async throws {
        let stub = StubEngine()
        stub.on(.post, "/v1/payments", replies: [.status(503), .json(["paid": true])])
        let policy = RetryPolicy(maxAttempts: 1, idempotencyKey: Self.header)
        let center = center(stub, clock: ManualClock(), policy: policy)
        // The callbacks fire again for the retry, so they only count here.
        let finished = Locked(0)
        let id = center.send { request in
            request.api = "payments"
            request.method = .post
        } onFinished: { _ in
            finished.withLock { $0 += 1 }
        }
        await waitUntil { finished.snapshot == 1 }
        let outcome = try await center.retry(id)
        #expect(outcome.response?.status == 200)
        let keys = keys(stub)
        #expect(keys.count == 2 && keys[0] != nil && keys[0] == keys[1], "\(keys)")
    }

    /// A signing plugin's `adapt` sees the key among the headers it signs.
    @Test func aSigningPluginSignsTheKey() async throws {
        let stub = StubEngine()
        stub.on(nil, "*", reply: .json(["ok": true]))
        let seen = Locked<[String?]>([])
        struct Seer: Plugin {
            let seen: Locked<[String?]>
            func adapt(_ request: inout EngineRequest, for original: Request) async throws {
                let key = request.headers[IdempotencyKeyTests.header]
                seen.withLock { $0.append(key) }
            }
        }
        let center = stubCenter(stub) { config in
            config.retryPolicy = RetryPolicy(idempotencyKey: Self.header)
            config.plugins = [Seer(seen: seen)]
        }.0
        _ = try await center.send { request in
            request.api = "payments"
            request.method = .post
        }
        #expect(seen.snapshot.count == 1)
        #expect(seen.snapshot.first ?? nil == keys(stub).first ?? nil)
        #expect(seen.snapshot.first ?? nil != nil)
    }

    /// Over loopback, on both engines: the server sees one key on each of the three attempts of a POST it fails
    /// twice.
    @Test(arguments: bothEngines)
    func theServerSeesOneKeyOnEveryAttempt(engineName: String) async throws {
        let received = Locked<[String?]>([])
        let server = try LoopbackServer { request in
            let count = received.withLock { seen in
                seen.append(request.header(Self.header))
                return seen.count
            }
            return count < 3 ? ServerResponse(status: 503) : .json(["paid": true])
        }
        defer { server.stop() }
        let center = try loopbackCenter(engineName, server: server) { config in
            config.retryPolicy = RetryPolicy(initialDelay: .milliseconds(1), idempotencyKey: Self.header)
        }
        let response = try await center.send { request in
            request.api = "payments"
            request.method = .post
            request.parameters = ["amount": 100]
        }
        #expect(response.attempts == 3, "\(engineName)")
        let keys = received.snapshot
        #expect(keys.count == 3, "\(engineName)")
        #expect(keys.first??.isEmpty == false && Set(keys).count == 1, "\(engineName): \(keys)")
    }
}

/// `center.retry(id)` of a failed batch or chain sends each failed member's key again.
@Suite struct IdempotencyKeyGroupTests {
    let header = IdempotencyKeyTests.header

    func center(_ stub: StubEngine) -> Center {
        stubCenter(stub) { config in
            config.retryPolicy = RetryPolicy(maxAttempts: 1, idempotencyKey: IdempotencyKeyTests.header)
        }.0
    }

    /// The key each path was sent with, in order.
    func keys(_ stub: StubEngine, _ path: String) -> [String?] {
        stub.requests.filter { $0.url?.path == path }.map { $0.headers[header] }
    }

    @Test func aRetriedBatchSendsItsFailedMembersKeysAgain() async throws {
        let stub = StubEngine()
        stub.on(.post, "/v1/a", reply: .json(["ok": true]))
        stub.on(.post, "/v1/b", replies: [.status(503), .json(["ok": true])])
        let center = center(stub)
        let finished = Locked(0)
        let id = center.sendBatch { batch in
            batch.add {
                $0.api = "a"; $0.method = .post
            }
            batch.add {
                $0.api = "b"; $0.method = .post
            }
        } onFinished: { _ in
            finished.withLock { $0 += 1 }
        }
        await waitUntil { finished.snapshot == 1 }
        let outcome = try await center.retry(id)
        #expect(outcome.responses.count == 2)
        #expect(keys(stub, "/v1/a").count == 1, "the member that succeeded is not sent again")
        let b = keys(stub, "/v1/b")
        #expect(b.count == 2 && b[0] != nil && b[0] == b[1], "\(b)")
    }

    @Test func aRetriedChainSendsTheFailedStepsKeyAgain() async throws {
        let stub = StubEngine()
        stub.on(.post, "/v1/orders", reply: .json(["id": 7]))
        stub.on(.post, "/v1/orders/7/pay", replies: [.status(503), .json(["paid": true])])
        let center = center(stub)
        let finished = Locked(0)
        let id = center.sendChain { chain in
            chain.first {
                $0.api = "orders"; $0.method = .post
            }
            chain.next { request, previous, _ in
                request.api = "orders/\(previous.json?["id"]?.int ?? 0)/pay"
                request.method = .post
            }
        } onFinished: { _ in
            finished.withLock { $0 += 1 }
        }
        await waitUntil { finished.snapshot == 1 }
        _ = try await center.retry(id)
        #expect(keys(stub, "/v1/orders").count == 1, "the step that succeeded is not sent again")
        let pay = keys(stub, "/v1/orders/7/pay")
        #expect(pay.count == 2 && pay[0] != nil && pay[0] == pay[1], "\(pay)")
    }
}
