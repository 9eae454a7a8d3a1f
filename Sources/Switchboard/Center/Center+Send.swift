import Foundation

extension Center {
    // MARK: - Callbacks

    /// Sends a request configured by a closure, and reports the outcome through callbacks.
    ///
    /// ```swift
    /// let id = center.send { request in
    ///     request.api = "users"
    ///     request.method = .post
    ///     request.parameters = ["name": "Ada"]
    /// } onSuccess: { response in
    ///     print(response.json ?? "empty")
    /// } onFailure: { error in
    ///     print(error)
    /// }
    /// ```
    ///
    /// Every callback runs on the request's `callbackQueue`, else the configuration's (a private queue when both are
    /// `nil`), at most once: `onSuccess` then `onFinished`, or `onFailure` then `onFinished`. `onProgress` runs
    /// before them, in order. If `onSuccess` throws, for example because `decode(_:)` failed, the error is reported
    /// through `onFailure` and `onFinished` as the outcome of the request, with the response: an `HTTPError` as it is,
    /// a `DecodingError` as `.decoding`, any other error as `.business`.
    ///
    /// The callback form needs `onSuccess`, or else `onFailure` or `onFinished` alone: without a callback,
    /// `send { ... }` is the `async` form, which returns the response. `onProgress` comes last, so a closure after
    /// `send(configure)` without a label is `onSuccess`, never a progress report.
    ///
    /// - Returns: the identifier, which can cancel the request or look it up while it runs.
    @discardableResult
    public func send(
        _ configure: (inout Request) -> Void,
        onSuccess: @escaping @Sendable (Response) throws -> Void,
        onFailure: (@Sendable (HTTPError) -> Void)? = nil,
        onFinished: (@Sendable (Result<Response, HTTPError>) -> Void)? = nil,
        onProgress: (@Sendable (TransferProgress) -> Void)? = nil
    ) -> RequestID {
        send(
            configure,
            SingleCallbacks(
                onProgress: onProgress, onSuccess: onSuccess, onFailure: onFailure, onFinished: onFinished))
    }

    /// Sends a request configured by a closure, and reports a failure through `onFailure`.
    ///
    /// The same as the form with `onSuccess`, for callers who only act when the request fails. To hear both
    /// outcomes, give `onSuccess` as well, or use `onFinished` alone.
    @discardableResult
    public func send(
        _ configure: (inout Request) -> Void,
        onFailure: @escaping @Sendable (HTTPError) -> Void,
        onProgress: (@Sendable (TransferProgress) -> Void)? = nil
    ) -> RequestID {
        send(configure, SingleCallbacks(onProgress: onProgress, onFailure: onFailure))
    }

    /// Sends a request configured by a closure, and reports its outcome to `onFinished`, once.
    ///
    /// The same as the form with `onSuccess`, for callers who handle both outcomes in one place.
    @discardableResult
    public func send(
        _ configure: (inout Request) -> Void,
        onFinished: @escaping @Sendable (Result<Response, HTTPError>) -> Void,
        onProgress: (@Sendable (TransferProgress) -> Void)? = nil
    ) -> RequestID {
        send(configure, SingleCallbacks(onProgress: onProgress, onFinished: onFinished))
    }

    /// The callback forms' common path.
    func send(_ configure: (inout Request) -> Void, _ callbacks: SingleCallbacks) -> RequestID {
        let (request, _) = configured(configure)
        start(request, callbacks: callbacks, registration: .new)
        return request.id
    }

    /// Runs a numbered request and delivers its outcome to callbacks; `retry` uses it too, with `then` to hear the
    /// outcome after the callbacks.
    func start(
        _ request: Request, callbacks: SingleCallbacks, registration: Launcher.Registration,
        then: (@Sendable (Result<Response, HTTPError>) -> Void)? = nil
    ) {
        let configuration = configuration
        // `.cacheThenNetwork`: the cached response reaches `onSuccess` first (an error it throws is ignored: the
        // outcome is the network's), in order, on a serial queue even when the callback queue is concurrent.
        let twoOutcomes = request.cachePolicy == .cacheThenNetwork
        let (queue, relay) = delivery(
            request.scope.callbackQueue, configuration, onProgress: callbacks.onProgress, ordered: twoOutcomes)
        var interim: (@Sendable (Response) -> Void)?
        if twoOutcomes {
            interim = { @Sendable response in queue.async { try? callbacks.onSuccess?(response) } }
        }
        // Stopped through a signal of its own when the engine honours one (as an `async` request in its caller's task
        // is), else through its task, attached to the registry.
        let plan = Launcher.Plan(
            bySignal: Center.stopsBySignal(request, configuration), registration: registration,
            detached: true)
        // Merged and composed before it is registered, when nothing later needs it as written (`prepareEarly`).
        var sent = request
        Pipeline.prepareEarly(&sent, configuration)
        let body = CallbackRun(
            pipeline: pipeline, request: sent, written: request, configuration: configuration, callbacks: callbacks,
            queue: queue, relay: relay, interim: interim, then: then)
        _ = launcher.launch(.single(sent), plan, body)
    }

    /// The queue that delivers a request's or group's callbacks (its own `callbackQueue`, else the configuration's),
    /// and the relay for its progress reports.
    ///
    /// With progress, or when more than one callback must arrive in order (`ordered`), a serial queue of its own
    /// (targeting the callback queue) keeps them in order, even when the callback queue is concurrent (the
    /// center's private queue is).
    func delivery(
        _ own: DispatchQueue?, _ configuration: Configuration, onProgress: (@Sendable (TransferProgress) -> Void)?,
        ordered: Bool = false
    ) -> (DispatchQueue, ProgressRelay?) {
        let queue = own ?? callbackQueue(configuration)
        guard onProgress != nil || ordered else { return (queue, nil) }
        let serial = DispatchQueue(label: "Switchboard.delivery", target: queue)
        return (serial, onProgress.map { ProgressRelay(queue: serial, handler: $0) })
    }

