import Foundation

/// The request pipeline: the single async core behind every form of `send`, for requests, batch members, chain
/// steps and transfers alike.
///
/// Each attempt passes these steps, in order; any of them may end it with an `HTTPError`:
/// 1. **Prepare** (`PrepareStep.swift`): merge with the configuration, compose the URL, the plugins' `prepare`, the
///    `onRequest` hook, compose again; then the center's credentials, judged on that final URL (`CredentialScope`):
///    the authenticator's (`CredentialPlugin`) for its own origins, its origin-bound headers and secret parameters
///    withheld elsewhere. An `async` send whose request no plugin, hook, credential or log needs as written has it
///    merged and composed before it is registered (`prepareEarly`), in its own box, which the later steps share.
/// 2. **Encode** (`ExchangeStep.swift`): URL with query, method, headers and body as an `EngineRequest`; a
///    download's partial file and range.
/// 3. **Cache** (`CacheStep`): answer from the cache, or for `.cacheThenNetwork` send the cached response out first
///    and go on. A stream skips it, and its engine request carries the stream's `BodyReceiver`.
/// 4. **Send** (`ExchangeStep.swift`): when asked, a wait for a usable network path and for a place under the
///    center's limit (`sendWhenReady`); the plugins' `adapt` (signing) and `willSend`, deduplication, the engine.
/// 5. **Respond** (`ResponseStep.swift`): validate the status, decode, the plugins' `respond` (`onResponse` first),
///    `validate`. A stream that opened validated its head as it arrived and ends here, its body read by its consumer.
///
/// Around the attempts, `run` asks the chain's `retryDelay` after each failure (the credential's refresh, the retry
/// policy, the app's plugins: `PluginChain`), decides cancellation by identifier, and passes the outcome through the
/// chain's `process` (`onError` first) and to the observers (the console log among them).
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
    /// the launcher's, `Launcher.run` in its caller's task, a group's member runner), and a `@concurrent`
    /// function would switch executors once more per request.
    nonisolated(nonsending) func run(
        _ request: Request,
        _ configuration: CenterConfiguration,
        progress: (@Sendable (TransferProgress) -> Void)?,
        interim: (@Sendable (Response) -> Void)? = nil,
        cancellation: EngineCancellation? = nil,
        stream: StreamChannel? = nil
    ) async -> Result<Response, HTTPError> {
        let context = RequestContext(
            request, configuration, owner: owner, progress: progress, cancellation: cancellation, stream: stream)
        let (id, plugins, events) = (context.id, context.plugins, context.events)
        var current = request
        var result: Result<Response, HTTPError>
        var attempt = 1
        var idempotencyKey: String?
        events?.post(.created, id, request)
        while true {
            current = request
            do {
                var response = try await self.attempt(
                    &current, context, idempotencyKey: &idempotencyKey, interim: attempt == 1 ? interim : nil)
                response.attempts = attempt
                result = .success(consume response)
                break
            } catch {
                var error = error
                error.response?.attempts = attempt
                result = .failure(error)
                // A stream whose body has begun is never sent again: its consumer may have read some of it.
                if stream?.hasOpened == true || context.isCancelled { break }
                // The credential (a refresh after a refusal), the retry policy, then the app's plugins.
                guard let delay = await plugins.retryDelay(after: error, attempt: attempt, for: current) else { break }
                events?.post(.retried(attempt: attempt, error: error, delay: delay), id, current)
                do {
                    try await EngineCancellation.sleep(for: delay, on: configuration.clock, cancellation: cancellation)
                } catch {
                    break
                }
                attempt += 1
            }
        }
        let cancelled =
            switch registry.finishing(id) {
            case .cancelled: true
            // A download whose file is in place ends with it, even if its task was cancelled after that.
            case .committed: false
            case .finished: context.isCancelled
            }
        if cancelled, result.failureCode != .cancelled {
            result = .failure(HTTPError(.cancelled, "the request was cancelled", request: current))
        }
        if !plugins.processing.isEmpty {
            result = await plugins.process(result, for: current)
            // A cancelled request ends in a failure, whatever a plugin made of it.
            if cancelled, case .success = result {
                result = .failure(HTTPError(.cancelled, "the request was cancelled", request: current))
            }
        }
        if let events {
            // Every event of the request is observed before its outcome goes out.
            let kind: RequestEvent.Kind = result.failureCode == .cancelled ? .cancelled : .finished(result)
            await events.deliver(kind, id, current)
        }
        return result
    }

    /// One attempt through the steps. `request` is left as far as the steps got, for the error report;
    /// `idempotencyKey` is made by the first attempt that needs one.
    nonisolated(nonsending) private func attempt(
        _ request: inout Request, _ context: RequestContext, idempotencyKey: inout String?,
        interim: (@Sendable (Response) -> Void)?
    ) async throws(HTTPError) -> Response {
        let (configuration, stream) = (context.configuration, context.stream)
        let prepared: PreparedRequest
        if let early = try Self.preparedEarly(&request, context, idempotencyKey: &idempotencyKey) {
            prepared = early
        } else {
            prepared = try await prepare(&request, context, idempotencyKey: &idempotencyKey)
        }
        if prepared.changed { registry.update(prepared.id, .single(request)) }
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
            var response: Response
            let waits = request.waitsForConnectivity ?? configuration.waitsForConnectivity
            if waits || configuration.maxRequestsInFlight != nil {
                response = try await sendWhenReady(&exchange, request, context, waits: waits)
            } else {
                response = try await send(&exchange, request, context)
            }
            if let stream, stream.hasOpened {
                // The head was validated when it arrived, and the body went to the stream's reader.
                response.streamedBytes = stream.received
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
            if context.plugins.responding.isEmpty { return try processed(consume response, request, context) }
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
