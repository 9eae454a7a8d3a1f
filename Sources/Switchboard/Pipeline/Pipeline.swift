import Foundation

/// The request pipeline: the single async core behind every form of `send`, for requests, batch members, chain
/// steps and transfers alike.
///
/// Each attempt passes these steps, in order; any of them may end it with an `HTTPError`:
/// 1. **Prepare** (`PrepareStep.swift`): merge with the configuration, compose the URL, the plugins' `prepare`, the
///    `onRequest` hook, compose again; then the center's credentials, judged on that final URL (`CredentialScope`):
///    the authenticator's for its own origins, its origin-bound headers and secret parameters withheld elsewhere.
/// 2. **Encode** (`ExchangeStep.swift`): URL with query, method, headers and body as an `EngineRequest`; a
///    download's partial file and range.
/// 3. **Cache** (`CacheStep`): answer from the cache, or for `.cacheThenNetwork` send the cached response out first
///    and go on. A stream skips it, and its engine request carries the stream's `BodyReceiver`.
/// 4. **Send** (`ExchangeStep.swift`): the plugins' `adapt` (signing), the console log, deduplication, the engine.
/// 5. **Respond** (`ResponseStep.swift`): validate the status, decode, the `onResponse` hook, `validate`. A stream
///    that opened validated its head as it arrived and ends here, its body read by its consumer.
///
/// Around the attempts, `run` refreshes the authenticator's credential (once, and replays, when the center's own
/// origin refused it), the
/// retry policy and the plugins' retry decisions, the plugins' `process`, cancellation by identifier and the
/// `onError` hook.
struct Pipeline: Sendable {
    /// The work in flight by identifier: where a request records how far it got, and learns at its end whether it
    /// was cancelled.
    let registry: Registry
    /// The `GET`s in flight, for deduplication (`deduplicatesGETs`).
    let inFlight: InFlight
    /// What the authenticator's refresh sends its own requests through: the center, which the policy layer does not
    /// name.
    let owner: any AnyObject & Sendable
}

extension Pipeline {
    /// Runs one request to its final outcome.
    ///
    /// The request must have been registered by the launcher. On return it has been removed from the registry; a
    /// cancel that was requested before that makes the outcome `.cancelled`, whatever the transfer did, unless the
    /// work had committed first (a download gives its file its final name only if no cancel came before).
    ///
    /// The outcomes come in order: for `.cacheThenNetwork`, the cached response (when there is one) goes to
    /// `interim` as soon as the cache step finds it, and the network's outcome is returned.
    ///
    /// It runs where its caller runs (`nonisolated(nonsending)`): every caller is already off any actor (a task of
    /// the launcher's, `Launched.value()` in its caller's task, a group's member runner), and calling a `@concurrent` function switches executors
    /// once more per request, which costs most in a task with an executor preference (the callback forms run on the
    /// center's private queue), where each switch looks the preference up under the task's lock.
    nonisolated(nonsending) func run(
        _ request: Request,
        _ configuration: CenterConfiguration,
        progress: (@Sendable (TransferProgress) -> Void)?,
        interim: (@Sendable (Response) -> Void)? = nil,
        cancellation: EngineCancellation? = nil,
        stream: StreamChannel? = nil
    ) async -> Result<Response, HTTPError> {
        let context = RequestContext(
            request, configuration, progress: progress, cancellation: cancellation, stream: stream)
        let (id, plugins) = (context.id, context.plugins)
        // A refused credential refreshes only when the URL that refused it is one of the center's origins too. The
        // idempotency key is made at the first attempt that needs it and sent with every attempt after it.
        let (authenticator, events, log) = (context.authenticator, context.events, context.log)
        func isCancelled() -> Bool { context.isCancelled }
        // Looked up at the first failure: a request that succeeds at once never needs it.
        var policy: RetryPolicy?
        var current = request
        var result: Result<Response, HTTPError>
        var attempt = 1
        var idempotencyKey: String?
        events?.post(RequestEvent(id: id, kind: .created, request: request))
        var replayedAfterRefresh = false
        while true {
            current = request
            var generation: UInt64?
            do {
                var response = try await self.attempt(
                    &current, context, generation: &generation, idempotencyKey: &idempotencyKey,
                    interim: attempt == 1 ? interim : nil)
                response.attempts = attempt
                result = .success(consume response)
                break
            } catch {
                var error = error
                error.response?.attempts = attempt
                result = .failure(error)
                // A stream whose body has begun is never sent again: its consumer may have read some of it.
                if stream?.hasOpened == true { break }
                if let authenticator, let generation, !replayedAfterRefresh, !isCancelled(),
                    authenticator.refused(error),
                    configuration.credentialScope.covers(error.response?.address.text ?? current.url)
                {
                    // The credential was refused: one refresh for everyone who found it stale, then send again once.
                    replayedAfterRefresh = true
                    log?.refresh(error, request: current)
                    do {
                        try await authenticator.refresh(after: generation, owner: owner)
                        events?.post(
                            RequestEvent(
                                id: id, kind: .retried(attempt: attempt, error: error, delay: .zero), request: current))
                        continue
                    } catch {
                        result = .failure(error.with(request: current))
                        break
                    }
                }
                guard !isCancelled() else { break }
                let retry = policy ?? request.retryPolicy(in: configuration)
                policy = retry
                // A request that carries its idempotency key may be retried whatever its method.
                let keyed = context.keyHeader.map { current.headers[$0] != nil } ?? false
                var delay = retry.delay(after: attempt, for: error, method: current.method, keyed: keyed)
                if delay == nil, !plugins.isEmpty {
                    delay = await plugins.retryDelay(after: error, attempt: attempt, for: current)
                }
                guard let delay else { break }
                log?.retry(error, request: current, attempt: attempt, of: retry.maxAttempts, after: delay)
                events?.post(
                    RequestEvent(id: id, kind: .retried(attempt: attempt, error: error, delay: delay), request: current)
                )
                do {
                    try await EngineCancellation.sleep(for: delay, on: configuration.clock, cancellation: cancellation)
                } catch {
                    break
                }
                attempt += 1
            }
        }
        if !plugins.isEmpty { result = await plugins.process(result, for: current) }
        let cancelled =
            switch registry.finishing(id) {
            case .cancelled: true
            // A download whose file is in place ends with it, even if its task was cancelled after that.
            case .committed: false
            case .finished: isCancelled()
            }
        if cancelled, result.failureCode != .cancelled {
            result = .failure(HTTPError(.cancelled, "the request was cancelled", request: current))
        }
        if case .failure(let error) = result {
            log?.error(error, request: current)
            if let onError = configuration.onError { result = .failure(await onError(current, error)) }
        }
        if let events {
            // Every event of the request is observed before its outcome goes out.
            let kind: RequestEvent.Kind = result.failureCode == .cancelled ? .cancelled : .finished(result)
            await events.deliver(RequestEvent(id: id, kind: kind, request: current))
        }
        return result
    }

