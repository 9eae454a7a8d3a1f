import Dispatch
import Foundation
import Testing
@testable import Switchboard

/// Stands in for a view controller or view model that requests belong to.
private final class Screen {}

/// A screen a hook may capture.
private final class SendableScreen: Sendable {}

/// Owners, tags and per-request callback queues: the ways app code scopes and places its requests.
@Suite struct OwnershipTests {
    /// A center whose `/slow` answers after 30 s and everything else at once.
    func slowCenter() -> (Center, StubEngine) {
        let stub = StubEngine()
        stub.on(nil, "*", reply: .json(["ok": true]))
        stub.on(nil, "/v1/slow", reply: .status(200).delayed(by: .seconds(30)))  // the later route wins
        return stubCenter(stub)
    }

    /// Sends with every callback recorded; returns the identifier and a wait for `onFinished`.
    func send(
        _ center: Center, log: EventLog, _ configure: (inout Request) -> Void
    ) -> (RequestID, AsyncStream<Void>) {
        let (finished, continuation) = AsyncStream<Void>.makeStream()
        let id = center.send(
            configure, onSuccess: { _ in log.record("success") },
            onFailure: { error in log.record("failure:\(error.code)") },
            onFinished: { _ in
                log.record("finished")
                continuation.yield()
                continuation.finish()
            })
        return (id, finished)
    }

    @Test func aRequestIsCancelledOnceWhenItsOwnerIsDeallocated() async throws {
        let (center, stub) = slowCenter()
        var screen: Screen? = Screen()
        let log = EventLog()
        let (id, finished) = send(center, log: log) {
            $0.api = "slow"; $0.owner = screen
        }
        #expect(center.request(for: id)?.request?.owner === screen)
        try await Task.sleep(for: .milliseconds(300))  // three owner checks: the owner is alive
        #expect(log.all.isEmpty)
        #expect(center.request(for: id) != nil)

        screen = nil
        for await _ in finished {}
        try await Task.sleep(for: .milliseconds(250))  // a second outcome would arrive by now
        #expect(log.all == ["failure:cancelled", "finished"])
        #expect(stub.statistics.cancellations == 1)
        #expect(center.request(for: id) == nil)
    }

    @Test func aBatchIsCancelledOnceWhenItsOwnerIsDeallocated() async {
        let (center, stub) = slowCenter()
        var screen: Screen? = Screen()
        let log = EventLog()
        let results = Locked<[[Result<Response, HTTPError>]]>([])
        center.sendBatch { batch in
            batch.owner = screen
            batch.add { $0.api = "fast" }
            batch.add { $0.api = "slow" }
        } onSuccess: { _ in
            log.record("success")
        } onFailure: { _ in
            log.record("failure")
        } onFinished: { outcome in
            results.withLock { $0.append(outcome) }
        }
        await waitUntil { stub.statistics.calls == 2 && stub.statistics.inFlight == 1 }  // fast done, slow running
        screen = nil
        await waitUntil { !results.snapshot.isEmpty }
        try? await Task.sleep(for: .milliseconds(250))
        #expect(log.all == ["failure"])
        let outcome = results.snapshot
        #expect(outcome.count == 1)
        #expect((try? outcome.first?.first?.get())?.status == 200)  // the member that finished keeps its response
        if case .failure(let error) = outcome.first?.last {
            #expect(error.code == .cancelled)
        } else {
            Issue.record("the slow member was not cancelled: \(outcome)")
        }
    }

    @Test func anOwnerThatOutlivesTheRequestChangesNothing() async throws {
        let (center, _) = slowCenter()
        let screen = Screen()
        let response = try await center.send {
            $0.api = "fast"; $0.owner = screen
        }
        #expect(response.status == 200)
        #expect(response.request.owner === screen)
    }

