import Foundation
import Testing
@testable import Switchboard

/// `try await center.retry(id)`: async code waits for the new outcome of work it sent with callbacks, whose callbacks
/// have fired and do not fire again.
@Suite struct AsyncRetryTests {
    @Test func aRetriedRequestReturnsItsNewResponseAndLeavesItsCallbacksAlone() async throws {
        let stub = StubEngine()
        stub.on(.get, "/v1/flaky", replies: [.status(503), .json(["ok": true])])
        let (center, _) = stubCenter(stub)
        let log = EventLog()
        let firstDone = Locked(false)
        let id = center.send {
            $0.api = "flaky"
        } onSuccess: { response in
            log.record("success \(response.status)")
        } onFailure: { error in
            log.record("failure \(error.status ?? 0)")
        } onFinished: { _ in
            firstDone.withLock { $0 = true }
        }
        await waitUntil { firstDone.snapshot }

        let outcome = try await center.retry(id)
        #expect(outcome.response?.status == 200)
        #expect(outcome.response?.request.id == id)
        #expect(outcome.responses.count == 1)
        #expect(log.all == ["failure 503"])  // the callbacks fired once, for the first outcome
        #expect(center.retry(id) { _ in } == .succeeded)
    }

    /// A request sent with callbacks is merged with the configuration of its retry (server, headers, parameters),
    /// not with that of its first send, though it was merged before it was registered: the failure leaves `retry`
    /// the request as it was written.
    @Test func aRetriedRequestIsMergedWithTheConfigurationOfItsRetry() async throws {
        let stub = StubEngine()
        stub.on(.get, "/v1/flaky", reply: .status(503))
        stub.on(.get, "/v2/flaky", reply: .json(["ok": true]))
        let (center, _) = stubCenter(stub) { config in
            config.headers["X-Version"] = "1"
            config.parameters = ["v": 1]
        }
        let firstDone = Locked(false)
        let id = center.send {
            $0.api = "flaky"; $0.parameters = ["page": 2]
        } onFinished: { _ in
            firstDone.withLock { $0 = true }
        }
        await waitUntil { firstDone.snapshot }
        center.setup { config in
            config.server = "https://api.example.com/v2/"
            config.headers["X-Version"] = "2"
            config.parameters = ["v": 2]
        }

        let outcome = try await center.retry(id)
        #expect(outcome.response?.status == 200)
        #expect(
            stub.requests.map { "\($0.url?.absoluteString ?? "") \($0.headers["X-Version"] ?? "")" } == [
                "https://api.example.com/v1/flaky?page=2&v=1 1", "https://api.example.com/v2/flaky?page=2&v=2 2",
            ])
    }

    @Test func aRetriedBatchReturnsEveryMembersResponseInMemberOrder() async throws {
        let stub = StubEngine()
        stub.on(.get, "/v1/a", reply: .json(["member": "a"]))
        stub.on(.get, "/v1/b", replies: [.status(500), .json(["member": "b"])])
        let (center, _) = stubCenter(stub)
        let failures = Locked(0)
        let id = center.sendBatch { batch in
            batch.add { $0.api = "a" }
            batch.add { $0.api = "b" }
        } onFailure: { _ in
            failures.withLock { $0 += 1 }
        }
        await waitUntil { failures.snapshot == 1 }

        let outcome = try await center.retry(id)
        #expect(outcome.responses.map { $0.json?["member"]?.string } == ["a", "b"])
        #expect(stub.requests.filter { $0.url?.path == "/v1/a" }.count == 1)  // the member that succeeded kept
    }

    @Test func aRetryThatFailsAgainThrowsTheGroupsError() async throws {
        let stub = StubEngine()
        stub.on(nil, "*", reply: .status(500))
        let (center, _) = stubCenter(stub)
        let failures = Locked(0)
        let id = center.sendChain { chain in
            chain.first { $0.api = "login" }
            chain.next { request, _ in request.api = "profile" }
        } onFailure: { _ in
            failures.withLock { $0 += 1 }
        }
        await waitUntil { failures.snapshot == 1 }
        do {
            _ = try await center.retry(id)
            Issue.record("the retry succeeded")
        } catch {
            #expect(error.code == .unacceptableStatus)
            #expect(error.memberResults?.count == 2)
        }
        #expect(failures.snapshot == 1)
    }

    @Test func nothingToRetryThrowsNotRetryable() async {
        let stub = StubEngine()
        stub.on(nil, "/v1/slow", reply: .status(200).delayed(by: .seconds(30)))
        let (center, _) = stubCenter(stub)
        let running = center.send {
            $0.api = "slow"
        } onFinished: { _ in
        }
        for id in [running, RequestID(rawValue: .max)] {
            do {
                _ = try await center.retry(id)
                Issue.record("retry(\(id)) did not throw")
            } catch {
                #expect(error.code == .notRetryable)
            }
        }
        center.cancel(running)
    }

    @Test func cancellingTheWaitingTaskCancelsTheRetriedWork() async throws {
        let stub = StubEngine()
        stub.on(.get, "/v1/flaky", replies: [.status(503), .status(200).delayed(by: .seconds(30))])
        let (center, _) = stubCenter(stub)
        let events = EventLog()
        let id = center.send {
            $0.api = "flaky"
        } onFailure: { error in
            events.record("failure:\(error.code)")
        }
        await waitUntil { events.all.count == 1 }
        let waiting = Task { try await center.retry(id) }
        await waitUntil { stub.statistics.inFlight == 1 }
        waiting.cancel()
        let error = await #expect(throws: HTTPError.self) { try await waiting.value }
        #expect(error?.code == .cancelled)
        #expect(events.all == ["failure:unacceptableStatus"])
    }
}

