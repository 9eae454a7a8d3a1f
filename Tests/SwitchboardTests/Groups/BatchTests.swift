import Foundation
import Testing
@testable import Switchboard

/// Batches over `StubEngine`: order, policies, concurrency, cancellation, identifiers and retry.
@Suite struct BatchTests {
    @Test func resultsComeInMemberOrderWhateverTheCompletionOrder() async {
        let stub = StubEngine()
        stub.on(nil, "/v1/slow", reply: .json(["n": "slow"]).delayed(by: .milliseconds(60)))
        stub.on(nil, "/v1/fast", reply: .json(["n": "fast"]))
        stub.on(nil, "/v1/middle", reply: .json(["n": "middle"]).delayed(by: .milliseconds(20)))
        let (center, _) = stubCenter(stub)
        let outcome = await center.groupRecording(batch: { batch in
            batch.add { $0.api = "slow" }
            batch.add { $0.api = "fast" }
            batch.add { $0.api = "middle" }
        })
        #expect(outcome.events == ["success(3)", "finished"])
        #expect(outcome.results.map { (try? $0.get())?.json?["n"]?.string } == ["slow", "fast", "middle"])
    }

    @Test func waitAllWaitsForEveryMemberAndReportsMixedResults() async {
        let stub = StubEngine()
        stub.on(nil, "/v1/bad", reply: .status(500))
        stub.on(nil, "/v1/good", reply: .json(["ok": true]).delayed(by: .milliseconds(50)))
        let (center, _) = stubCenter(stub)
        let outcome = await center.groupRecording(batch: { batch in
            batch.add { $0.api = "good" }
            batch.add { $0.api = "bad" }
            batch.add { $0.api = "good" }
        })
        #expect(outcome.events == ["failure(3)", "finished"])
        #expect(outcome.summary == ["ok", "unacceptableStatus", "ok"])
        #expect(stub.statistics.cancellations == 0)
    }

    @Test func failFastCancelsTheOtherMembers() async {
        let stub = StubEngine()
        stub.on(nil, "/v1/bad", reply: .status(503).delayed(by: .milliseconds(20)))
        stub.on(nil, "/v1/slow", reply: .json(["ok": true]).delayed(by: .seconds(30)))
        let (center, _) = stubCenter(stub)
        let outcome = await center.groupRecording(batch: { batch in
            batch.policy = .failFast
            batch.add { $0.api = "slow" }
            batch.add { $0.api = "bad" }
            batch.add { $0.api = "slow" }
        })
        // The slow members answer after 30 s; they end as cancelled only because the failure cancelled them.
        #expect(outcome.events == ["failure(3)", "finished"])
        #expect(outcome.summary == ["cancelled", "unacceptableStatus", "cancelled"])
        #expect(stub.statistics.cancellations == 2)
    }

    /// A batch large enough to be started from several threads (members run up to their first wait in the thread
    /// that starts them): one failure stops it, every other member ends once, and none is sent after the stop.
    @Test func failFastStopsALargeBatchStartedFromSeveralThreads() async {
        let stub = StubEngine()
        stub.on(nil, "*", reply: .json(["ok": true]))
        stub.on(nil, "/v1/item/500", reply: .status(503))  // the last route that matches answers
        let (center, _) = stubCenter(stub)
        let outcome = await center.groupRecording(batch: { batch in
            batch.policy = .failFast
            for index in 0..<2_000 { batch.add { $0.api = "item/\(index)" } }
        })
        #expect(outcome.events == ["failure(2000)", "finished"])
        #expect(outcome.results.count == 2_000)
        #expect(outcome.summary[500] == "unacceptableStatus")
        #expect(outcome.summary.filter { $0 == "unacceptableStatus" }.count == 1)
        #expect(Set(outcome.summary).isSubset(of: ["ok", "unacceptableStatus", "cancelled", "notSent"]))
        // The engine saw each member at most once, every member with an answer was sent, and only members that
        // started were (one started before the stop may end as cancelled before or after it reached the engine).
        let paths = stub.requests.compactMap(\.url?.path)
        #expect(paths.count == Set(paths).count)
        #expect(outcome.summary.filter { $0 == "ok" || $0 == "unacceptableStatus" }.count <= paths.count)
        #expect(paths.count <= outcome.summary.filter { $0 != "notSent" }.count)
        #expect(center.registry.count == 0)
    }