    /// A tag or an owner given by the `onRequest` hook counts as one given by the request: the registry reads the
    /// request as prepared.
    @Test func aTagOrOwnerSetByTheRequestHookScopesTheRequest() async throws {
        /// Tags every request, and gives those with an `owned` parameter the screen as their owner.
        func hook(_ screen: SendableScreen) -> @Sendable (inout Request) async throws -> Void {
            { [weak screen] request in
                request.tag = "hooked"
                if request.parameters["owned"] != nil { request.owner = screen }
            }
        }
        var screen: SendableScreen? = SendableScreen()
        let (center, stub) = slowCenter()
        let onRequest = hook(screen!)
        center.setup { $0.onRequest = onRequest }
        let tagged = EventLog()
        let (_, taggedFinished) = send(center, log: tagged) { $0.api = "slow" }
        await waitUntil { stub.statistics.inFlight == 1 }
        #expect(center.cancel(tag: "hooked") == 1)
        for await _ in taggedFinished {}
        #expect(tagged.all == ["failure:cancelled", "finished"])

        let owned = EventLog()
        let (id, ownedFinished) = send(center, log: owned) {
            $0.api = "slow"; $0.parameters = ["owned": true]
        }
        await waitUntil { stub.statistics.inFlight == 1 }
        #expect(center.request(for: id)?.request?.owner === screen)
        screen = nil
        for await _ in ownedFinished {}
        #expect(owned.all == ["failure:cancelled", "finished"])
    }

    @Test func cancelByTagCancelsTaggedRequestsAndGroupsOnly() async {
        let (center, stub) = slowCenter()
        // A log for each request: the two run at once, so their callbacks may interleave on the concurrent queue.
        let tagged = [EventLog(), EventLog()]
        let other = EventLog()
        let (_, first) = send(center, log: tagged[0]) {
            $0.api = "slow"; $0.tag = "feed"
        }
        let (_, second) = send(center, log: tagged[1]) {
            $0.api = "slow"; $0.tag = "feed"
        }
        let (untaggedID, _) = send(center, log: other) {
            $0.api = "slow"; $0.tag = "search"
        }
        let groupResults = Locked<[[Result<Response, HTTPError>]]>([])
        let batchID = center.sendBatch { batch in
            batch.tag = "feed"
            batch.add { $0.api = "slow" }
            batch.add { $0.api = "slow" }
        } onFailure: { results in
            groupResults.withLock { $0.append(results) }
        }
        await waitUntil { stub.statistics.inFlight == 5 }

        #expect(center.cancel(tag: "feed") == 3)  // two requests and the batch (its members have no tag)
        for await _ in first {}
        for await _ in second {}
        await waitUntil { !groupResults.snapshot.isEmpty }
        try? await Task.sleep(for: .milliseconds(100))
        for log in tagged { #expect(log.all == ["failure:cancelled", "finished"]) }
        #expect(groupResults.snapshot.count == 1)
        #expect(center.request(for: batchID) == nil)
        #expect(other.all.isEmpty)
        #expect(center.request(for: untaggedID) != nil)
        #expect(center.cancel(tag: "feed") == 0)
        center.cancel(untaggedID)
    }

    @Test func aRequestsOwnCallbackQueueWinsOverTheCentersQueue() async {
        let key = DispatchSpecificKey<String>()
        let centerQueue = DispatchQueue(label: "center")
        let ownQueue = DispatchQueue(label: "own")
        centerQueue.setSpecific(key: key, value: "center")
        ownQueue.setSpecific(key: key, value: "own")
        let stub = StubEngine()
        stub.on(.get, "/v1/a", reply: .json(["ok": true]))
        let (center, _) = stubCenter(stub) { $0.callbackQueue = centerQueue }
        let seen = EventLog()
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            center.send {
                $0.api = "a"; $0.callbackQueue = ownQueue
            } onSuccess: { _ in
                seen.record("success on \(DispatchQueue.getSpecific(key: key) ?? "?")")
            } onFinished: { _ in
                seen.record("finished on \(DispatchQueue.getSpecific(key: key) ?? "?")")
                continuation.resume()
            }
        }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            center.sendBatch { batch in
                batch.callbackQueue = ownQueue
                batch.add { $0.api = "a" }
            } onFinished: { _ in
                seen.record("batch on \(DispatchQueue.getSpecific(key: key) ?? "?")")
                continuation.resume()
            }
        }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            center.send {
                $0.api = "a"
            } onFinished: { _ in
                seen.record("default on \(DispatchQueue.getSpecific(key: key) ?? "?")")
                continuation.resume()
            }
        }
        #expect(seen.all == ["success on own", "finished on own", "batch on own", "default on center"])
    }
}
