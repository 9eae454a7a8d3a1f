import Foundation

/// One pass of a request over the network: the request as the engine sends it, and where a download's body goes.
struct Exchange {
    var engineRequest: EngineRequest
    let download: DownloadPlan?
}

extension Pipeline {
    /// The encode step: the prepared request as an engine sends it; a download gets its partial file and range.
    func encode(_ prepared: PreparedRequest, _ context: RequestContext) throws(HTTPError) -> Exchange {
        let (request, configuration, cancellation) = (prepared.request, context.configuration, context.cancellation)
        var engineRequest = try RequestEncoding.encode(
            request, urlIsPlain: prepared.urlIsPlain, defaults: configuration.sendingHeaders)
        // The center's limit, for a request that sets none (set here, not on the request: a limit of its own gives a
        // request a box for its rarely set fields).
        if engineRequest.maxResponseBytes == nil, let limit = configuration.maxResponseBytes {
            engineRequest.maxResponseBytes = limit
        }
        engineRequest.allowsInsecureRedirects = configuration.allowsInsecureRedirects
        if let policy = request.redirectPolicy ?? configuration.redirectPolicyIfSet {
            engineRequest.redirectPolicy = policy
        }
        engineRequest.forwardsSecretHeaders = configuration.forwardsSecretHeaders
        if let trust = configuration.trust {
            if let failure = trust.failure { throw failure.with(request: request) }
            engineRequest.trust = trust
        }
        engineRequest.cancellation = cancellation
        guard request.kind == .download, let url = engineRequest.url else {
            return Exchange(engineRequest: engineRequest, download: nil)
        }
        let download = try DownloadPlan(request, url: url)
        download.apply(to: &engineRequest)
        return Exchange(engineRequest: engineRequest, download: download)
    }

    /// The send step: the plugins' `adapt` (after encoding: signing) and `willSend`, then deduplication and the
    /// engine. A download that fails here keeps its partial file only when it is resumable.
    nonisolated(nonsending) func send(
        _ exchange: inout Exchange, _ request: Request, _ context: RequestContext
    ) async throws(HTTPError) -> Response {
        let (configuration, plugins, events) = (context.configuration, context.plugins, context.events)
        let progress = context.progress
        if !plugins.sending.isEmpty {
            do throws(HTTPError) {
                try await plugins.adapt(&exchange.engineRequest, for: request)
                // What the plugins changed is held to the rules encoding kept (every engine, a stub too).
                try exchange.engineRequest.checkBeforeSending()
            } catch {
                exchange.download?.interrupted()
                throw error.with(request: request)
            }
        }
        exchange.engineRequest.observesProgress = progress != nil
        if let events { exchange.engineRequest.onEvent = events.engineHandler(request) }
        let engineRequest = exchange.engineRequest
        if engineRequest.maxReceiveBytesPerSecond != nil || engineRequest.maxSendBytesPerSecond != nil,
            !configuration.engine.honoursRateLimits
        {
            exchange.download?.interrupted()
            throw HTTPError(
                .unsupported,
                "\(type(of: configuration.engine)) does not limit transfer speed "
                    + "(honoursRateLimits is false): the request has maxBytesPerSecond or maxUploadBytesPerSecond",
                request: request)
        }
        if !engineRequest.redirectPolicy.isDefault, !configuration.engine.honoursRedirectPolicy {
            exchange.download?.interrupted()
            throw HTTPError(
                .unsupported,
                "\(type(of: configuration.engine)) does not follow a redirect policy (honoursRedirectPolicy is "
                    + "false): the request has one other than .follow", request: request)
        }
        if case .some = engineRequest.hostTrustPolicy, !configuration.engine.honoursTrustPolicy {
            exchange.download?.interrupted()
            throw HTTPError(
                .unsupported,
                "\(type(of: configuration.engine)) does not apply trust policies (honoursTrustPolicy is false): "
                    + "\(engineRequest.url?.host ?? "the host") has one (\(engineRequest.trustPolicy))",
                request: request)
        }
        if engineRequest.receiver != nil, !configuration.engine.streamsResponses {
            throw HTTPError(
                .unsupported,
                "\(type(of: configuration.engine)) does not stream response bodies "
                    + "(streamsResponses is false)", request: request)
        }
        guard !engineRequest.isCancelled else {
            exchange.download?.interrupted()
            throw HTTPError(.cancelled, "the request was cancelled before it was sent", request: request)
        }
        let start = Moment.now
        let engineResponse: EngineResponse
        if !plugins.sending.isEmpty { await plugins.willSend(engineRequest, for: request) }
        events?.post(.sent(engineRequest), context.id, request)
        // Unwrapped, not `progress ?? { _ in }`: the generic `??` hands the closure back in its most general form,
        // and turning it into the engine's concrete one allocated a thunk for every request.
        let report: @Sendable (TransferProgress) -> Void
        if let progress { report = progress } else { report = Pipeline.ignoresProgress }
        do {
            let shared =
                request.deduplicate
                ?? (configuration.deduplicatesGETs
                    && (request.method == .get
                        || request.method == .head))
            if shared, request.kind == .data, engineRequest.receiver == nil, let key = InFlight.Key(engineRequest) {
                engineResponse = try await inFlight.perform(
                    engineRequest, key: key, engine: configuration.engine, progress: report)
            } else {
                engineResponse = try await configuration.engine.perform(engineRequest, progress: report)
            }
            // What an engine of someone else's may not have counted: the limit holds on every engine.
            if let limit = engineRequest.memoryLimit, engineResponse.fileLength == nil,
                Int64(engineResponse.body.count) > limit
            {
                throw HTTPError.responseTooLarge(limit: limit)
            }
        } catch {
            exchange.download?.interrupted()
            let failure = HTTPError.from(error, request: request)
            if !plugins.receiving.isEmpty { await plugins.didReceive(.failure(failure), for: request) }
            throw failure
        }
        let response = Response(engine: consume engineResponse, request: request, duration: Moment.now - start)
        if !plugins.receiving.isEmpty { await plugins.didReceive(.success(response), for: request) }
        return response
    }