    @Test func failFastWithALimitLeavesUnstartedMembersNotSent() async {
        let stub = StubEngine()
        stub.on(nil, "/v1/bad", reply: .status(500))
        stub.on(nil, "/v1/good", reply: .status(200).delayed(by: .milliseconds(30)))
        let (center, _) = stubCenter(stub)
        let outcome = await center.groupRecording(batch: { batch in
            batch.policy = .failFast
            batch.maxConcurrent = 1
            batch.add { $0.api = "bad" }
            batch.add { $0.api = "good" }
            batch.add { $0.api = "good" }
        })
        #expect(outcome.summary == ["unacceptableStatus", "notSent", "notSent"])
        guard case .failure(let error) = outcome.results[1] else { return }
        #expect(error.message.contains("member 1 failed first"))
        #expect(stub.statistics.calls == 1)
    }

    @Test func maxConcurrentIsNeverExceeded() async {
        let stub = StubEngine()
        stub.on(nil, "*", reply: .status(200).delayed(by: .milliseconds(15)))
        let (center, _) = stubCenter(stub)
        let outcome = await center.groupRecording(batch: { batch in
            batch.maxConcurrent = 3
            for index in 0..<12 { batch.add { $0.api = "item/\(index)" } }
        })
        #expect(outcome.events == ["success(12)", "finished"])
        #expect(stub.statistics.calls == 12)
        #expect(stub.statistics.maxInFlight <= 3)
        #expect(stub.statistics.maxInFlight >= 2)
    }

    @Test func aLimitLargerThanAWaveOfStartsIsNeverExceededAndEveryMemberRuns() async {
        // The first members start in waves of 64: a limit of 100 spans two waves, and members that end meanwhile
        // start others of their own.
        let stub = StubEngine()
        stub.on(nil, "*", reply: .status(200).delayed(by: .milliseconds(20)))
        let (center, _) = stubCenter(stub)
        let outcome = await center.groupRecording(batch: { batch in
            batch.maxConcurrent = 100
            for index in 0..<300 { batch.add { $0.api = "item/\(index)" } }
        })
        #expect(outcome.events == ["success(300)", "finished"])
        #expect(stub.statistics.calls == 300)
        #expect(stub.statistics.maxInFlight <= 100)
        #expect(stub.statistics.maxInFlight > 64, "the second wave started before the first ended")
        #expect(Set(stub.requests.map(\.url?.path)).count == 300, "each member sent once")
        #expect(center.registry.count == 0)
    }

    @Test func aBatchCancelledWhileItsFirstWavesStartEndsOnceWithEveryMemberAccountedFor() async {
        let stub = StubEngine()
        stub.on(nil, "*", reply: .status(200).delayed(by: .milliseconds(50)))
        let (center, _) = stubCenter(stub)
        let outcome = await center.groupRecording(
            batch: { batch in
                for index in 0..<1_000 { batch.add { $0.api = "item/\(index)" } }
            },
            afterSending: { id in center.cancel(id) })
        #expect(outcome.events.last == "finished")
        #expect(outcome.events.filter { $0 == "finished" }.count == 1)
        #expect(outcome.results.count == 1_000)
        // Each member either ran and was cancelled, or never started: nothing succeeded, nothing is left running.
        #expect(Set(outcome.summary).isSubset(of: ["cancelled", "notSent"]), "\(Set(outcome.summary))")
        #expect(center.registry.count == 0)
    }

    @Test func membersThatAllFailInstantlyStillFinishOnceWithAValidIdentifier() async {
        let (center, stub) = stubCenter()
        let seenDuringRun = Locked<AnyRequest?>(nil)
        let outcome = await center.groupRecording(
            batch: { batch in
                for _ in 0..<5 { batch.add { $0.url = "ht tp://not a url" } }
            },
            afterSending: { id in
                seenDuringRun.withLock { $0 = center.request(for: id) }
            })
        #expect(outcome.events == ["failure(5)", "finished"])
        #expect(outcome.summary == Array(repeating: "invalidURL", count: 5))
        #expect(stub.requests.isEmpty)
        // The identifier names the batch: the cancel of a finished batch finds nothing; a retry finds the failure.
        if let seen = seenDuringRun.snapshot {
            #expect(seen.id == outcome.id)
            #expect(seen.batch?.memberIDs.count == 5)
        }
        #expect(center.request(for: outcome.id) == nil)
        #expect(center.registry.count == 0)
    }

    @Test func membersGoThroughTheHooks() async {
        let stub = StubEngine()
        stub.on(nil, "*") { echoReply($0) }
        let hooked = Locked(0)
        let (center, _) = stubCenter(stub) { config in
            config.headers["X-General"] = "yes"
            config.onRequest = { request in
                hooked.withLock { $0 += 1 }
                request.headers["X-Hooked"] = "1"
            }
        }
        let outcome = await center.groupRecording(batch: { batch in
            batch.add { $0.api = "a" }
            batch.add {
                $0.api = "b"; $0.useGeneralHeaders = false
            }
        })
        #expect(hooked.snapshot == 2)
        let headers = outcome.results.map { (try? $0.get())?.json?["headers"] }
        #expect(headers.map { $0?["X-Hooked"]?.string } == ["1", "1"])
        #expect(headers.map { $0?["X-General"]?.string } == ["yes", nil])
    }

