import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
@testable import Switchboard

/// Callback delivery: order, exactly once, queues, cancellation by identifier.
@Suite struct CallbackTests {
    @Test func successThenFinishedExactlyOnce() async {
        let stub = StubEngine()
        stub.on(nil, "*", reply: .json(["ok": true]))
        let (center, _) = stubCenter(stub)
        let outcome = await center.sendRecording { $0.api = "x" }
        #expect(outcome.events == ["success", "finished"])
        #expect(outcome.response?.json?["ok"]?.bool == true)
    }

    /// A request sent again as a whole value (`$0 = saved`) is a new send with an identifier of its own, not the one
    /// its first send had, so each is reached by its own.
    @Test func aSavedRequestSentAgainGetsAnIdentifierOfItsOwn() async throws {
        let stub = StubEngine()
        stub.on(nil, "*", reply: .json(["ok": true]))
        let (center, _) = stubCenter(stub)
        let first = try await center.send { $0.api = "x" }
        let again = try await center.send { $0 = first.request }
        let id = center.send({ $0 = first.request }, onFinished: { _ in })
        #expect(Set([first.request.id, again.request.id, id]).count == 3)
        #expect(again.request.id > first.request.id && id > again.request.id)
        #expect(Request().id != Request().id)
    }

    @Test func failureThenFinishedExactlyOnce() async {
        let stub = StubEngine()
        stub.on(nil, "*", reply: .failure(URLError(.networkConnectionLost)))
        let (center, _) = stubCenter(stub)
        let outcome = await center.sendRecording { $0.api = "x" }
        #expect(outcome.events == ["failure:transport", "finished"])
    }

    @Test func aThrowingOnSuccessReportsTheErrorAsTheOutcome() async {
        struct User: Decodable { var id: Int }
        let stub = StubEngine()
        stub.on(nil, "*", reply: .json(["name": "no id here"]))
        let (center, _) = stubCenter(stub)
        let log = EventLog()
        let result = await withCheckedContinuation {
            (continuation: CheckedContinuation<Result<Response, HTTPError>, Never>) in
            center.send {
                $0.api = "x"
            } onSuccess: { response in
                log.record("success")
                _ = try response.decode(User.self)
            } onFailure: { error in
                log.record("failure:\(error.code)")
            } onFinished: {
                continuation.resume(returning: $0)
            }
        }
        #expect(log.all == ["success", "failure:decoding"])
        guard case .failure(let error) = result else { Issue.record("expected a failure"); return }
        #expect(error.message.contains("missing key \"id\""))
    }

    /// An error of the app's own thrown by `onSuccess` is `.business`, as one thrown by `onResponse` or `validate`
    /// is, and a `DecodingError` is `.decoding`; each carries the response. Both were `.transport` or without the
    /// response: a transfer failure, for a response that arrived whole.
    @Test func whatOnSuccessThrowsIsReportedByItsKindWithTheResponse() async {
        struct Rejected: Error {}
        struct User: Decodable { var id: Int }
        let stub = StubEngine()
        stub.on(nil, "*", reply: .json(["name": "no id here"]))
        let (center, _) = stubCenter(stub)
        func outcome(_ body: @escaping @Sendable (Response) throws -> Void) async -> [HTTPError] {
            let seen = Locked<[HTTPError]>([])
            let finished = await withCheckedContinuation {
                (continuation: CheckedContinuation<Result<Response, HTTPError>, Never>) in
                center.send {
                    $0.api = "x"
                } onSuccess: {
                    try body($0)
                } onFailure: { error in
                    seen.withLock { $0.append(error) }
                } onFinished: {
                    continuation.resume(returning: $0)
                }
            }
            if case .failure(let error) = finished { seen.withLock { $0.append(error) } }
            return seen.withLock { $0 }
        }
        let rejected = await outcome { _ in throw Rejected() }
        #expect(rejected.count == 2, "onFailure, then onFinished, each once")
        #expect(rejected.allSatisfy { $0.code == .business && $0.response?.status == 200 && $0.underlying is Rejected })
        let undecodable = await outcome { _ = try JSONDecoder().decode(User.self, from: $0.data) }
        #expect(undecodable.count == 2)
        #expect(undecodable.allSatisfy { $0.code == .decoding && $0.response?.status == 200 })
        let own = await outcome { _ in throw HTTPError(.vetoed, "mine") }
        #expect(own.allSatisfy { $0.code == .vetoed && $0.message == "mine" && $0.response?.status == 200 })
    }