/// Every callback set fires once, ever: an app that awaits a callback send through a checked continuation (the usual
/// way to await one) survives a retry of the request, batch or chain, in either form of `retry`, over loopback on
/// both engines. A second firing would resume the continuation twice, which traps.
@Suite struct CallbackOnceTests {
    /// How many times each kind of callback fired.
    final class Counts: Sendable {
        let fired = Locked<[String: Int]>([:])
        func record(_ name: String) { fired.withLock { $0[name, default: 0] += 1 } }
        var snapshot: [String: Int] { fired.snapshot }
    }

    @Test(arguments: bothEngines)
    func aContinuationAroundACallbackSendSurvivesRetries(engineName: String) async throws {
        let center = try loopbackCenter(engineName)
        let key = UUID().uuidString
        let counts = Counts()
        var id: RequestID?
        let status = await withCheckedContinuation { (continuation: CheckedContinuation<Int, Never>) in
            id = center.send {
                $0.api = "fail-times/2/\(key)"
            } onSuccess: { response in
                counts.record("success")
                continuation.resume(returning: response.status)
            } onFailure: { error in
                counts.record("failure")
                continuation.resume(returning: error.status ?? 0)
            } onFinished: { _ in
                counts.record("finished")
            }
        }
        #expect(status == 503)
        let requestID = try #require(id)
        // Once with a completion of its own (it fails again), once awaited (it succeeds).
        let again = await withCheckedContinuation { continuation in
            _ = center.retry(requestID) { continuation.resume(returning: $0) }
        }
        #expect(again.failureStatus == 503)
        let outcome = try await center.retry(requestID)
        #expect(outcome.response?.status == 200)
        #expect(counts.snapshot == ["failure": 1, "finished": 1])
    }

    @Test(arguments: bothEngines)
    func aContinuationAroundABatchAndAChainSurvivesRetries(engineName: String) async throws {
        let center = try loopbackCenter(engineName)
        let counts = Counts()
        let batchKey = UUID().uuidString
        var batchID: RequestID?
        let batchResults = await withCheckedContinuation { continuation in
            batchID = center.sendBatch { batch in
                batch.add { $0.api = "get" }
                batch.add { $0.api = "fail-times/1/\(batchKey)" }
            } onSuccess: { responses in
                counts.record("batch success")
                continuation.resume(returning: responses.count)
            } onFailure: { results in
                counts.record("batch failure")
                continuation.resume(returning: results.filter(\.isSuccess).count)
            }
        }
        #expect(batchResults == 1)
        let chainKey = UUID().uuidString
        var chainID: RequestID?
        let chainResults = await withCheckedContinuation { continuation in
            chainID = center.sendChain { chain in
                chain.first { $0.api = "get" }
                chain.next { request, _ in request.api = "fail-times/1/\(chainKey)" }
            } onSuccess: { responses in
                counts.record("chain success")
                continuation.resume(returning: responses.count)
            } onFailure: { results in
                counts.record("chain failure")
                continuation.resume(returning: results.filter(\.isSuccess).count)
            }
        }
        #expect(chainResults == 1)
        let batch = try await center.retry(try #require(batchID))
        #expect(batch.responses.count == 2)
        let chain = await withCheckedContinuation { continuation in
            _ = center.retry(chainID!) { continuation.resume(returning: $0) }
        }
        #expect((try? chain.get())?.responses.count == 2)
        #expect(counts.snapshot == ["batch failure": 1, "chain failure": 1])
    }
}

extension Result where Success == RetryOutcome, Failure == HTTPError {
    /// The status of a failure's response, if it had one.
    fileprivate var failureStatus: Int? {
        if case .failure(let error) = self { error.status } else { nil }
    }
}
