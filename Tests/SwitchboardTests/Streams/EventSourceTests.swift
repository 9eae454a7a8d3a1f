import Foundation
import Testing
@testable import Switchboard
import SwitchboardTestSupport

/// `Center.events`: server-sent events that reconnect, on both engines against the loopback server's `/sse` route
/// (which goes on after the `Last-Event-ID` it is sent, and answers `204` when nothing is left).
struct EventSourceTests {
    /// A short description of each update, for comparing a whole run at once.
    private func describe(_ update: EventSource.Update) -> String {
        switch update {
        case .open(let status, _): "open \(status)"
        case .event(let event): "event \(event.id)"
        case .reconnecting(let reconnection):
            "reconnect \(reconnection.attempt) from \(reconnection.lastEventID) after \(reconnection.delay)"
                + (reconnection.error.map { " (\($0.code))" } ?? "")
        }
    }

    @Test(arguments: bothEngines)
    func dropsReconnectFromTheLastCompleteEventUntilTheServerSays204(engineName: String) async throws {
        let center = try loopbackCenter(engineName)
        // Each connection ends after two events, cut off in the middle of the third (after its `id`): the source
        // reconnects after the server's `retry` (20 ms) from the last event it dispatched, not the cut-off id.
        let source = center.events { $0.api = "sse?count=5&drop=2&torn=1&retry=20" }
        var updates: [String] = []
        var data: [String] = []
        for try await update in source {
            updates.append(describe(update))
            if case .event(let event) = update { data.append(event.data) }
        }
        #expect(
            updates == [
                "open 200", "event 1", "event 2", "reconnect 1 from 2 after 0.02 seconds",
                "open 200", "event 3", "event 4", "reconnect 1 from 4 after 0.02 seconds",
                "open 200", "event 5", "reconnect 1 from 5 after 0.02 seconds",
            ])
        #expect(data == (1...5).map { "tick \($0)\nof 5" }, "every event once, none cut off")
        await waitUntil { center.registry.count == 0 }
        #expect(center.registry.count == 0, "the source and its connections left the registry")
    }

    @Test(arguments: bothEngines)
    func aRetryableStatusIsRetriedWithBackoffUpToTheLimitThenThrown(engineName: String) async throws {
        let center = try loopbackCenter(engineName)
        center.setup { $0.retryPolicy = RetryPolicy(initialDelay: .milliseconds(5), jitter: 0) }
        var updates: [String] = []
        do {
            for try await update in center.events({ $0.api = "status/503" }, maxReconnections: 2) {
                updates.append(describe(update))
            }
            Issue.record("a source whose every connection fails with 503 must end with that error")
        } catch let error as HTTPError {
            #expect(error.code == .unacceptableStatus)
            #expect(error.status == 503)
        }
        #expect(
            updates == [
                "reconnect 1 from  after 0.005 seconds (unacceptableStatus)",
                "reconnect 2 from  after 0.01 seconds (unacceptableStatus)",
            ])
    }

    @Test(arguments: bothEngines)
    func aStatusThatIsNotRetryableStopsAtOnce(engineName: String) async throws {
        let center = try loopbackCenter(engineName)
        var updates = 0
        await #expect(throws: HTTPError.self) {
            for try await _ in center.events({ $0.api = "status/404" }) { updates += 1 }
        }
        #expect(updates == 0)
    }

    /// A `POST` is not sent again when its stream ends (the default retry policy does not retry `POST`).
    @Test(arguments: bothEngines)
    func aPostIsNotReconnected(engineName: String) async throws {
        let center = try loopbackCenter(engineName)
        var updates: [String] = []
        for try await update in center.events({
            $0.api = "sse?count=3&drop=1"; $0.method = .post
        }) {
            updates.append(describe(update))
        }
        #expect(updates == ["open 200", "event 1"])
    }

    @Test(arguments: bothEngines)
    func cancelByIdentifierEndsTheSourceDuringAConnectionAndDuringTheWait(engineName: String) async throws {
        let center = try loopbackCenter(engineName)
        // During a connection: events come every 200 ms.
        let live = center.events { $0.api = "sse?count=50&interval=0.2" }
        var seen = 0
        do {
            for try await update in live {
                if case .event = update {
                    seen += 1
                    center.cancel(live.id)
                }
            }
            Issue.record("a cancelled source throws")
        } catch let error as HTTPError {
            #expect(error.code == .cancelled)
        }
        #expect(seen == 1)

        // During the wait before a reconnection (60 s, from the server's retry). The cancel comes from a dispatch
        // queue, which a busy test run cannot hold up as it can a task.
        let waiting = center.events { $0.api = "sse?count=3&drop=1&retry=60000" }
        var announced: ContinuousClock.Instant?
        do {
            for try await update in waiting {
                if case .reconnecting(let next) = update {
                    #expect(next.delay == .seconds(60))
                    announced = .now
                    let id = waiting.id
                    DispatchQueue.global().asyncAfter(deadline: .now() + 0.05) { center.cancel(id) }
                }
            }
            Issue.record("a cancelled source throws")
        } catch let error as HTTPError {
            #expect(error.code == .cancelled)
        }
        let waited = try #require(announced.map { ContinuousClock.now - $0 })
        #expect(waited < .seconds(30), "the cancel woke the 60-second wait")
        await waitUntil { center.registry.count == 0 }
        #expect(center.registry.count == 0)
    }

    @Test(arguments: bothEngines)
    func theCallbackFormDeliversEventsReconnectionsThenFinishedOnce(engineName: String) async throws {
        let center = try loopbackCenter(engineName)
        let log = Locked<[String]>([])
        let finished: HTTPError?? = await withCheckedContinuation { continuation in
            center.events(
                { $0.api = "sse?count=3&drop=2&retry=10" },
                onEvent: { event in
                    log.withLock { $0.append("event \(event.id)") }
                },
                onReconnect: { reconnection in
                    log.withLock { $0.append("reconnect from \(reconnection.lastEventID)") }
                },
                onFailure: { error in
                    log.withLock { $0.append("failure \(error.code)") }
                },
                onFinished: { error in
                    continuation.resume(returning: error)
                })
        }
        #expect(finished.map { $0 == nil } == true, "the server ended the source with a 204: no error")
        #expect(log.snapshot == ["event 1", "event 2", "reconnect from 2", "event 3", "reconnect from 3"])
    }

    @Test func aCallbackSourceCancelledAtOnceFailsWithCancelled() async throws {
        let center = try loopbackCenter("CurlEngine")
        let failures = Locked<[HTTPError.Code]>([])
        let finished: HTTPError?? = await withCheckedContinuation { continuation in
            let id = center.events(
                { $0.api = "sse?count=5&interval=0.2" }, onEvent: { _ in },
                onFailure: { error in
                    failures.withLock { $0.append(error.code) }
                },
                onFinished: { error in
                    continuation.resume(returning: error)
                })
            center.cancel(id)
        }
        #expect(finished??.code == .cancelled)
        #expect(failures.snapshot == [.cancelled])
    }

    /// Leaving the loop ends the source, even while the source value is still held: its connection is cancelled
    /// and it leaves the registry.
    @Test(arguments: bothEngines)
    func breakingOutOfTheLoopEndsTheSource(engineName: String) async throws {
        let center = try loopbackCenter(engineName)
        let source = center.events { $0.api = "sse?count=50&interval=0.2" }
        for try await update in source {
            if case .event = update { break }
        }
        await waitUntil { center.registry.count == 0 }
        #expect(center.registry.count == 0)
        #expect(center.request(for: source.id) == nil)
    }

    @Test func aSourceIsReadOnce() async throws {
        let center = try loopbackCenter("CurlEngine")
        let source = center.events { $0.api = "sse?count=1" }
        var first = source.makeAsyncIterator()
        var second = source.makeAsyncIterator()
        await #expect(throws: HTTPError.self) { _ = try await second.next() }
        if case .open(let status, _)? = try await first.next() {
            #expect(status == 200)
        } else {
            Issue.record("the first iterator reads the source")
        }
        source.cancel()
    }
}

