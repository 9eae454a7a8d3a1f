import Foundation
import Testing
@testable import Switchboard

/// Collects callback events from any thread, in the order they happened.
final class EventLog: Sendable {
    private let events = Locked<[String]>([])

    func record(_ event: String) {
        events.withLock { $0.append(event) }
    }

    var all: [String] { events.snapshot }
}

/// Everything the callbacks of one request reported.
struct Outcome: Sendable {
    var id: RequestID
    var events: [String]
    var result: Result<Response, HTTPError>

    var response: Response? { try? result.get() }

    var error: HTTPError? {
        if case .failure(let error) = result { error } else { nil }
    }
}

extension Center {
    /// Sends with every callback attached, waits for `onFinished`, then drains the callback queue so that any
    /// callback fired after it would be seen too.
    func sendRecording(
        _ configure: (inout Request) -> Void,
        afterSending: @Sendable (RequestID) -> Void = { _ in }
    ) async -> Outcome {
        let log = EventLog()
        let queue = callbackQueue(configuration)
        var sentID: RequestID?
        let result = await withCheckedContinuation {
            (continuation: CheckedContinuation<Result<Response, HTTPError>, Never>) in
            let id = send(configure) { _ in
                log.record("success")
            } onFailure: { error in
                log.record("failure:\(error.code)")
            } onFinished: { result in
                log.record("finished")
                continuation.resume(returning: result)
            } onProgress: { _ in
                log.record("progress")
            }
            sentID = id
            afterSending(id)
        }
        queue.sync(flags: .barrier) {}
        try? await Task.sleep(for: .milliseconds(20))
        queue.sync(flags: .barrier) {}
        return Outcome(id: sentID!, events: log.all.filter { $0 != "progress" }, result: result)
    }
}

extension Center {
    /// Sends with callbacks, cancels the request by identifier at the first progress report for which `cancelWhen`
    /// holds (and at any after it), and returns the outcome `onFinished` delivered. A cancel tied to progress, not to
    /// a delay, lands while the transfer runs however long a busy run keeps a task waiting.
    func sendCancelling(
        _ configure: (inout Request) -> Void, when cancelWhen: @escaping @Sendable (TransferProgress) -> Bool
    ) async -> Result<Response, HTTPError> {
        await withCheckedContinuation { (continuation: CheckedContinuation<Result<Response, HTTPError>, Never>) in
            let id = Locked<RequestID?>(nil)
            let newID = send(configure) {
                continuation.resume(returning: $0)
            } onProgress: { [self] progress in
                if cancelWhen(progress), let id = id.snapshot { cancel(id) }
            }
            id.withLock { $0 = newID }
        }
    }

    /// Sends with callbacks and returns the response with every progress report, in the order delivered.
    func sendCollectingProgress(
        _ configure: (inout Request) -> Void
    ) async throws -> (response: Response, progress: [TransferProgress]) {
        let reports = Locked<[TransferProgress]>([])
        let response = try await withCheckedThrowingContinuation {
            (continuation: CheckedContinuation<Response, any Error>) in
            send(configure) {
                continuation.resume(returning: $0)
            } onFailure: {
                continuation.resume(throwing: $0)
            } onProgress: { progress in
                reports.withLock { $0.append(progress) }
            }
        }
        return (response, reports.snapshot)
    }
}

/// A `StubEngine` center with a fixed server, for tests above the transport.
func stubCenter(
    _ stub: StubEngine = StubEngine(), _ configure: (inout Center.Configuration) -> Void = { _ in }
) -> (Center, StubEngine) {
    let center = testCenter { config in
        config.engine = stub
        config.server = "https://api.example.com/v1/"
        configure(&config)
    }
    return (center, stub)
}

/// An echo route: answers with the request's method, URL, headers and body as JSON.
func echoReply(_ request: EngineRequest) -> StubReply {
    var headers = JSON.Object()
    for (name, value) in request.urlRequest.allHTTPHeaderFields ?? [:] { headers[name] = .string(value) }
    var body = ""
    if case .data(let data) = request.body { body = String(decoding: data, as: UTF8.self) }
    return .json([
        "method": .string(request.method.rawValue),
        "url": .string(request.url?.absoluteString ?? ""),
        "headers": .object(headers),
        "body": .string(body),
    ])
}

/// Polls until a condition holds, instead of guessing how long a step takes. The limit only turns a hang into a
/// failure; it is generous because sanitizer builds run many times slower.
func waitUntil(
    _ condition: @Sendable () -> Bool, timeout: Duration = .seconds(60),
    sourceLocation: SourceLocation = #_sourceLocation
) async {
    let clock = ContinuousClock()
    let deadline = clock.now + timeout
    while !condition() {
        if clock.now > deadline {
            Issue.record("condition not met within \(timeout)", sourceLocation: sourceLocation)
            return
        }
        try? await Task.sleep(for: .milliseconds(2))
    }
}

/// A gate that async code waits on, not cancellable, until the test opens it.
final class Gate: Sendable {
    private let state = Locked<(open: Bool, waiters: [CheckedContinuation<Void, Never>])>((false, []))

    func wait() async {
        await withCheckedContinuation { continuation in
            let resumeNow = state.withLock { state -> Bool in
                if state.open { return true }
                state.waiters.append(continuation)
                return false
            }
            if resumeNow { continuation.resume() }
        }
    }

    func open() {
        let waiters = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            state.open = true
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in waiters { waiter.resume() }
    }
}

/// Everything the callbacks of one batch or chain reported.
struct GroupOutcome: Sendable {
    var id: RequestID
    var events: [String]
    var results: [Result<Response, HTTPError>]

    /// `ok` or the error code of each member, in member order.
    var summary: [String] {
        results.map { result in
            switch result {
            case .success: "ok"
            case .failure(let error): "\(error.code)"
            }
        }
    }
}

extension Center {
    /// Sends a batch or chain with every callback attached and waits for `onFinished`, then drains the queue.
    func groupRecording(
        batch configureBatch: ((inout BatchRequest) -> Void)? = nil,
        chain configureChain: ((inout ChainRequest) -> Void)? = nil,
        afterSending: @Sendable (RequestID) -> Void = { _ in }
    ) async -> GroupOutcome {
        let log = EventLog()
        let sent = Locked<RequestID?>(nil)
        let results = await withCheckedContinuation {
            (continuation: CheckedContinuation<[Result<Response, HTTPError>], Never>) in
            let onSuccess: @Sendable ([Response]) -> Void = { responses in log.record("success(\(responses.count))") }
            let onFailure: @Sendable ([Result<Response, HTTPError>]) -> Void = { results in
                log.record("failure(\(results.count))")
            }
            let onFinished: @Sendable ([Result<Response, HTTPError>]) -> Void = { results in
                log.record("finished")
                continuation.resume(returning: results)
            }
            let id =
                if let configureBatch {
                    sendBatch(configureBatch, onSuccess: onSuccess, onFailure: onFailure, onFinished: onFinished)
                } else {
                    sendChain(configureChain!, onSuccess: onSuccess, onFailure: onFailure, onFinished: onFinished)
                }
            sent.withLock { $0 = id }
            afterSending(id)
        }
        let queue = callbackQueue(configuration)
        queue.sync(flags: .barrier) {}
        try? await Task.sleep(for: .milliseconds(20))
        queue.sync(flags: .barrier) {}
        return GroupOutcome(id: sent.snapshot!, events: log.all, results: results)
    }
}