    /// The send step for a request that waits first: for a usable network path (`waits`: at most its total
    /// timeout, else its idle one), then for a place under the center's limit of requests in flight
    /// (`maxRequestsInFlight`), given back when the engine is done. Both come before the plugins see the request go
    /// and before the engine's timeouts start; the place's wait is in the response's `TransferMetrics.queued`.
    ///
    /// Never inlined: its `is CancellationError` needs room of a size known only at run time, which `attempt` would
    /// allocate on every call.
    @inline(never)
    nonisolated(nonsending) func sendWhenReady(
        _ exchange: inout Exchange, _ request: Request, _ context: RequestContext, waits: Bool
    ) async throws(HTTPError) -> Response {
        let (id, engineRequest) = (request.id, exchange.engineRequest)
        if waits {
            do {
                try await Connectivity.shared.waitForUsablePath(
                    within: request.totalTimeout ?? request.timeout ?? .seconds(60),
                    cancellation: engineRequest.cancellation)
            } catch {
                exchange.download?.interrupted()
                throw error is CancellationError
                    ? HTTPError(.cancelled, "the request was cancelled while it waited for a network", request: request)
                    : HTTPError.from(error, request: request)
            }
        }
        guard let limit = context.configuration.maxRequestsInFlight else {
            return try await send(&exchange, request, context)
        }
        let (began, admission) = (Moment.now, registry.admission)
        do {
            try await engineRequest.withCancellationHandler {
                try await admission.admit(id, priority: request.priority, limit: limit) { engineRequest.isCancelled }
            } onCancel: {
                admission.cancel(id)
            }
        } catch {
            exchange.download?.interrupted()
            throw HTTPError(.cancelled, "the request was cancelled while it waited to be sent", request: request)
        }
        let queued = Moment.now - began
        defer { admission.release(limit: limit) }
        var response = try await send(&exchange, request, context)
        if var metrics = response.metrics {
            metrics.queued = queued
            response.metrics = metrics
        }
        return response
    }

    /// The progress handler an engine gets when nobody listens.
    static let ignoresProgress: @Sendable (TransferProgress) -> Void = { _ in }

    /// A download's last step: a complete, acceptable body moves to its destination. Returns `nil` when the pass
    /// should start over (`mayStartOver`): a `416` for a partial file that does not match, which is dropped.
    nonisolated(nonsending) func settle(
        _ download: DownloadPlan, _ response: Response, _ request: Request, _ context: RequestContext,
        mayStartOver: Bool
    ) async throws(HTTPError) -> Response? {
        var response = response
        if download.isComplete(after: response)
            || (acceptable(response, for: request, context.configuration) && response.status != 416)
        {
            // The file gets its final name only if no cancel came first, and once it has, no cancel undoes it: a
            // cancel of the request or of its task meanwhile is decided in the registry, under one lock, before or
            // after the rename, so the outcome always says whether the file is there.
            let id = context.id
            let placed: Result<URL, HTTPError> = await withTaskCancellationHandler {
                do throws(HTTPError) {
                    return .success(try await download.complete(response) { [registry] in registry.commit(id) })
                } catch {
                    return .failure(error)
                }
            } onCancel: { [registry] in
                _ = registry.cancel(id)
            }
            response.fileURL = try placed.get()
            return response
        }
        if response.status == 416 && mayStartOver && download.offset > 0 {
            download.discard()
            return nil
        }
        download.interrupted()
        return response
    }

    /// An endpoint's stub, served after its delay (on the center's clock) and marked as such.
    nonisolated(nonsending) func stubbed(
        _ reply: StubReply, _ engineRequest: EngineRequest, _ request: Request, _ context: RequestContext
    ) async throws(HTTPError) -> Response {
        let (configuration, cancellation) = (context.configuration, context.cancellation)
        do {
            if reply.delay > .zero {
                try await EngineCancellation.sleep(
                    for: reply.delay, on: configuration.clock, cancellation: cancellation)
            }
        } catch {
            throw HTTPError(.cancelled, "the request was cancelled", request: request)
        }
        if let error = reply.error { throw HTTPError.from(error, request: request) }
        var response = Response(
            request: request, status: reply.status, headers: reply.headers, url: engineRequest.url, data: reply.body)
        response.source = .stub
        return response
    }

}

extension Response {
    /// Builds a response from what an engine returned, before decoding. The engine's response is taken over: its
    /// fields move here rather than being copied.
    init(engine: consuming EngineResponse, request: consuming Request, duration: Duration) {
        let status = engine.status
        let (headers, address, data, metrics) = engine.take()
        self.init(
            request: request, status: status, headers: headers, address: address, data: data, duration: duration,
            metrics: metrics)
    }
}