    /// One attempt through the steps. `request` is left as far as the steps got, for the error report;
    /// `generation` is the authenticator's credential's, when one was put on; `idempotencyKey` is made by the first
    /// attempt that needs one.
    nonisolated(nonsending) private func attempt(
        _ request: inout Request, _ context: RequestContext, generation: inout UInt64?,
        idempotencyKey: inout String?, interim: (@Sendable (Response) -> Void)?
    ) async throws(HTTPError) -> Response {
        let (configuration, log, stream) = (context.configuration, context.log, context.stream)
        let prepared = try await prepare(&request, context, generation: &generation, idempotencyKey: &idempotencyKey)
        registry.update(prepared.id, .single(request))
        // A partial file that turns out not to match (a 416 short of the end) is dropped once, and the download
        // starts again from zero; `settle` never asks twice.
        var mayStartOver = true
        while true {
            var exchange = try encode(prepared, context)
            // A resumable download's partial file is its own until the pass ends (see `DownloadPlan.claim`).
            defer { exchange.download?.release() }
            if request.kind == .data, let reply = request.endpointStub, configuration.usesEndpointStubs {
                let stubbed = try await stubbed(reply, exchange.engineRequest, request, context)
                return try await postProcess(stubbed, request, context)
            }
            if let stream {
                // Taken as 1 byte, any other value failed the stream at its first line ("longer than 1 bytes").
                guard request.streamBufferSize >= 1 else {
                    throw HTTPError(
                        .encoding,
                        "streamBufferSize is \(request.streamBufferSize); a stream holds at least 1 byte for its "
                            + "reader. Nothing was sent", request: request)
                }
                exchange.engineRequest.receiver = BodyReceiver(stream)
            }
            // Without a cache nothing is looked up (nor the engine request copied for it).
            let cache =
                stream != nil || configuration.cache == nil
                ? nil
                : CacheStep(request: request, engineRequest: exchange.engineRequest, configuration: configuration)
            if let cached = try cache?.beforeNetwork() {
                guard request.cachePolicy == .cacheThenNetwork else {
                    return try await postProcess(cached, request, context)
                }
                // The first of two outcomes: the cached response, through the same response steps (a failure
                // there only means there is no first outcome; the network's is the one that counts).
                if let interim, let processed = try? await postProcess(cached, request, context) {
                    interim(processed)
                }
            }
            cache?.addValidators(to: &exchange.engineRequest)
            var response = try await send(&exchange, request, context)
            if let stream, stream.hasOpened {
                // The head was validated when it arrived, and the body went to the stream's reader.
                log?.response(response, streamed: stream.received)
                return response
            }
            if let store = configuration.cache {
                CacheStep.invalidate(
                    after: response, method: exchange.engineRequest.method, url: exchange.engineRequest.url, in: store)
            }
            if let cache { response = cache.afterNetwork(response) }
            if let download = exchange.download {
                let settled = try await settle(download, response, request, context, mayStartOver: mayStartOver)
                guard let settled else {
                    mayStartOver = false
                    continue
                }
                response = settled
            }
            return try await postProcess(consume response, request, context)
        }
    }
}

extension Result where Failure == HTTPError {
    /// The error code, when this is a failure.
    var failureCode: HTTPError.Code? {
        if case .failure(let error) = self { error.code } else { nil }
    }
}

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