    @Test func cancellingABatchCancelsRunningAndPendingMembers() async {
        let stub = StubEngine()
        stub.on(nil, "/v1/quick", reply: .json(["ok": true]))
        stub.on(nil, "/v1/slow", reply: .status(200).delayed(by: .seconds(30)))
        let (center, _) = stubCenter(stub)
        let cancelled = Locked<AnyRequest?>(nil)
        let outcome = await center.groupRecording(
            batch: { batch in
                batch.maxConcurrent = 2
                batch.add { $0.api = "quick" }
                batch.add { $0.api = "slow" }
                batch.add { $0.api = "slow" }
                batch.add { $0.api = "slow" }
            },
            afterSending: { id in
                Task {
                    // The quick member has finished and the next slow one started: three calls, two in flight.
                    await waitUntil { stub.statistics.calls == 3 && stub.statistics.inFlight == 2 }
                    center.cancel(id) { work in cancelled.withLock { $0 = work } }
                }
            })
        #expect(outcome.events == ["failure(4)", "finished"])
        #expect(outcome.summary == ["ok", "cancelled", "cancelled", "notSent"])
        #expect(cancelled.snapshot?.batch?.id == outcome.id)
        #expect(cancelled.snapshot?.batch?.memberIDs.count == 4)
        #expect(stub.statistics.cancellations == 2)
        #expect(stub.statistics.calls == 3)
    }

    @Test func aMemberCanBeCancelledByItsOwnIdentifier() async {
        let stub = StubEngine()
        stub.on(nil, "*", reply: .status(200).delayed(by: .milliseconds(300)))
        let (center, _) = stubCenter(stub)
        let outcome = await center.groupRecording(
            batch: { batch in
                batch.add { $0.api = "a" }
                batch.add { $0.api = "b" }
            },
            afterSending: { id in
                Task {
                    await waitUntil { stub.statistics.inFlight == 2 }
                    let second = center.request(for: id)?.batch?.memberIDs[1]
                    #expect(center.request(for: second!)?.request?.api == "b")
                    center.cancel(second!)
                }
            })
        #expect(outcome.summary == ["ok", "cancelled"])
    }

