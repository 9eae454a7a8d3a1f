import Foundation
import Testing
@testable import Switchboard
import SwitchboardTestSupport

/// `Center.stream`: bodies read as they arrive, through the whole request path, on both engines against the
/// loopback server.
struct StreamTests {
    @Test(arguments: bothEngines)
    func serverSentEventsArriveInOrderWithTheirFields(engineName: String) async throws {
        let center = try loopbackCenter(engineName)
        for crlf in ["0", "1"] {
            let stream = try await center.stream { $0.api = "sse?count=4&interval=0.01&crlf=\(crlf)" }
            #expect(stream.status == 200)
            #expect(stream.headers["Content-Type"] == "text/event-stream")
            var events: [ServerSentEvent] = []
            for try await event in stream.events { events.append(event) }
            #expect(events == (1...4).map { ServerSentEvent(type: "tick", data: "tick \($0)\nof 4", id: "\($0)") })
        }
    }

    @Test(arguments: bothEngines)
    func linesAndJSONLines(engineName: String) async throws {
        let center = try loopbackCenter(engineName)
        struct Item: Decodable { var id: Int; var url: String }
        let items = try await center.stream {
            $0.api = "stream/5"; $0.parameters = ["q": "x"]
        }.jsonLines(Item.self)
        var ids: [Int] = []
        for try await item in items {
            ids.append(item.id)
            #expect(item.url.hasSuffix("/stream/5?q=x"))
        }
        #expect(ids == [0, 1, 2, 3, 4])
        var lines: [String] = []
        for try await line in try await center.stream({ $0.api = "sse?count=1" }).lines { lines.append(line) }
        #expect(lines == [": event 1 follows", "id: 1", "event: tick", "data: tick 1", "data: of 1", ""])
    }

    /// A redirect's head never opens the stream: the engine follows it, and the target's body is streamed.
    @Test(arguments: bothEngines)
    func aRedirectIsFollowedBeforeTheStreamOpens(engineName: String) async throws {
        let center = try loopbackCenter(engineName)
        let stream = try await center.stream { request in
            request.api = "redirect-to"
            request.parameters = ["url": "/sse?count=2", "status_code": 302]
        }
        #expect(stream.status == 200)
        #expect(stream.url?.path == "/sse")
        var ids: [String] = []
        for try await event in stream.events { ids.append(event.id) }
        #expect(ids == ["1", "2"])
    }

    /// Every byte arrives unchanged, in order: a 4 MiB generated body, compared byte for byte.
    @Test(arguments: bothEngines)
    func theBytesAreTheBody(engineName: String) async throws {
        let center = try loopbackCenter(engineName)
        let length = 4 << 20
        let stream = try await center.stream { $0.api = "files/\(length)" }
        var received = Data()
        var chunks = 0
        for try await chunk in stream {
            received.append(chunk)
            chunks += 1
        }
        #expect(received == GeneratedContent(seed: 1).bytes(offset: 0, count: length))
        #expect(chunks > 1)
    }

    /// A status the request does not accept throws before any chunk, with the error response's body.
    @Test(arguments: bothEngines)
    func anUnacceptableStatusThrowsWithItsBody(engineName: String) async throws {
        let center = try loopbackCenter(engineName)
        do {
            _ = try await center.stream { $0.api = "sse?token=secret" }
            Issue.record("a 401 opened the stream")
        } catch {
            #expect(error.code == .unacceptableStatus)
            #expect(error.response?.status == 401)
            #expect(error.response?.json?["error"]?.string == "the token is not secret")
        }
    }

    /// A refused credential is refreshed once and the request sent again, before anything is streamed.
    @Test(arguments: bothEngines)
    func aRefusedCredentialIsRefreshedBeforeTheStreamStarts(engineName: String) async throws {
        let engine = try namedEngine(engineName)
        let authenticator = Authenticator(credential: "stale") { token, request in
            request.headers["Authorization"] = "Bearer \(token)"
        } refresh: { _, _ in
            "fresh"
        }
        let center = Center { config in
            config.engine = engine
            config.server = LoopbackServer.shared.baseURL + "/"
            config.authenticator = authenticator
        }
        var events: [String] = []
        for try await event in try await center.stream({ $0.api = "sse?count=2&token=fresh" }).events {
            events.append(event.id)
        }
        #expect(events == ["1", "2"])
        #expect(authenticator.refreshCount == 1)
    }

    /// The stream lasts two minutes (2,400 events, one each 50 ms): long enough that it is still running when its
    /// reader gets to the second event, however long a busy run keeps the reader's task waiting for a thread (with
    /// 400 events, 20 s, a CI run's reader found the whole stream already buffered).
    @Test(arguments: bothEngines)
    func cancelByIdentifierEndsTheStreamMidway(engineName: String) async throws {
        let center = try loopbackCenter(engineName)
        let stream = try await center.stream { $0.api = "sse?count=2400&interval=0.05" }
        var seen: [String] = []
        do {
            for try await event in stream.events {
                seen.append(event.id)
                if seen.count == 2 { center.cancel(stream.id) }
            }
            Issue.record("the stream ended without the cancel")
        } catch let error as HTTPError {
            #expect(error.code == .cancelled)
        }
        #expect(seen.count >= 2 && seen.count < 2400)
        await waitUntil { center.request(for: stream.id) == nil }
    }

