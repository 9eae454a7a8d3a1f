import Foundation
import Testing
@testable import Switchboard

/// Batches and chains through `URLSessionEngine` to an httpbin-compatible server (the loopback server, or a real
/// httpbin when `SWITCHBOARD_HTTPBIN_URL` is set), mirroring XMNetworking's group tests.
@Suite struct GroupRequestTests {
    func center() -> Center {
        Server.center { $0.headers["X-Client"] = "switchboard-tests" }
    }

    @Test func batchOfGetPostAndPutInMemberOrder() async {
        let outcome = await center().groupRecording(batch: { batch in
            batch.add {
                $0.api = "get"; $0.parameters = ["n": 1]
            }
            batch.add {
                $0.api = "post"; $0.method = .post; $0.parameters = ["n": 2]
            }
            batch.add {
                $0.api = "put"; $0.method = .put; $0.requestSerializer = .json; $0.parameters = ["n": 3]
            }
        })
        #expect(outcome.events == ["success(3)", "finished"])
        let echoes = outcome.results.compactMap { try? $0.get().json }
        #expect(echoes.count == 3)
        #expect(echoes[0]["args"]?["n"]?.string == "1")
        #expect(echoes[1]["form"]?["n"]?.string == "2")
        #expect(echoes[2]["json"]?["n"] == 3)
        #expect(echoes.allSatisfy { $0["headers"]?["X-Client"]?.string == "switchboard-tests" })
    }

    @Test func aBatchWithATimeoutKeepsTheOtherResultsInPlace() async {
        let outcome = await center().groupRecording(batch: { batch in
            batch.add { $0.api = "get" }
            batch.add {
                $0.api = "delay/10"; $0.timeout = .seconds(1)
            }
            batch.add {
                $0.api = "anything"; $0.method = .post
            }
        })
        #expect(outcome.events == ["failure(3)", "finished"])
        #expect(outcome.summary == ["ok", "timedOut", "ok"])
    }

    @Test func cancellingARunningBatch() async {
        let center = center()
        let outcome = await center.groupRecording(
            batch: { batch in
                batch.add { $0.api = "get" }
                batch.add { $0.answerOverAMinute() }
            },
            afterSending: { id in
                Task {
                    // Members start in order: once the slow one is running, the quick one has started, and once the
                    // quick one has left the registry, it has finished.
                    await waitUntil {
                        // Read each time: the members are listed once the batch has started them.
                        let members = center.request(for: id)?.batch?.memberIDs ?? []
                        return members.count == 2 && center.request(for: members[1]) != nil
                            && center.request(for: members[0]) == nil
                    }
                    center.cancel(id)
                }
            })
        #expect(outcome.events == ["failure(2)", "finished"])
        #expect(outcome.summary == ["ok", "cancelled"])
        #expect((try? outcome.results[0].get())?.status == 200)
    }

    @Test func chainGetPostPutEachReadingThePreviousEcho() async {
        let outcome = await center().groupRecording(chain: { chain in
            chain.first {
                $0.api = "get"; $0.parameters = ["step": "one"]
            }
            chain.next { request, previous in
                request.api = "post"
                request.method = .post
                request.parameters = ["from": previous.json?["args"]?["step"]?.string ?? "?"]
            }
            chain.next { request, previous in
                request.api = "put"
                request.method = .put
                request.requestSerializer = .json
                request.parameters = ["from": previous.json?["form"]?["from"]?.string ?? "?"]
            }
        })
        #expect(outcome.events == ["success(3)", "finished"])
        #expect((try? outcome.results[2].get())?.json?["json"]?["from"]?.string == "one")
    }

    @Test func aChainWhoseThirdStepDeclines() async {
        struct Declined: Error {}
        let outcome = await center().groupRecording(chain: { chain in
            chain.first { $0.api = "get" }
            chain.next { request, _ in
                request.api = "post"; request.method = .post
            }
            chain.next { _, _ in throw Declined() }
        })
        #expect(outcome.events == ["failure(3)", "finished"])
        #expect(outcome.summary == ["ok", "ok", "notSent"])
    }

    @Test func aChainWhoseSecondStepTimesOut() async {
        let outcome = await center().groupRecording(chain: { chain in
            chain.first { $0.api = "get" }
            chain.next { request, _ in
                request.api = "delay/10"; request.timeout = .seconds(1)
            }
            chain.next { request, _ in request.api = "get" }
        })
        #expect(outcome.summary == ["ok", "timedOut", "notSent"])
    }

    @Test func cancellingARunningChain() async {
        let center = center()
        let outcome = await center.groupRecording(
            chain: { chain in
                chain.first { $0.api = "get" }
                chain.next { request, _ in request.answerOverAMinute() }
                chain.next { request, _ in request.api = "get" }
            },
            afterSending: { id in
                Task {
                    let second = center.request(for: id)?.chain?.memberIDs[1]
                    await waitUntil { second.map { center.request(for: $0)?.request?.url != nil } ?? true }
                    try await Task.sleep(for: .milliseconds(100))
                    center.cancel(id)
                }
            })
        #expect(outcome.events == ["failure(3)", "finished"])
        #expect(outcome.summary == ["ok", "cancelled", "notSent"])
    }
}