    @Test func retryReSendsOnlyTheFailedMember() async {
        let stub = StubEngine()
        stub.on(nil, "/v1/flaky", replies: [.status(503), .json(["second": true])])
        stub.on(nil, "/v1/steady", reply: .json(["steady": true]))
        let (center, _) = stubCenter(stub)
        let log = EventLog()
        let finished = Locked<[[Result<Response, HTTPError>]]>([])
        let id = center.sendBatch { batch in
            batch.add { $0.api = "steady" }
            batch.add { $0.api = "flaky" }
        } onSuccess: { responses in
            log.record("success \(responses.map { $0.json?.description ?? "" })")
        } onFailure: { results in
            log.record("failure")
        } onFinished: { results in
            finished.withLock { $0.append(results) }
        }
        await waitUntil { finished.snapshot.count == 1 }
        let retried = Locked<[String]?>(nil)
        #expect(
            center.retry(id) { outcome in
                retried.withLock { $0 = (try? outcome.get())?.responses.map { $0.json?.description ?? "" } }
            } == .retrying)
        await waitUntil { retried.snapshot != nil }
        #expect(retried.snapshot == [#"{"steady":true}"#, #"{"second":true}"#])
        // The batch's own callbacks fired once, for its first outcome.
        #expect(log.all == ["failure"])
        #expect(finished.snapshot.count == 1)
        #expect(stub.requests.map { $0.url!.path }.sorted() == ["/v1/flaky", "/v1/flaky", "/v1/steady"])
        #expect(center.retry(id) { _ in } == .succeeded)
        #expect(center.retry(RequestID(rawValue: 0)) { _ in } == .unknown)
    }

    @Test func emptyBatchAndBadLimitGetAClearError() async throws {
        let (center, stub) = stubCenter()
        let outcome = await center.groupRecording(batch: { _ in })
        #expect(outcome.events == ["failure(1)", "finished"])
        #expect(outcome.summary == ["invalidGroup"])
        let error = await #expect(throws: HTTPError.self) {
            _ = try await center.batch { batch in
                batch.maxConcurrent = 0
                batch.add { $0.api = "x" }
            }
        }
        #expect(error?.code == .invalidGroup)
        #expect(error?.message.contains("maxConcurrent") == true)
        #expect(stub.requests.isEmpty)
    }

    @Test func asyncBatchReturnsResponsesInOrder() async throws {
        let stub = StubEngine()
        stub.on(nil, "*") { request in .json(["path": .string(request.url!.path)]) }
        let (center, _) = stubCenter(stub)
        let responses = try await center.batch { batch in
            batch.add { $0.api = "one" }
            batch.add { $0.api = "two" }
        }
        #expect(responses.map { $0.json?["path"]?.string } == ["/v1/one", "/v1/two"])
    }

    @Test func asyncBatchThrowsAnErrorCarryingEveryResult() async {
        let stub = StubEngine()
        stub.on(nil, "/v1/missing", reply: .status(404))
        stub.on(nil, "/v1/here", reply: .json(["ok": true]))
        let (center, _) = stubCenter(stub)
        let error = await #expect(throws: HTTPError.self) {
            _ = try await center.batch { batch in
                batch.add { $0.api = "here" }
                batch.add { $0.api = "missing" }
            }
        }
        #expect(error?.code == .unacceptableStatus)
        #expect(error?.status == 404)
        #expect(error?.message.hasPrefix("member 2 of 2 failed") == true)
        #expect(error?.memberResults?.count == 2)
        #expect(error?.memberResults?.first?.isSuccess == true)
    }

    @Test func cancellingTheTaskOfAnAsyncBatchCancelsIt() async {
        let stub = StubEngine()
        stub.on(nil, "*", reply: .status(200).delayed(by: .seconds(30)))
        let (center, _) = stubCenter(stub)
        let task = Task {
            try await center.batch { batch in
                batch.add { $0.api = "a" }
                batch.add { $0.api = "b" }
            }
        }
        await waitUntil { stub.statistics.inFlight == 2 }
        task.cancel()
        let result = await task.result
        guard case .failure(let error as HTTPError) = result else { Issue.record("expected an HTTPError"); return }
        #expect(error.code == .cancelled)
        #expect(error.memberResults?.map { ($0.mapError { $0 }).failureCode } == [.cancelled, .cancelled])
        #expect(stub.statistics.cancellations == 2)
    }

    @Test func groupProgressSumsTheMembers() async {
        let stub = StubEngine()
        stub.on(nil, "/v1/a", reply: .data(Data(count: 100)))
        stub.on(nil, "/v1/b", reply: .data(Data(count: 300)).delayed(by: .milliseconds(20)))
        let (center, _) = stubCenter(stub)
        let reports = Locked<[Int64]>([])
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            center.sendBatch { batch in
                batch.add {
                    $0.api = "a"; $0.responseSerializer = .raw
                }
                batch.add {
                    $0.api = "b"; $0.responseSerializer = .raw
                }
            } onFinished: { _ in
                continuation.resume()
            } onProgress: { progress in
                reports.withLock { $0.append(progress.completed) }
            }
        }
        #expect(reports.snapshot == [100, 400])
    }

    @Test func progressOfAManyMemberBatchIsPacedAndEndsWithTheTotal() async {
        let stub = StubEngine()
        stub.on(nil, "*", reply: .data(Data(count: 10)))
        let (center, _) = stubCenter(stub)
        let reports = Locked<[TransferProgress]>([])
        let members = 2_000
        let start = ContinuousClock.now
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            center.sendBatch { batch in
                for index in 0..<members {
                    batch.add {
                        $0.api = "items/\(index)"; $0.responseSerializer = .raw
                    }
                }
            } onFinished: { _ in
                continuation.resume()
            } onProgress: { progress in
                reports.withLock { $0.append(progress) }
            }
        }
        let elapsed = ContinuousClock.now - start
        let seen = reports.snapshot
        #expect(
            seen.last
                == TransferProgress(direction: .download, completed: Int64(members * 10), expected: Int64(members * 10))
        )
        #expect(zip(seen, seen.dropFirst()).allSatisfy { $0.completed <= $1.completed }, "reports only grow")
        // One report at once, then at most one per 16 ms interval, and the final one: not one per member.
        let bound = 3 + Int(elapsed / .milliseconds(16))
        #expect(seen.count <= bound, "\(seen.count) reports in \(elapsed)")
    }

    @Test func tenThousandMembersFinishWithEveryResultInPlace() async throws {
        let stub = StubEngine()
        stub.on(nil, "*") { request in .json(["path": .string(request.url!.path)]) }
        let (center, _) = stubCenter(stub)
        let responses = try await center.batch { batch in
            for index in 0..<10_000 { batch.add { $0.api = "items/\(index)" } }
        }
        #expect(responses.count == 10_000)
        let inPlace = responses.enumerated().allSatisfy { index, response in
            response.json?["path"]?.string == "/v1/items/\(index)"
        }
        #expect(inPlace)
        #expect(center.registry.count == 0)
    }
}
