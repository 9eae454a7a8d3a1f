import Foundation
import Testing
@testable import Switchboard
import SwitchboardTestSupport

/// Records every event it observes, as short text, per request identifier.
final class TimelineObserver: RequestObserver {
    private let events = Locked<[(RequestID, String)]>([])

    func observe(_ event: RequestEvent) async {
        let text: String =
            switch event.kind {
            case .created: "created"
            // The engine request it carries is this request's, as the engine got it.
            case .sent(let sent): sent.id == event.id && sent.urlText != nil ? "sent" : "sent something else"
            case .responseHead(let status, _): "head \(status)"
            case .redirected(let status, _, let to): "redirected \(status) to \(to?.path ?? "?")"
            case .retried(let attempt, let error, _):
                "retried \(attempt) after \(error.status.map(String.init) ?? "\(error.code)")"
            case .finished(.success(let response)): "finished \(response.status)"
            case .finished(.failure(let error)): "failed \(error.code)"
            case .cancelled: "cancelled"
            }
        events.withLock { $0.append((event.id, text)) }
    }

    /// The events of one request, in the order observed.
    func timeline(_ id: RequestID) -> [String] {
        events.withLock { $0.filter { $0.0 == id }.map(\.1) }
    }

    /// The identifiers seen, in the order of their first event.
    var ids: [RequestID] {
        events.withLock { events in
            var seen: [RequestID] = []
            for (id, _) in events where !seen.contains(id) { seen.append(id) }
            return seen
        }
    }
}

/// `RequestObserver`: the life of each request, in order, on both engines against the loopback server.
struct ObserverTests {
    private func center(_ engine: String) throws -> (Center, TimelineObserver) {
        let observer = TimelineObserver()
        let center = try loopbackCenter(engine)
        center.setup { $0.plugins.append(observer) }
        return (center, observer)
    }

    @Test(arguments: bothEngines)
    func redirectsAreSeenWithEachHeadOnBothEngines(engine: String) async throws {
        let (center, observer) = try center(engine)
        let get = try await center.send { $0.api = "redirect/1" }
        #expect(
            observer.timeline(get.request.id) == [
                "created", "sent", "head 302", "redirected 302 to /get", "head 200", "finished 200",
            ])
        // A 307 keeps the method and body: URLSessionEngine sends it again by hand, CurlEngine as any redirect.
        let post = try await center.send { request in
            request.api = "redirect-to?url=%2Fanything&status_code=307"
            request.method = .post
            request.body = .data(Data("kept".utf8), contentType: "text/plain")
        }
        #expect(post.json?["data"]?.string == "kept")
        #expect(
            observer.timeline(post.request.id) == [
                "created", "sent", "head 307", "redirected 307 to /anything", "head 200", "finished 200",
            ])
    }

    @Test(arguments: bothEngines)
    func retriesAndTheFinalFailureAreSeen(engine: String) async throws {
        let (center, observer) = try center(engine)
        center.setup { $0.retryPolicy = RetryPolicy(maxAttempts: 3, initialDelay: .milliseconds(1)) }
        let key = UUID().uuidString
        let response = try await center.send { $0.api = "fail-times/1/\(key)" }
        #expect(
            observer.timeline(response.request.id) == [
                "created", "sent", "head 503", "retried 1 after 503", "sent", "head 200", "finished 200",
            ])
        let outcome = await center.sendRecording { $0.api = "status/404" }
        #expect(observer.timeline(outcome.id) == ["created", "sent", "head 404", "failed unacceptableStatus"])
    }

    @Test(arguments: bothEngines)
    func aCancelledRequestEndsWithCancelledOnly(engine: String) async throws {
        let (center, observer) = try center(engine)
        // Cancelled once it is on the network (before that, it would end as cancelled without being sent).
        // Watched from a thread of its own, which a busy test run holds up less than a task.
        let outcome = await center.sendRecording(
            { $0.api = "delay/10" },
            afterSending: { id in
                BlockingWork.start {
                    while !observer.timeline(id).contains("sent") { usleep(1000) }
                    center.cancel(id)
                }
            })
        #expect(outcome.error?.code == .cancelled)
        // The head may have come first on a busy machine (observers run in tasks); the end is `cancelled`, once,
        // and never `finished`.
        let timeline = observer.timeline(outcome.id)
        #expect(timeline.prefix(2) == ["created", "sent"])
        #expect(timeline.last == "cancelled")
        #expect(timeline.filter { $0 == "cancelled" || $0.hasPrefix("finished") || $0.hasPrefix("failed") }.count == 1)
    }

    @Test(arguments: bothEngines)
    func aStreamAndItsEndAreSeen(engine: String) async throws {
        let (center, observer) = try center(engine)
        let stream = try await center.stream { $0.api = "sse?count=2" }
        var events = 0
        for try await _ in stream.events { events += 1 }
        #expect(events == 2)
        await waitUntil { observer.timeline(stream.id).last == "finished 200" }
        #expect(observer.timeline(stream.id) == ["created", "sent", "head 200", "finished 200"])
    }

    /// Batch members and chain steps are requests of their own: each has its whole timeline, under its own id.
    @Test func groupMembersAreSeenEachUnderItsOwnIdentifier() async throws {
        let observer = TimelineObserver()
        let (center, stub) = stubCenter { $0.plugins.append(observer) }
        stub.on(nil, "/v1/a", reply: .json(["next": "b"]))
        stub.on(nil, "/v1/b", reply: .status(500))
        await #expect(throws: HTTPError.self) {
            try await center.batch { batch in
                batch.add { $0.api = "a" }
                batch.add { $0.api = "b" }
            }
        }
        let ids = observer.ids
        #expect(ids.count == 2)
        let timelines = Set(ids.map { observer.timeline($0) })
        #expect(
            timelines == [
                ["created", "sent", "head 200", "finished 200"],
                ["created", "sent", "head 500", "failed unacceptableStatus"],
            ])
    }

    /// No observer, no relay: a center with other plugins only posts nothing.
    @Test func aCenterWithoutObserversMakesNoRelay() {
        struct Header: Plugin {}
        let request = Request { $0.api = "a" }
        var configuration = Center.Configuration()
        configuration.plugins = [Header()]
        #expect(EventRelay.of(PluginChain.of(request, configuration, owner: Center())) == nil)
        configuration.plugins.append(TimelineObserver())
        #expect(EventRelay.of(PluginChain.of(request, configuration, owner: Center())) != nil)
    }
}
