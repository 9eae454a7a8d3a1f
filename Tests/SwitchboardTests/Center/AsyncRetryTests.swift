import Foundation
import Testing
@testable import Switchboard

/// `try await center.retry(id)`: async code waits for the new outcome of work it sent with callbacks.
@Suite struct AsyncRetryTests {
    @Test func aRetriedRequestReturnsItsNewResponseAndFiresItsCallbacksAgain() async throws {
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
        #expect(log.all == ["failure 503", "success 200"])  // the callbacks ran before the await returned
        #expect(center.retry(id) == .succeeded)
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
        #expect(failures.snapshot == 2)
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
        await #expect(throws: HTTPError.self) { try await waiting.value }
        await waitUntil { events.all.count == 2 }
        #expect(events.all == ["failure:unacceptableStatus", "failure:cancelled"])
    }
}
