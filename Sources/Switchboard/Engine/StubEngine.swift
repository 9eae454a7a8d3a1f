import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// An engine that answers from canned replies: for tests, previews and offline work.
///
/// Routes match a method (or any) and a path; the most recently added matching route answers. A route replies with
/// a status, headers, a body, a delay or an error, or with a sequence of replies (one per call, the last repeating),
/// or computes its reply from the request. Unmatched requests get `fallback` (404 by default).
///
/// ```swift
/// let stub = StubEngine()
/// stub.on(.get, "/users/1", reply: .json(["id": 1, "name": "Ada"]))
/// stub.on(.post, "/orders", replies: [.status(503), .status(201)])
/// stub.on(.get, "/slow", reply: .status(200).delayed(by: .seconds(2)))
/// stub.on(nil, "/offline/*", reply: .failure(URLError(.notConnectedToInternet)))
/// let center = Center { $0.engine = stub; $0.server = "https://api.example.com" }
/// ```
///
/// Delays wait on the engine's clock, so a test can inject a clock and never sleep. Every request the stub saw is
/// recorded in `requests`, and `statistics` counts calls, cancellations and the most requests in flight at once.
public final class StubEngine: Engine {
    /// What the stub has seen.
    public struct Statistics: Sendable, Hashable {
        /// Exchanges started.
        public var calls = 0
        /// Exchanges that ended because their task was cancelled.
        public var cancellations = 0
        /// Exchanges in flight now.
        public var inFlight = 0
        /// The most exchanges that were in flight at once.
        public var maxInFlight = 0
    }

    private struct Route {
        let method: HTTPMethod?
        let path: String
        let respond: @Sendable (EngineRequest, Int) async throws -> StubReply

        func matches(_ request: EngineRequest) -> Bool {
            if let method, method != request.method { return false }
            let requested = request.url?.path ?? ""
            if path == "*" { return true }
            if path.hasSuffix("*") { return requested.hasPrefix(path.dropLast()) }
            return requested == path || requested == path + "/" || requested + "/" == path
        }
    }

    private struct State {
        var routes: [(route: Route, calls: Int)] = []
        var fallback = StubReply.status(404)
        var requests: [EngineRequest] = []
        var statistics = Statistics()
    }

    private let clock: any Clock<Duration>
    private let state = Locked(State())

    /// Creates a stub with no routes.
    ///
    /// - Parameter clock: what delays wait on; inject a test clock to control time.
    public init(clock: any Clock<Duration> = ContinuousClock()) {
        self.clock = clock
    }

    // MARK: - Routes

    /// Answers requests for `path` (with `method`, or any method when `nil`) with one reply, every time.
    ///
    /// A path ending in `*` matches every path with that prefix; `"*"` alone matches everything.
    @discardableResult
    public func on(_ method: HTTPMethod?, _ path: String, reply: StubReply) -> StubEngine {
        on(method, path) { _ in reply }
    }

    /// Answers successive requests with successive replies; the last one repeats.
    @discardableResult
    public func on(_ method: HTTPMethod?, _ path: String, replies: [StubReply]) -> StubEngine {
        precondition(!replies.isEmpty, "a stub route needs at least one reply")
        add(Route(method: method, path: path) { _, call in replies[min(call, replies.count - 1)] })
        return self
    }

    /// Answers with a reply computed from the request (to echo it, or to count calls).
    @discardableResult
    public func on(
        _ method: HTTPMethod?, _ path: String, respond: @escaping @Sendable (EngineRequest) async throws -> StubReply
    ) -> StubEngine {
        add(Route(method: method, path: path) { request, _ in try await respond(request) })
        return self
    }

    /// The reply for requests no route matches. `404` with no body by default.
    public var fallback: StubReply {
        get { state.withLock { $0.fallback } }
        set { state.withLock { $0.fallback = newValue } }
    }

    /// Every request the stub received, in order.
    public var requests: [EngineRequest] {
        state.withLock { $0.requests }
    }

    /// Counts of calls, cancellations and concurrency.
    public var statistics: Statistics {
        state.withLock { $0.statistics }
    }

    /// Forgets the recorded requests and statistics; routes stay.
    public func resetRecords() {
        state.withLock { state in
            state.requests = []
            state.statistics = Statistics(inFlight: state.statistics.inFlight)
        }
    }