    // MARK: - async/await

    /// Sends a request configured by a closure and returns its response.
    ///
    /// ```swift
    /// let response = try await center.send { $0.api = "users/1" }
    /// ```
    ///
    /// Cancelling the calling task cancels the transfer; the call then throws `HTTPError` with code `.cancelled`.
    ///
    /// The closure runs at once, in the caller's isolation (a `@MainActor` view model can read its own state in
    /// it); the transfer then runs off the caller's actor.
    ///
    /// - Throws: `HTTPError`, after the `onError` hook mapped it.
    @discardableResult
    nonisolated(nonsending) public func send(_ configure: (inout Request) -> Void) async throws(HTTPError) -> Response {
        var (request, configuration) = configured(configure)
        Pipeline.prepareEarly(&request, configuration)
        // In the caller's task when the engine stops on the request's signal; otherwise in a task of its own, so that
        // `cancel(id)` cancels it and not the caller.
        let body = PipelineRun(pipeline: pipeline, request: request, configuration: configuration)
        return try await launcher.run(.single(request), bySignal: Center.stopsBySignal(request, configuration), body)
            .get()
    }

    /// Whether a request stops on its own signal (so that an `async` one can run in its caller's task): its engine
    /// stops when cancelled by identifier, and it is not shared with identical requests (a shared exchange is
    /// cancelled through its waiters' tasks).
    static func stopsBySignal(_ request: Request, _ configuration: Configuration) -> Bool {
        configuration.engineHonoursCancellation && request.deduplicate != true
            && !(request.deduplicate == nil && configuration.deduplicatesGETs)
    }

    /// Sends a request and yields its responses: one, or for `.cacheThenNetwork` the cached one (when there is one)
    /// and then the network's. The stream throws the request's error; ending the iteration cancels the request.
    ///
    /// ```swift
    /// for try await response in center.responses({ $0.api = "feed"; $0.cachePolicy = .cacheThenNetwork }) {
    ///     show(response.json, stale: response.source == .cache)
    /// }
    /// ```
    public func responses(_ configure: (inout Request) -> Void) -> AsyncThrowingStream<Response, any Error> {
        let (request, configuration) = configured(configure)
        let (stream, continuation) = AsyncThrowingStream<Response, any Error>.makeStream()
        let pipeline = pipeline
        let launched = launcher.launch(.single(request), Launcher.Plan(bySignal: false)) { _ in
            let result = await pipeline.run(request, configuration, progress: nil) { continuation.yield($0) }
            switch result {
            case .success(let response):
                continuation.yield(response)
                continuation.finish()
            case .failure(let error):
                continuation.finish(throwing: error)
            }
        }
        continuation.onTermination = { _ in launched.cancel() }
        return stream
    }

    /// Sends a request and decodes its JSON body as `T`.
    ///
    /// ```swift
    /// let user = try await center.send(User.self) { $0.api = "users/1" }
    /// ```
    ///
    /// - Throws: `HTTPError`; a body that does not decode as `T` gives `.decoding`.
    @discardableResult
    nonisolated(nonsending) public func send<T: Decodable>(
        _ type: T.Type,
        decoder: @Sendable () -> JSONDecoder = { JSONDecoder() },
        _ configure: (inout Request) -> Void
    ) async throws(HTTPError) -> T {
        try await send(configure).decode(T.self, using: decoder())
    }
}

/// One request through the pipeline, to its outcome, with no progress to report: what an `async` send launches.
struct PipelineRun: WorkBody {
    let pipeline: Pipeline
    let request: Request
    let configuration: CenterConfiguration

    nonisolated(nonsending) func run(_ signal: EngineCancellation?) async -> Result<Response, HTTPError> {
        await pipeline.run(request, configuration, progress: nil, cancellation: signal)
    }
}

/// One request through the pipeline, its outcome delivered to callbacks on `queue`: what the callback forms launch.
/// A value, so that the task's operation is the one closure made for it.
struct CallbackRun: WorkBody {
    let pipeline: Pipeline
    let request: Request
    /// The request as it was written: what a failure leaves for `retry`, to merge again with the configuration of
    /// that time.
    let written: Request
    let configuration: CenterConfiguration
    let callbacks: SingleCallbacks
    let queue: DispatchQueue
    let relay: ProgressRelay?
    let interim: (@Sendable (Response) -> Void)?
    /// Hears the outcome after the callbacks (a retry's caller).
    let then: (@Sendable (Result<Response, HTTPError>) -> Void)?

    nonisolated(nonsending) func run(_ signal: EngineCancellation?) async {
        let result = await pipeline.run(
            request, configuration, progress: relay?.report, interim: interim, cancellation: signal)
        relay?.finish()
        // Remembered with the idempotency key its attempts sent, if one was made: a retry is the same operation.
        let key = result.sentIdempotencyKey(configuration)
        pipeline.registry.remember(
            request.id, failure: result.isSuccess ? nil : .single(written.carrying(key)),
            limit: configuration.retainedFailures)
        queue.async { [callbacks, then] in
            let outcome = callbacks.deliver(result)
            then?(outcome)
        }
    }
}