/// The WHATWG rule for event streams, over loopback on both engines: a response that is not `text/event-stream` (a
/// captive portal's `200` login page) fails the connection with a clear error naming its type, at the first answer
/// or at a reconnection, and is not reopened; an event-stream request asks for `text/event-stream`.
@Suite struct EventStreamTypeTests {
    /// A server whose answers are, in turn, each of `types` (`nil`: no `Content-Type`): an event for
    /// `text/event-stream`, a page without events for any other; the `Accept` field of each request it had.
    static func server(answering types: [String?]) throws -> (LoopbackServer, Locked<[String?]>) {
        let accepts = Locked<[String?]>([])
        let server = try LoopbackServer { request in
            let index = accepts.withLock { seen in
                seen.append(request.header("Accept"))
                return seen.count - 1
            }
            let type = types[min(index, types.count - 1)]
            let isStream = type?.hasPrefix("text/event-stream") == true
            let body = isStream ? "id: \(index)\ndata: hello\n\n" : "<html><body>Sign in to continue</body></html>"
            var response = ServerResponse(status: 200, body: Data(body.utf8))
            if let type { response.headers.append(("Content-Type", type)) }
            return response
        }
        return (server, accepts)
    }

    @Test(arguments: bothEngines)
    func aPageThatIsNoEventStreamFailsAtOnceAndIsNotReopened(engineName: String) async throws {
        for type in ["text/html; charset=utf-8", "application/json", nil] as [String?] {
            let (server, accepts) = try Self.server(answering: [type])
            defer { server.stop() }
            let center = try loopbackCenter(engineName, server: server)
            center.setup { $0.retryPolicy = RetryPolicy(initialDelay: .milliseconds(5), jitter: 0) }
            var updates = 0
            let error = await #expect(throws: HTTPError.self) {
                for try await _ in center.events({ $0.api = "feed" }, maxReconnections: 2) { updates += 1 }
            }
            #expect(error?.code == .decoding)
            #expect(error?.message.contains(type.map { "\"\($0)\"" } ?? "no Content-Type") == true, "\(error!)")
            #expect(error?.message.contains("text/event-stream") == true)
            #expect(updates == 0, "no .open for what is not a stream")
            #expect(accepts.snapshot == ["text/event-stream"], "one request, asking for an event stream")
        }
    }

    @Test(arguments: bothEngines)
    func aReconnectionToAPageThatIsNoEventStreamFails(engineName: String) async throws {
        let (server, accepts) = try Self.server(answering: ["text/event-stream", "text/html"])
        defer { server.stop() }
        let center = try loopbackCenter(engineName, server: server)
        center.setup { $0.retryPolicy = RetryPolicy(initialDelay: .milliseconds(5), jitter: 0) }
        var updates: [String] = []
        let error = await #expect(throws: HTTPError.self) {
            for try await update in center.events({ $0.api = "feed" }, maxReconnections: 2) {
                switch update {
                case .open: updates.append("open")
                case .event(let event): updates.append("event \(event.data)")
                case .reconnecting: updates.append("reconnect")
                }
            }
        }
        #expect(error?.code == .decoding)
        #expect(error?.message.contains("\"text/html\"") == true)
        #expect(updates == ["open", "event hello", "reconnect"])
        #expect(accepts.snapshot.count == 2)
    }

    @Test(arguments: bothEngines)
    func aRequestsOwnAcceptIsKept(engineName: String) async throws {
        let (server, accepts) = try Self.server(answering: ["text/event-stream; charset=utf-8"])
        defer { server.stop() }
        let center = try loopbackCenter(engineName, server: server) { $0.headers["Accept"] = "application/json" }
        for try await update in center.events({ $0.api = "feed" }, maxReconnections: 0) {
            if case .event(let event) = update { #expect(event.data == "hello") }
        }
        let own = center.events(
            { request in
                request.api = "feed"
                request.headers["Accept"] = "text/event-stream, text/plain;q=0.1"
            }, maxReconnections: 0)
        for try await _ in own {}
        #expect(accepts.snapshot == ["text/event-stream", "text/event-stream, text/plain;q=0.1"])
    }

    /// `stream { }.events` reads one response: what is not an event stream throws at the first `next()`.
    @Test(arguments: bothEngines)
    func aStreamsEventsRefuseWhatIsNoEventStream(engineName: String) async throws {
        let (server, _) = try Self.server(answering: ["text/html"])
        defer { server.stop() }
        let center = try loopbackCenter(engineName, server: server)
        let stream = try await center.stream { $0.api = "feed" }
        var events = 0
        let error = await #expect(throws: HTTPError.self) {
            for try await _ in stream.events { events += 1 }
        }
        #expect(error?.code == .decoding)
        #expect(error?.message.contains("\"text/html\"") == true)
        #expect(events == 0)
        // The same body read as lines is what it is.
        let lines = try await center.stream { $0.api = "feed" }
        var read: [String] = []
        for try await line in lines.lines { read.append(line) }
        #expect(read == ["<html><body>Sign in to continue</body></html>"])
    }
}