    private func add(_ route: Route) {
        state.withLock { $0.routes.append((route, 0)) }
    }

    // MARK: - Engine

    /// `true`: `perform` stops when the request's `cancellation` fires.
    public var honoursCancellation: Bool { true }

    /// `true`: a reply takes as long on the stub's clock as its body (and the request's) would at the request's
    /// speed limits, after its own delay.
    public var honoursRateLimits: Bool { true }

    /// `true`: a stream's body is handed over in one piece.
    public var streamsResponses: Bool { true }

    /// `true`: the stub follows no redirect whatever the policy, a route's `3xx` reply being the answer it
    /// declares, so that a center's policy needs no change for its tests.
    public var honoursRedirectPolicy: Bool { true }

    /// `true`: the stub connects to no server, so there is nothing to trust, and a center's trust policies need no
    /// change for its tests.
    public var honoursTrustPolicy: Bool { true }

    /// Answers from the matching route, after its delay; throws `CancellationError` if cancelled while waiting.
    public func perform(
        _ request: EngineRequest,
        progress: @escaping @Sendable (TransferProgress) -> Void
    ) async throws -> EngineResponse {
        // What the built-in engines refuse before sending, the stub refuses too (and does not record), so that a test
        // on the stub cannot pass with a request no engine would send.
        try request.checkBeforeSending()
        let (route, call) = state.withLock { state -> (Route?, Int) in
            state.requests.append(request)
            state.statistics.calls += 1
            state.statistics.inFlight += 1
            state.statistics.maxInFlight = max(state.statistics.maxInFlight, state.statistics.inFlight)
            guard let index = state.routes.lastIndex(where: { $0.route.matches(request) }) else { return (nil, 0) }
            defer { state.routes[index].calls += 1 }
            return (state.routes[index].route, state.routes[index].calls)
        }
        var cancelled = false
        defer {
            state.withLock { state in
                state.statistics.inFlight -= 1
                if cancelled { state.statistics.cancellations += 1 }
            }
        }
        do {
            try request.checkCancellation()
            let reply = try await route?.respond(request, call) ?? fallback
            // The delay, and the time the bodies take at the request's speed limits, pass on the stub's clock.
            var wait = reply.delay
            if let rate = request.maxSendBytesPerSecond, let sent = request.body.count {
                wait += .seconds(Double(sent) / Double(rate))
            }
            if let rate = request.maxReceiveBytesPerSecond {
                wait += .seconds(Double(reply.body.count) / Double(rate))
            }
            if wait > .zero {
                // The sleep runs in a task of its own, so that the request's `cancellation` can end it too.
                let (clock, wait) = (clock, wait.boundedAsWait)
                let sleeper = Task { try await clock.sleep(for: wait) }
                try await request.withCancellationHandler {
                    try await sleeper.value
                } onCancel: {
                    sleeper.cancel()
                }
            }
            try request.checkCancellation()
            if let error = reply.error { throw error }
            if let sent = request.body.count, sent > 0 {
                progress(TransferProgress(direction: .upload, completed: sent, expected: sent))
            }
            let url = request.url ?? URL(string: "http://stub.invalid/")!
            var response = EngineResponse(
                status: reply.status, url: url, httpVersion: "HTTP/1.1", headers: reply.headers, body: Data())
            request.onEvent?(.responseHead(status: reply.status, headers: reply.headers))
            var counter = DownloadCounter(response: response)
            if counter.expected == nil {
                counter.expected = DownloadCounter.end(from: counter.start, after: Int64(reply.body.count))
            }
            if !reply.body.isEmpty { progress(counter.add(reply.body.count)) }
            if let receiver = request.receiver, receiver.accepts(response) {
                // A stream's body, in one piece (taken whole: nothing waits in the stream's buffer yet).
                _ = receiver.offer(reply.body) {}
                return response
            }
            if let sink = try request.sink(for: response) {
                do {
                    try sink.write(reply.body)
                    response.fileLength = try sink.close()
                    return response
                } catch {
                    sink.abandon()
                    throw HTTPError(.fileSystem, "the download could not be written: \(error)", underlying: error)
                }
            }
            response.body = reply.body
            return response
        } catch is CancellationError {
            cancelled = true
            throw CancellationError()
        }
    }
}
