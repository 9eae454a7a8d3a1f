import Foundation
import Testing
@testable import Switchboard

/// Chains over `StubEngine`: steps built from earlier responses, declines, failures, cancellation and retry.
@Suite struct ChainTests {
    func loginStub() -> StubEngine {
        let stub = StubEngine()
        stub.on(.post, "/v1/login", reply: .json(["id": "42", "token": "t"]))
        stub.on(.get, "/v1/profile/42") { request in
            .json(["name": "Ada", "auth": .string(request.urlRequest.value(forHTTPHeaderField: "Authorization") ?? "")])
        }
        stub.on(.get, "/v1/avatar/Ada", reply: .data(Data([1, 2, 3])))
        return stub
    }

    @Test func eachStepIsBuiltFromThePreviousResponses() async {
        let (center, stub) = stubCenter(loginStub())
        let outcome = await center.groupRecording(chain: { chain in
            chain.first {
                $0.api = "login"; $0.method = .post
            }
            chain.next { request, previous in
                request.api = "profile/" + (previous.json?["id"]?.string ?? "")
                request.headers["Authorization"] = "Bearer " + (previous.json?["token"]?.string ?? "")
            }
            chain.next { request, previous, all in
                #expect(all.count == 2)
                #expect(all.first?.json?["id"]?.string == "42")
                request.api = "avatar/" + (previous.json?["name"]?.string ?? "")
                request.responseSerializer = .raw
            }
        })
        #expect(outcome.events == ["success(3)", "finished"])
        #expect((try? outcome.results[1].get())?.json?["auth"]?.string == "Bearer t")
        #expect((try? outcome.results[2].get())?.data == Data([1, 2, 3]))
        #expect(stub.requests.map { $0.url!.path } == ["/v1/login", "/v1/profile/42", "/v1/avatar/Ada"])
    }

    @Test func aStepThatDeclinesEndsTheChainWithNotSentSlots() async {
        struct NoAvatar: Error {}
        let (center, stub) = stubCenter(loginStub())
        let outcome = await center.groupRecording(chain: { chain in
            chain.first {
                $0.api = "login"; $0.method = .post
            }
            chain.next { request, previous in request.api = "profile/42" }
            chain.next { _, _ in throw NoAvatar() }
            chain.next { request, _ in request.api = "never" }
        })
        #expect(outcome.events == ["failure(4)", "finished"])
        #expect(outcome.summary == ["ok", "ok", "notSent", "notSent"])
        guard case .failure(let declined) = outcome.results[2], case .failure(let after) = outcome.results[3] else {
            return
        }
        #expect(declined.underlying is NoAvatar)
        #expect(declined.message.contains("step 3 of 4 declined"))
        #expect(after.message.contains("step 3 declined"))
        #expect(stub.requests.count == 2)
    }

    @Test func aFailedStepEndsTheChain() async {
        let stub = loginStub()
        stub.on(.get, "/v1/profile/42", reply: .status(500))
        let (center, _) = stubCenter(stub)
        let outcome = await center.groupRecording(chain: { chain in
            chain.first {
                $0.api = "login"; $0.method = .post
            }
            chain.next { request, _ in request.api = "profile/42" }
            chain.next { request, _ in request.api = "avatar/Ada" }
        })
        #expect(outcome.summary == ["ok", "unacceptableStatus", "notSent"])
        #expect(stub.requests.count == 2)
    }

    /// Three steps on `loginStub()`'s routes: log in, the profile, the avatar.
    static func loginProfileAvatar(_ chain: inout ChainRequest) {
        chain.first {
            $0.api = "login"; $0.method = .post
        }
        chain.next { request, _ in request.api = "profile/42" }
        chain.next { request, _ in request.api = "avatar/Ada" }
    }

    @Test func cancellingAChainCancelsTheRunningStepAndSendsNoOther() async {
        let stub = loginStub()
        stub.on(.get, "/v1/profile/42", reply: .status(200).delayed(by: .seconds(30)))
        let (center, _) = stubCenter(stub)
        let cancelled = Locked<AnyRequest?>(nil)
        let outcome = await center.groupRecording(
            chain: ChainTests.loginProfileAvatar,
            afterSending: { id in
                Task {
                    await waitUntil { stub.statistics.inFlight == 1 && stub.statistics.calls == 2 }
                    center.cancel(id) { work in cancelled.withLock { $0 = work } }
                }
            })
        #expect(outcome.events == ["failure(3)", "finished"])
        #expect(outcome.summary == ["ok", "cancelled", "notSent"])
        #expect(cancelled.snapshot?.chain?.memberIDs.count == 3)
        #expect(stub.statistics.calls == 2)
    }

    @Test(arguments: [true, false])
    func cancellingARunningStepByItsIdentifierEndsIt(engineStopsBySignal: Bool) async {
        // A step runs in the chain's own task when its engine stops by signal, else in a task of its own; either way
        // its identifier reaches it.
        let stub = loginStub()
        stub.on(.get, "/v1/profile/42", reply: .status(200).delayed(by: .seconds(30)))
        let engine: any Engine = engineStopsBySignal ? stub : TaskCancelledEngine(base: stub)
        let (center, _) = stubCenter(stub) { $0.engine = engine }
        #expect(center.configuration.engine.honoursCancellation == engineStopsBySignal)
        let stepID = Locked<RequestID?>(nil)
        center.setup { config in
            config.onRequest = { request in
                if request.api == "profile/42" { stepID.withLock { $0 = request.id } }
            }
        }
        let outcome = await center.groupRecording(
            chain: ChainTests.loginProfileAvatar,
            afterSending: { _ in
                Task {
                    await waitUntil { stub.statistics.inFlight == 1 && stub.statistics.calls == 2 }
                    center.cancel(stepID.snapshot!)
                }
            })
        #expect(outcome.events == ["failure(3)", "finished"])
        #expect(outcome.summary == ["ok", "cancelled", "notSent"])
        #expect(stub.statistics.cancellations == 1)
        #expect(center.registry.count == 0)
    }