    /// Leaving the loop cancels the transfer: the request is gone from the center long before the 60 s the whole
    /// stream takes.
    @Test(arguments: bothEngines)
    func endingTheIterationCancelsTheTransfer(engineName: String) async throws {
        let center = try loopbackCenter(engineName)
        let stream = try await center.stream { $0.api = "sse?count=600&interval=0.1" }
        for try await _ in stream.events { break }
        await waitUntil({ center.request(for: stream.id) == nil }, timeout: .seconds(30))
        // A second iteration is refused: a stream is read once.
        await #expect(throws: HTTPError.self) { for try await _ in stream {} }
    }

    /// A reader slower than the network: CurlEngine pauses the transfer, so no more than the buffer waits and every
    /// byte arrives; URLSessionEngine cannot pause, and ends the stream with `.streamOverflow` instead of holding it.
    @Test(arguments: bothEngines)
    func aSlowReaderHoldsAtMostTheBuffer(engineName: String) async throws {
        let center = try loopbackCenter(engineName)
        let length = 8 << 20
        let buffer = 256 << 10
        let stream = try await center.stream {
            $0.api = "files/\(length)"; $0.streamBufferSize = buffer
        }
        var received = Data()
        var failure: HTTPError?
        do {
            for try await chunk in stream {
                if received.isEmpty { try await Task.sleep(for: .milliseconds(300)) }
                received.append(chunk)
            }
        } catch let error as HTTPError {
            failure = error
        }
        let peak = stream.lease.channel.peakBuffered
        #expect(peak <= buffer, "peak \(peak)")
        if engineName == "CurlEngine" {
            #expect(failure == nil)
            #expect(received == GeneratedContent(seed: 1).bytes(offset: 0, count: length))
        } else {
            #expect(failure?.code == .streamOverflow, "\(String(describing: failure))")
            #expect(received.count < length)
        }
    }

    /// Reads a stream made by `open` through `read` (which adds what it reads to its second argument), to its end or
    /// its failure.
    ///
    /// URLSessionEngine cannot pause a transfer, so it fails a reader that falls a whole buffer behind
    /// (`aSlowReaderHoldsAtMostTheBuffer`). The routes below send their bodies in pieces 80 ms apart, which takes a
    /// stall of more than half a second in the reading task; while the whole suite starts on two cores that
    /// happens. Such a run says nothing about what is tested here, so it is made again (at most 4 times).
    private func readAll<T>(
        _ open: () async throws -> ResponseStream, _ read: (ResponseStream, inout [T]) async throws -> Void
    ) async throws -> (stream: ResponseStream, read: [T], failure: HTTPError?) {
        var attempt = 0
        while true {
            attempt += 1
            let stream = try await open()
            var items: [T] = []
            var failure: HTTPError?
            do {
                try await read(stream, &items)
            } catch let error as HTTPError {
                failure = error
            }
            let fellBehind = failure?.message.contains("consumer fell more than") == true
            if !fellBehind || attempt == 4 { return (stream, items, failure) }
        }
    }

    /// A line longer than the stream holds (`streamBufferSize`) ends the lines with `.streamOverflow`, after the
    /// lines before it and wherever its pieces were cut, and stops the transfer; a line of exactly the limit is
    /// read. Before, the reader held the line whole, so a body without line breaks grew it without end.
    @Test(arguments: bothEngines)
    func aLineLongerThanTheBufferEndsTheLines(engineName: String) async throws {
        let center = try loopbackCenter(engineName)
        let buffer = 64 << 10
        for (length, pieces) in [(buffer, 8), (buffer + 1, 8), (4 * buffer, 32)] {
            let (stream, lines, failure) = try await readAll {
                try await center.stream {
                    $0.api = "long-line?length=\(length)&pieces=\(pieces)&interval=0.08"
                    $0.streamBufferSize = buffer
                }
            } _: { stream, lines in
                for try await line in stream.lines { lines.append(line) }
            }
            if length <= buffer {
                #expect(failure == nil, "\(length): \(String(describing: failure))")
                // Compared by length and content apart, so that a failure does not print the whole line.
                #expect(lines.map(\.count) == [6, length, 5], "\(length)")
                #expect(lines.count == 3 && lines[1].allSatisfy { $0 == "a" } && lines[2] == "after", "\(length)")
            } else {
                #expect(failure?.code == .streamOverflow, "\(length): \(String(describing: failure))")
                #expect(failure?.message.contains("a line of the stream is longer than \(buffer) bytes") == true)
                #expect(lines == ["before"], "\(length): the line before it was read")
                if length > 2 * buffer {
                    // Refused a quarter of the way through: the rest, still to come, was given up.
                    #expect(stream.lease.channel.isAbandoned, "\(length): the rest of the body was given up")
                }
            }
            #expect(stream.lease.channel.peakBuffered <= buffer, "\(length)")
            await waitUntil({ center.request(for: stream.id) == nil }, timeout: .seconds(30))
            #expect(center.request(for: stream.id) == nil, "\(length): the stream left the center")
        }
    }

