import Foundation

/// The buffer between an engine delivering a streamed body and the consumer reading it: the head for the caller of
/// `Center.stream`, then chunks in order, then the end or the failure, with backpressure both ways.
///
/// The engine side (`BodyReceiver`) opens it with an acceptable head and offers chunks; when more than `limit` bytes
/// wait, an offer is refused and the engine's resume action is kept until the consumer has read half of them. The
/// pipeline's task finishes it with the request's outcome. The consumer side waits for the head, then for chunks.
final class StreamChannel: BodyConsumer, Sendable {
    /// What the caller of `Center.stream` learns before the first chunk.
    struct Head: Sendable {
        var status: Int
        var headers: HTTPHeaders
        var url: URL?
        var httpVersion: String?
    }

    fileprivate struct State {
        var head: Head?
        var headWaiter: CheckedContinuation<Head, any Error>?
        var chunks: [Data] = []
        var first = 0
        var buffered = 0
        var end: Result<Void, HTTPError>?
        var consumer: CheckedContinuation<Data?, any Error>?
        var resume: (@Sendable () -> Void)?
        /// The consumer has gone (stopped iterating): chunks are dropped.
        var abandoned = false
        var peak = 0
        /// The body's bytes offered so far.
        var received = 0
    }

    let limit: Int
    private let isAcceptable: @Sendable (Int) -> Bool
    private let answersRedirects: Bool
    private let state = Locked(State())

    /// - Parameters:
    ///   - limit: the most bytes held for the consumer (at least 1).
    ///   - answersRedirects: whether a redirect is the answer (the request follows none): then a redirect's head
    ///     opens the stream too; otherwise it never does.
    ///   - isAcceptable: whether a status opens the stream (the request's acceptable codes).
    init(limit: Int, answersRedirects: Bool = false, isAcceptable: @escaping @Sendable (Int) -> Bool) {
        self.limit = max(1, limit)
        self.answersRedirects = answersRedirects
        self.isAcceptable = isAcceptable
    }

    /// Whether the stream has opened: chunks may have reached the consumer, so the request must not be sent again.
    var hasOpened: Bool { state.withLock { $0.head != nil } }

    /// Whether the stream has ended (its request's outcome is in).
    var hasEnded: Bool { state.withLock { $0.end != nil } }

    /// Whether the consumer gave up on the rest of the body (`abandon()`).
    var isAbandoned: Bool { state.withLock { $0.abandoned } }

    /// The most bytes that were ever waiting for the consumer at once.
    var peakBuffered: Int { state.withLock { $0.peak } }

    /// The body's bytes that arrived (for the console log).
    var received: Int { state.withLock { $0.received } }

    // MARK: - Engine side

    /// Whether a head with this status would open the stream now (`open` would take it).
    func wouldOpen(status: Int) -> Bool {
        opens(status) && state.withLock { $0.head == nil && $0.end == nil }
    }

    /// Whether the stream opens with a head of this status: an acceptable one that is no redirect's, or a redirect's
    /// when it is the answer.
    private func opens(_ status: Int) -> Bool {
        guard (300..<400).contains(status) else { return isAcceptable(status) }
        return answersRedirects && (Redirects.follows(status: status) || isAcceptable(status))
    }

    /// Opens the stream with an acceptable head (once); refuses any other.
    func open(_ response: EngineResponse) -> Bool {
        let status = response.status
        guard opens(status) else { return false }
        let head = Head(
            status: status, headers: response.headers ?? [:], url: response.url, httpVersion: response.httpVersion)
        let waiter = state.withLock { state -> CheckedContinuation<Head, any Error>?? in
            guard state.head == nil, state.end == nil else { return .none }
            state.head = head
            defer { state.headWaiter = nil }
            return .some(state.headWaiter)
        }
        guard case .some(let waiter) = waiter else { return false }
        waiter?.resume(returning: head)
        return true
    }

    func offer(_ chunk: Data, resume: @escaping @Sendable () -> Void) -> Bool {
        guard !chunk.isEmpty else { return true }
        enum Outcome { case taken, refused, deliver(CheckedContinuation<Data?, any Error>) }
        let outcome = state.withLock { state -> Outcome in
            if state.abandoned || state.end != nil { return .taken }
            if let consumer = state.consumer {
                state.consumer = nil
                state.received += chunk.count
                return .deliver(consumer)
            }
            if state.buffered > 0 && state.buffered + chunk.count > limit {
                state.resume = resume
                return .refused
            }
            state.received += chunk.count
            state.chunks.append(chunk)
            state.buffered += chunk.count
            state.peak = max(state.peak, state.buffered)
            return .taken
        }
        switch outcome {
        case .taken: return true
        case .refused: return false
        case .deliver(let consumer):
            consumer.resume(returning: chunk)
            return true
        }
    }