    @Test func retryResumesFromTheFailedStepKeepingEarlierResponses() async {
        let stub = loginStub()
        stub.on(.get, "/v1/profile/42", replies: [.status(503), .json(["name": "Ada"])])
        let (center, _) = stubCenter(stub)
        let finished = Locked<[[String]]>([])
        let id = center.sendChain { chain in
            chain.first {
                $0.api = "login"; $0.method = .post
            }
            chain.next { request, previous in request.api = "profile/" + (previous.json?["id"]?.string ?? "") }
        } onFinished: { results in
            finished.withLock { $0.append(results.map { $0.isSuccess ? "ok" : "failed" }) }
        }
        await waitUntil { finished.snapshot.count == 1 }
        let retried = Locked<Int?>(nil)
        #expect(
            center.retry(id) { outcome in retried.withLock { $0 = (try? outcome.get())?.responses.count } } == .retrying
        )
        await waitUntil { retried.snapshot != nil }
        #expect(retried.snapshot == 2)
        #expect(finished.snapshot == [["ok", "failed"]])
        #expect(stub.requests.map { $0.url!.path } == ["/v1/login", "/v1/profile/42", "/v1/profile/42"])
    }

    @Test func aChainWithoutFirstGetsAClearError() async {
        let (center, stub) = stubCenter()
        let outcome = await center.groupRecording(chain: { chain in
            chain.next { request, _ in request.api = "x" }
        })
        #expect(outcome.events == ["failure(1)", "finished"])
        #expect(outcome.summary == ["invalidGroup"])
        guard case .failure(let error) = outcome.results.first else { return }
        #expect(error.message.contains("no `first`"))
        let empty = await #expect(throws: HTTPError.self) { _ = try await center.chain { _ in } }
        #expect(empty?.code == .invalidGroup)
        #expect(stub.requests.isEmpty)
    }

    @Test func asyncChain() async throws {
        let (center, _) = stubCenter(loginStub())
        let responses = try await center.chain { chain in
            chain.first {
                $0.api = "login"; $0.method = .post
            }
            chain.next { request, previous in request.api = "profile/" + (previous.json?["id"]?.string ?? "") }
        }
        #expect(responses.last?.json?["name"]?.string == "Ada")
    }
}

/// Retry by identifier for single requests.
@Suite struct RetryByIdentifierTests {
    @Test func aFailedSingleRequestRunsAgainUnderTheSameIdentifier() async {
        let stub = StubEngine()
        stub.on(nil, "*", replies: [.status(503), .json(["ok": true])])
        let (center, _) = stubCenter(stub)
        let events = EventLog()
        let id = center.send {
            $0.api = "x"
        } onSuccess: { response in
            events.record("success \(response.request.id)")
        } onFailure: { error in
            events.record("failure \(error.request!.id)")
        }
        await waitUntil { events.all.count == 1 }
        #expect(
            center.retry(id) { events.record("retried \((try? $0.get())?.response?.request.id ?? id)") } == .retrying)
        await waitUntil { events.all.count == 2 }
        #expect(events.all == ["failure \(id)", "retried \(id)"])
        #expect(center.retry(id) { _ in } == .succeeded)
    }

    @Test func retryAnswersForRunningUnknownAndAsyncRequests() async throws {
        let stub = StubEngine()
        stub.on(nil, "/v1/slow", reply: .status(200).delayed(by: .seconds(30)))
        stub.on(nil, "/v1/fail", reply: .status(500))
        let (center, _) = stubCenter(stub)
        let id = center.send {
            $0.api = "slow"
        } onFinished: { _ in
        }
        #expect(center.retry(id) { _ in } == .running)
        center.cancel(id)
        #expect(center.retry(RequestID(rawValue: .max)) { _ in } == .unknown)
        // Async callers get their error thrown and can call again; nothing is kept for them.
        _ = try? await center.send { $0.api = "fail" }
        await waitUntil { center.registry.count == 0 }
    }

    @Test func theCenterForgetsOldFailuresBeyondItsLimit() async {
        let stub = StubEngine()
        stub.on(nil, "*", reply: .status(500))
        let (center, _) = stubCenter(stub) { $0.retainedFailures = 2 }
        let done = Locked(0)
        let ids = (0..<3).map { _ in
            center.send {
                $0.api = "x"
            } onFinished: { _ in
                done.withLock { $0 += 1 }
            }
        }
        await waitUntil { done.snapshot == 3 }
        let answers = ids.map { center.retry($0) { _ in } }
        #expect(answers.filter { $0 == .unknown }.count == 1)
        #expect(answers.filter { $0 == .retrying }.count == 2)
    }
}

/// Forwards to an engine without its `EngineCancellation` and says it does not honour one: the center then stops
/// its requests through their tasks, as it must for such an engine.
private struct TaskCancelledEngine: Engine {
    let base: any Engine

    func perform(
        _ request: EngineRequest, progress: @escaping @Sendable (TransferProgress) -> Void
    ) async throws -> EngineResponse {
        var request = request
        request.cancellation = nil
        return try await base.perform(request, progress: progress)
    }
}