    @Test func callbacksRunOnThePrivateQueueWhenNoneIsSet() async {
        let stub = StubEngine()
        stub.on(nil, "*", reply: .status(204))
        let (center, _) = stubCenter(stub)
        let onPrivate = await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
            center.send {
                $0.api = "x"
            } onFinished: { _ in
                let marker = DispatchQueue.getSpecific(key: Center.privateQueueKey)
                continuation.resume(returning: marker == ObjectIdentifier(center))
            }
        }
        #expect(onPrivate)
    }

    /// A request refused before it is sent, or answered at once, ends quickly: its callbacks still run later, on
    /// their queue, never inside the call to `send` (before it returned the identifier).
    @Test func noCallbackRunsInsideTheCallToSend() async {
        let stub = StubEngine()
        stub.on(nil, "*", reply: .status(204))
        let (center, _) = stubCenter(stub)
        let answeredAtOnce: @Sendable (inout Request) -> Void = { $0.api = "x" }
        let refused: @Sendable (inout Request) -> Void = { $0.parameters = ["when": Date()] }
        for (configure, expected) in [(answeredAtOnce, true), (refused, false)] {
            for _ in 0..<20 {
                // The thread that is inside `send` while it runs (set before the call, cleared after it).
                let sending = Locked<ObjectIdentifier?>(nil)
                let (inside, succeeded) = await withCheckedContinuation {
                    (continuation: CheckedContinuation<(Bool, Bool), Never>) in
                    sending.withLock { $0 = ObjectIdentifier(Thread.current) }
                    center.send(configure) { result in
                        let here = ObjectIdentifier(Thread.current)
                        let queue = DispatchQueue.getSpecific(key: Center.privateQueueKey)
                        let onPrivate = queue == ObjectIdentifier(center)
                        continuation.resume(returning: (sending.snapshot == here || !onPrivate, result.isSuccess))
                    }
                    sending.withLock { $0 = nil }
                }
                #expect(!inside, "the callback ran inside send, or off the private queue")
                #expect(succeeded == expected)
            }
        }
    }

    @Test func callbacksRunOnTheConfiguredQueue() async {
        let key = DispatchSpecificKey<String>()
        let queue = DispatchQueue(label: "test.callbacks")
        queue.setSpecific(key: key, value: "mine")
        let stub = StubEngine()
        stub.on(nil, "*", reply: .json(["a": 1]))
        let (center, _) = stubCenter(stub) { $0.callbackQueue = queue }
        let labels = Locked<[String?]>([])
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            center.send {
                $0.api = "x"
            } onSuccess: { _ in
                labels.withLock { $0.append(DispatchQueue.getSpecific(key: key)) }
            } onFinished: { _ in
                labels.withLock { $0.append(DispatchQueue.getSpecific(key: key)) }
                continuation.resume()
            } onProgress: { _ in
                labels.withLock { $0.append(DispatchQueue.getSpecific(key: key)) }
            }
        }
        #expect(labels.snapshot.count == 3)
        #expect(labels.snapshot.allSatisfy { $0 == "mine" })
    }

    @Test func callbacksRunOnTheMainQueue() async {
        let key = DispatchSpecificKey<String>()
        DispatchQueue.main.setSpecific(key: key, value: "main")
        let stub = StubEngine()
        stub.on(nil, "*", reply: .status(200))
        let (center, _) = stubCenter(stub) { $0.callbackQueue = .main }
        let seen = await withCheckedContinuation { (continuation: CheckedContinuation<[String?], Never>) in
            let first = Locked<String?>(nil)
            center.send {
                $0.api = "x"
            } onSuccess: { _ in
                first.withLock { $0 = DispatchQueue.getSpecific(key: key) }
            } onFinished: { _ in
                continuation.resume(returning: [first.snapshot, DispatchQueue.getSpecific(key: key)])
            }
        }
        #expect(seen == ["main", "main"])
    }

    @Test func progressArrivesBeforeTheOutcome() async {
        let stub = StubEngine()
        stub.on(nil, "*", reply: .data(Data(count: 1000)))
        let (center, _) = stubCenter(stub)
        let log = EventLog()
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            center.send { request in
                request.api = "x"
                request.method = .post
                request.body = .data(Data(count: 10))
                request.responseSerializer = .raw
            } onSuccess: { _ in
                log.record("success")
            } onFinished: { _ in
                log.record("finished")
                continuation.resume()
            } onProgress: { progress in
                log.record("\(progress.direction) \(progress.completed)/\(progress.expected ?? -1)")
            }
        }
        #expect(log.all == ["upload 10/10", "download 1000/1000", "success", "finished"])
    }

    /// A closure without a label after `send(configure)` (and `send(endpoint)`, `sendBatch`, `sendChain`) is
    /// `onSuccess`, whichever callbacks follow it by name, even when its body would fit a progress report or a
    /// failure: each transfer below reports progress more than once, so a closure taken for progress would be heard
    /// more than once, and one taken for `onFailure` never.
    @Test func aClosureWithoutALabelAfterTheConfigurationIsOnSuccess() async {
        let stub = StubEngine()
        stub.on(nil, "*", reply: .data(Data(count: 1000)))
        stub.on(.get, "/v1/get", reply: .json(["q": "q"]))
        let (center, _) = stubCenter(stub)
        func upload(_ request: inout Request) {
            request.api = "x"
            request.method = .post
            request.body = .data(Data(count: 10))
            request.responseSerializer = .raw
        }
        func batch(_ batch: inout BatchRequest) {
            batch.add {
                $0.api = "a"; $0.responseSerializer = .raw
            }
            batch.add {
                $0.api = "b"; $0.responseSerializer = .raw
            }
        }
        func chain(_ chain: inout ChainRequest) {
            chain.first {
                $0.api = "a"; $0.responseSerializer = .raw
            }
            chain.next { request, _ in
                request.api = "b"; request.responseSerializer = .raw
            }
        }
        let log = EventLog()
        func heard(_ name: String, _ send: (@escaping @Sendable () -> Void) -> Void) async -> [String] {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                send { continuation.resume() }
            }
            return log.all.filter { $0.hasPrefix(name + ":") }
        }
        let events = [
            await heard("request, failure") { done in
                center.send(upload) { _ in
                    log.record("request, failure: first")
                } onFailure: { _ in
                } onFinished: { _ in
                    log.record("request, failure: finished"); done()
                }
            },
            await heard("request") { done in
                center.send(upload) { _ in
                    log.record("request: first")
                } onFinished: { _ in
                    log.record("request: finished"); done()
                }
            },
            await heard("batch") { done in
                center.sendBatch(batch) { _ in
                    log.record("batch: first")
                } onFinished: { _ in
                    log.record("batch: finished"); done()
                }
            },
            await heard("endpoint") { done in
                center.send(EchoAPI.get(query: "q")) { _ in
                    log.record("endpoint: first")
                } onFinished: { _ in
                    log.record("endpoint: finished"); done()
                }
            },
            await heard("chain") { done in
                center.sendChain(chain) { _ in
                    log.record("chain: first")
                } onFailure: { _ in
                } onFinished: { _ in
                    log.record("chain: finished"); done()
                }
            },
        ]
        #expect(
            events == [
                ["request, failure: first", "request, failure: finished"], ["request: first", "request: finished"],
                ["batch: first", "batch: finished"], ["endpoint: first", "endpoint: finished"],
                ["chain: first", "chain: finished"],
            ])
    }

    // MARK: - Cancel

    @Test func cancelByIdentifierEndsWithCancelledAndCallsTheCancelCallback() async {
        let stub = StubEngine()
        stub.on(nil, "*", reply: .json(["late": true]).delayed(by: .seconds(30)))
        let (center, _) = stubCenter(stub)
        let cancelled = Locked<Request?>(nil)
        let cancelCalled = Locked(false)
        let outcome = await center.sendRecording {
            $0.api = "slow"
        } afterSending: { id in
            Task {
                await waitUntil { stub.statistics.inFlight == 1 }
                #expect(center.request(for: id)?.request?.url == "https://api.example.com/v1/slow")
                center.cancel(id) { request in
                    cancelCalled.withLock { $0 = true }
                    cancelled.withLock { $0 = request?.request }
                }
            }
        }
        #expect(outcome.events == ["failure:cancelled", "finished"])
        #expect(cancelCalled.snapshot)
        #expect(cancelled.snapshot?.id == outcome.id)
        #expect(cancelled.snapshot?.api == "slow")
        #expect(stub.statistics.cancellations == 1)
        #expect(center.request(for: outcome.id) == nil)
    }

    @Test func cancellingAFinishedRequestIsANoOp() async {
        let stub = StubEngine()
        stub.on(nil, "*", reply: .status(200))
        let (center, _) = stubCenter(stub)
        let outcome = await center.sendRecording { $0.api = "x" }
        let seen = await withCheckedContinuation { (continuation: CheckedContinuation<AnyRequest?, Never>) in
            center.cancel(outcome.id) { continuation.resume(returning: $0) }
        }
        #expect(seen == nil)
        #expect(outcome.events == ["success", "finished"])
    }

    @Test func cancellingBeforeTheTaskStartsStillEndsOnceAsCancelled() async {
        let stub = StubEngine()
        stub.on(nil, "*", reply: .status(200))
        let (center, _) = stubCenter(stub)
        let outcome = await center.sendRecording {
            $0.api = "x"
        } afterSending: { id in
            center.cancel(id)
        }
        #expect(outcome.events == ["failure:cancelled", "finished"])
    }

    @Test func cancellingTheSwiftTaskCancelsTheTransfer() async {
        let stub = StubEngine()
        stub.on(nil, "*", reply: .status(200).delayed(by: .seconds(30)))
        let (center, _) = stubCenter(stub)
        let task = Task { try await center.send { $0.api = "slow" } }
        await waitUntil { stub.statistics.inFlight == 1 }
        task.cancel()
        let result = await task.result
        guard case .failure(let error) = result else { Issue.record("expected a failure"); return }
        #expect((error as? HTTPError)?.code == .cancelled)
        #expect(stub.statistics.cancellations == 1)
    }

    @Test func aCancelledRequestNeverSucceedsEvenIfTheEngineFinishes() async {
        // The engine ignores cancellation and answers 200 once the test lets it: the outcome must be `.cancelled`.
        struct StubbornEngine: Engine {
            let started = Locked(false)
            let gate = Gate()

            func perform(
                _ request: EngineRequest, progress: @escaping @Sendable (TransferProgress) -> Void
            ) async throws -> EngineResponse {
                started.withLock { $0 = true }
                await gate.wait()
                return EngineResponse(
                    response: HTTPURLResponse(url: request.url!, statusCode: 200, httpVersion: nil, headerFields: nil)!,
                    body: Data())
            }
        }
        let engine = StubbornEngine()
        let center = testCenter {
            $0.engine = engine; $0.server = "https://x.com/"
        }
        let outcome = await center.sendRecording {
            $0.api = "x"
        } afterSending: { id in
            Task {
                await waitUntil { engine.started.snapshot }
                center.cancel(id)
                engine.gate.open()
            }
        }
        #expect(outcome.events == ["failure:cancelled", "finished"])
    }

    @Test func cancelAllCancelsEveryRunningRequest() async {
        let stub = StubEngine()
        stub.on(nil, "*", reply: .status(200).delayed(by: .seconds(30)))
        let (center, _) = stubCenter(stub)
        let tasks = (0..<5).map { index in Task { await center.sendRecording { $0.api = "\(index)" } } }
        await waitUntil { stub.statistics.inFlight == 5 }
        #expect(center.cancelAll() == 5)
        for task in tasks {
            #expect(await task.value.events == ["failure:cancelled", "finished"])
        }
    }

    // MARK: - Concurrency

    @Test func aThousandConcurrentSendsWithHalfCancelledEachFinishExactlyOnce() async throws {
        let stub = StubEngine()
        stub.on(nil, "*") { request in
            .json(["path": .string(request.url!.path)]).delayed(by: .milliseconds(Int.random(in: 0...20)))
        }
        let (center, _) = stubCenter(stub)
        let finishes = Locked<[RequestID: [String]]>([:])
        let done = Locked(0)
        let sent = Locked<[RequestID]>([])
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            for index in 0..<1000 {
                let id = center.send {
                    $0.api = "items/\(index)"
                } onSuccess: { response in
                    #expect(response.json?["path"]?.string == "/v1/items/\(index)")
                } onFailure: { error in
                    #expect(error.code == .cancelled)
                } onFinished: { result in
                    let event = (try? result.get()) == nil ? "cancelled" : "success"
                    let count = done.withLock {
                        $0 += 1; return $0
                    }
                    finishes.withLock { finishes in
                        finishes[result.requestID ?? RequestID(rawValue: 0), default: []].append(event)
                    }
                    if count == 1000 { continuation.resume() }
                }
                sent.withLock { $0.append(id) }
                if index % 2 == 0 { center.cancel(id) }
            }
        }
        // Give any stray second callback a chance to show up before counting.
        try await Task.sleep(for: .milliseconds(100))
        center.privateQueue.sync(flags: .barrier) {}
        let recorded = finishes.snapshot
        let ids = sent.snapshot
        #expect(done.snapshot == 1000)
        #expect(recorded.count == 1000)
        #expect(recorded.values.allSatisfy { $0.count == 1 })
        for (index, id) in ids.enumerated() where index % 2 == 0 {
            #expect(recorded[id] == ["cancelled"])
        }
        #expect(center.registry.count == 0)
    }
}

extension Result where Success == Response, Failure == HTTPError {
    /// The identifier of the request this outcome belongs to.
    var requestID: RequestID? {
        switch self {
        case .success(let response): response.request.id
        case .failure(let error): error.request?.id
        }
    }
}