    /// A server-sent event longer than the stream holds ends the events with `.streamOverflow`, after the events
    /// before it: one data line too long, or data lines that no blank line closes, which add up.
    @Test(arguments: bothEngines)
    func anEventLargerThanTheBufferEndsTheEvents(engineName: String) async throws {
        let center = try loopbackCenter(engineName)
        let buffer = 64 << 10
        for kind in ["1", "lines"] {
            let (stream, events, failure) = try await readAll {
                try await center.stream {
                    $0.api = "long-line?length=\(2 * buffer)&pieces=16&interval=0.08&sse=\(kind)"
                    $0.streamBufferSize = buffer
                }
            } _: { stream, events in
                for try await event in stream.events { events.append(event.data) }
            }
            #expect(failure?.code == .streamOverflow, "\(kind): \(String(describing: failure))")
            #expect(failure?.message.contains("than \(buffer) bytes") == true, "\(kind)")
            #expect(events == ["before"], "\(kind)")
            await waitUntil({ center.request(for: stream.id) == nil }, timeout: .seconds(30))
        }
        // The reconnecting source stops with it too: the same event would come again.
        var updates: [String] = []
        let source = center.events {
            $0.api = "long-line?length=\(2 * buffer)&pieces=16&interval=0.08&sse=1"
            $0.streamBufferSize = buffer
        }
        do {
            for try await update in source {
                if case .event(let event) = update { updates.append(event.data) }
            }
            Issue.record("the source ended without an error")
        } catch let error as HTTPError {
            #expect(error.code == .streamOverflow)
        }
        #expect(updates == ["before"])
        await waitUntil { center.registry.count == 0 }
        #expect(center.registry.count == 0)
    }

    @Test func anEngineThatDoesNotStreamIsRefusedBeforeSending() async throws {
        struct Collecting: Engine {
            let stub = StubEngine()
            func perform(
                _ request: EngineRequest, progress: @escaping @Sendable (TransferProgress) -> Void
            ) async throws -> EngineResponse {
                try await stub.perform(request, progress: progress)
            }
        }
        let engine = Collecting()
        let center = Center {
            $0.engine = engine; $0.server = "http://stub.invalid/"
        }
        await #expect(throws: HTTPError.self) { _ = try await center.stream { $0.api = "feed" } }
        do {
            _ = try await center.stream { $0.api = "feed" }
        } catch {
            #expect(error.code == .unsupported)
        }
        #expect(engine.stub.requests.isEmpty)
    }

    /// A stream's buffer holds at least a byte: 0 or less is refused before anything is sent, through the `onError`
    /// hook like any refusal (it was taken as 1 byte, and the stream failed at its first line, "longer than 1 bytes").
    /// The same for the server-sent events built on streams.
    @Test func aStreamBufferOfNoBytesIsRefusedBeforeSending() async throws {
        let stub = StubEngine()
        stub.on(.get, "/v1/feed", reply: .string("data: a\n\n"))
        let hooked = Locked(0)
        let (center, _) = stubCenter(stub) { config in
            config.onError = { _, error in
                hooked.withLock { $0 += 1 }
                return error
            }
        }
        for size in [0, -1, Int.min] {
            do {
                _ = try await center.stream { request in
                    request.api = "feed"
                    request.streamBufferSize = size
                }
                Issue.record("a stream with streamBufferSize \(size) was opened")
            } catch {
                #expect(error.code == .encoding, "\(size)")
                #expect(error.message.contains("streamBufferSize is \(size)"), "\(error.message)")
            }
        }
        #expect(hooked.withLock { $0 } == 3)
        _ = try await center.stream { request in
            request.api = "feed"
            request.streamBufferSize = 1
        }
        #expect(stub.requests.count == 1, "only the stream of 1 byte was sent")
    }

    /// Above the transport: the stub hands the body over in one piece, through hooks and plugins like any request.
    @Test func theStubStreamsThroughTheHooks() async throws {
        let stub = StubEngine()
        stub.on(.get, "/v1/feed") { request in
            .string(
                "data: \(request.urlRequest.value(forHTTPHeaderField: "X-Token") ?? "none")\n\n",
                headers: ["Content-Type": "text/event-stream"])
        }
        let center = stubCenter(stub) { config in
            config.onRequest = { request in request.headers["X-Token"] = "t1" }
        }.0
        var events: [ServerSentEvent] = []
        for try await event in try await center.stream({ $0.api = "feed" }).events { events.append(event) }
        #expect(events == [ServerSentEvent(data: "t1")])
    }
}