    // MARK: - Pipeline side

    /// Ends the stream with the request's outcome. A success that never opened the stream (an endpoint stub, a
    /// redirect accepted as the answer) opens it now with its whole body as the one chunk.
    func finish(_ result: Result<Response, HTTPError>) {
        var headWaiter: CheckedContinuation<Head, any Error>?
        var headResult: Result<Head, HTTPError>?
        var consumer: CheckedContinuation<Data?, any Error>?
        var delivered: Data?
        var resume: (@Sendable () -> Void)?
        state.withLock { state in
            guard state.end == nil else { return }
            switch result {
            case .success(let response):
                if state.head == nil {
                    state.head = Head(
                        status: response.status, headers: response.headers, url: response.url, httpVersion: nil)
                    if !response.data.isEmpty, !state.abandoned {
                        state.chunks.append(response.data)
                        state.buffered += response.data.count
                    }
                }
                state.end = .success(())
                headResult = .success(state.head!)
            case .failure(let error):
                state.end = .failure(error)
                if error.code == .cancelled {
                    // Cancelled: the reader stops at once, without the chunks still waiting. (After any other
                    // failure it reads what arrived, then the error.)
                    state.chunks = []
                    state.first = 0
                    state.buffered = 0
                }
                headResult = state.head.map { .success($0) } ?? .failure(error)
            }
            headWaiter = state.headWaiter
            state.headWaiter = nil
            if let waiting = state.consumer {
                state.consumer = nil
                consumer = waiting
                if state.first < state.chunks.count { delivered = state.take() }
            }
            resume = state.resume
            state.resume = nil
        }
        if let headWaiter, let headResult { headWaiter.resume(with: headResult) }
        resume?()
        guard let consumer else { return }
        if let delivered { return consumer.resume(returning: delivered) }
        switch result {
        case .success: consumer.resume(returning: nil)
        case .failure(let error): consumer.resume(throwing: error)
        }
    }

    // MARK: - Consumer side

    /// Waits for the head, or throws the request's failure.
    func head() async throws -> Head {
        try await withCheckedThrowingContinuation { continuation in
            let ready = state.withLock { state -> Result<Head, HTTPError>? in
                if let head = state.head { return .success(head) }
                if case .failure(let error) = state.end { return .failure(error) }
                state.headWaiter = continuation
                return nil
            }
            if let ready { continuation.resume(with: ready) }
        }
    }

    /// The next chunk, `nil` at the end, or the failure that ended the stream.
    func next() async throws -> Data? {
        try await withCheckedThrowingContinuation { continuation in
            enum Ready { case chunk(Data, (@Sendable () -> Void)?), end(Result<Void, HTTPError>), wait }
            let ready = state.withLock { state -> Ready in
                if state.first < state.chunks.count {
                    let chunk = state.take()
                    var resume: (@Sendable () -> Void)?
                    if state.buffered <= limit / 2 {
                        resume = state.resume
                        state.resume = nil
                    }
                    return .chunk(chunk, resume)
                }
                if let end = state.end { return .end(end) }
                // Nothing waits, so no engine is held back either: it was let go when the buffer fell to half.
                state.consumer = continuation
                return .wait
            }
            switch ready {
            case .chunk(let chunk, let resume):
                resume?()
                continuation.resume(returning: chunk)
            case .end(.success): continuation.resume(returning: nil)
            case .end(.failure(let error)): continuation.resume(throwing: error)
            case .wait: break
            }
        }
    }

    /// The consumer stopped reading: drop what waits, and let a held engine go on (it is being cancelled).
    func abandon() {
        let resume = state.withLock { state -> (@Sendable () -> Void)? in
            state.abandoned = true
            state.chunks = []
            state.first = 0
            state.buffered = 0
            defer { state.resume = nil }
            return state.resume
        }
        resume?()
    }
}

extension StreamChannel.State {
    /// Takes the oldest chunk (the caller checked there is one).
    fileprivate mutating func take() -> Data {
        let chunk = chunks[first]
        chunks[first] = Data()
        first += 1
        buffered -= chunk.count
        if first == chunks.count || first >= 64 {
            chunks.removeFirst(first)
            first = 0
        }
        return chunk
    }
}
