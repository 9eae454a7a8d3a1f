import Foundation

extension Center {
    /// Runs one request to its final outcome: the single async core behind every form of `send`.
    ///
    /// The request must have been registered by `prepare`. On return it has been removed from the registry; a
    /// cancel that was requested before that makes the outcome `.cancelled`, whatever the transfer did.
    func run(
        _ request: Request,
        _ configuration: Configuration,
        progress: (@Sendable (TransferProgress) -> Void)?,
        early: (@Sendable (Response) -> Void)? = nil,
        cancellation: EngineCancellation? = nil
    ) async -> Result<Response, HTTPError> {
        let id = request.id!
        let isCancelled = { @Sendable in Task.isCancelled || cancellation?.isCancelled == true }
        let log = configuration.consoleLog ? ConsoleLog(configuration.consoleLogHandler, secretNames: configuration.consoleLogSecretNames) : nil
        let policy = request.retryPolicy(in: configuration)
        var current = request
        var result: Result<Response, HTTPError>
        var attempt = 1
        let authenticator = request.usesAuthenticator ? configuration.authenticator : nil
        let plugins = PluginChain(request, configuration)
        var replayedAfterRefresh = false
        while true {
            current = request
            var generation: UInt64?
            do {
                if let authenticator { generation = try await authenticator.authenticate(&current, center: self) }
                var response = try await exchange(
                    &current, configuration, plugins, progress: progress, log: log,
                    early: attempt == 1 ? early : nil, cancellation: cancellation)
                response.attempts = attempt
                result = .success(response)
                break
            } catch {
                var error = error
                error.response?.attempts = attempt
                result = .failure(error)
                if let authenticator, let generation, !replayedAfterRefresh, !isCancelled(),
                   authenticator.refused(error) {
                    // The credential was refused: one refresh for everyone who found it stale, then send again once.
                    replayedAfterRefresh = true
                    do {
                        try await authenticator.refresh(after: generation, center: self)
                        continue
                    } catch {
                        result = .failure(error.with(request: current))
                        break
                    }
                }
                guard !isCancelled() else { break }
                var delay = policy.delay(after: attempt, for: error, method: current.method)
                if delay == nil, !plugins.isEmpty {
                    delay = await plugins.retryDelay(after: error, attempt: attempt, for: current)
                }
                guard let delay else { break }
                log?.retry(error, attempt: attempt, of: policy.maxAttempts, after: delay)
                do {
                    try await Center.sleep(for: delay, on: configuration.clock, cancellation: cancellation)
                } catch {
                    break
                }
                attempt += 1
            }
        }
        if !plugins.isEmpty { result = await plugins.process(result, for: current) }
        let cancelled = registry.finish(id) || isCancelled()
        if cancelled, result.failureCode != .cancelled {
            result = .failure(HTTPError(.cancelled, "the request was cancelled", request: current))
        }
        guard case .failure(let error) = result else { return result }
        log?.error(error, request: current)
        guard let onError = configuration.onError else { return result }
        return .failure(await onError(current, error))
    }

    /// Merge, compose, hook, encode, transfer, validate, decode, hook: each step may end the request with an error.
    private func exchange(
        _ request: inout Request,
        _ configuration: Configuration,
        _ plugins: PluginChain,
        progress: (@Sendable (TransferProgress) -> Void)?,
        log: ConsoleLog?,
        early: (@Sendable (Response) -> Void)?,
        cancellation: EngineCancellation?
    ) async throws(HTTPError) -> Response {
        let id = request.id
        let own = request
        request = request.merged(with: configuration)
        if request.kind == .upload && request.method == .get {
            // An upload carries a body, which a GET cannot: left at the default, the method becomes POST.
            request.method = .post
        }
        let composed = try URLComposition.compose(request)
        request.url = composed
        if configuration.onRequest != nil || !plugins.isEmpty {
            let before = request
            do throws(HTTPError) {
                try await plugins.prepare(&request)
            } catch {
                request.id = id
                throw error
            }
            if let onRequest = configuration.onRequest {
                do {
                    try await onRequest(&request)
                } catch {
                    request.id = id
                    throw Center.hookError(error, default: .vetoed, "the onRequest hook refused the request", request)
                }
            }
            request.id = id
            if request.url == composed {
                // No URL of their own: a new node (or general-server choice) picks its server again, and
                // a new `api` or server is composed again, as if the request had been written that way.
                if request.server == before.server,
                   request.node != before.node || request.useGeneralServer != before.useGeneralServer {
                    var resolved = request
                    resolved.server = own.server
                    request.server = resolved.server(in: configuration)
                }
                if request.api != before.api || request.server != before.server { request.url = own.url }
            }
            request.url = try URLComposition.compose(request)
        }
        registry.update(id!, .single(request))
        let current = request
        let response = try await transfer(
            request, configuration, plugins, progress: progress, log: log, cancellation: cancellation
        ) { cached in
            // `.cacheThenNetwork`: the cached response goes through the same steps and out first.
            guard let early, let processed = try? await self.postProcess(cached, current, configuration, log: log)
            else { return }
            early(processed)
        }
        return try await postProcess(response, request, configuration, log: log)
    }

    /// Validate, decode, hook: what every response goes through, from the network, the cache or a stub.
    private func postProcess(
        _ response: Response, _ request: Request, _ configuration: Configuration, log: ConsoleLog?
    ) async throws(HTTPError) -> Response {
        var response = response
        guard response.fileURL != nil || acceptable(response, for: request) else {
            let reason = HTTPURLResponse.localizedString(forStatusCode: response.status)
            throw HTTPError(.unacceptableStatus, "the server answered \(response.status) \(reason)",
                            request: request, response: response)
        }
        if request.kind != .download {
            response.value = try ResponseDecoding.decode(response)
        }
        if let onResponse = configuration.onResponse {
            do {
                response = try await onResponse(request, response)
            } catch {
                throw Center.hookError(error, default: .business, "the onResponse hook rejected the response",
                                       request, response: response)
            }
        }
        if let validate = request.validate {
            do {
                response = try validate(response)
            } catch {
                throw Center.hookError(error, default: .business, "the response did not pass validation",
                                       request, response: response)
            }
        }
        log?.response(response)
        return response
    }

    private func acceptable(_ response: Response, for request: Request) -> Bool {
        request.acceptableStatusCodes?.contains(response.status) ?? response.isSuccessful
    }

    /// Encodes the request and runs it on the engine; a download's body goes to its partial file and, when complete
    /// and acceptable, to its destination. Temporary files made for the exchange are gone when this returns.
    private func transfer(
        _ request: Request, _ configuration: Configuration, _ plugins: PluginChain,
        progress: (@Sendable (TransferProgress) -> Void)?,
        log: ConsoleLog?, cancellation: EngineCancellation?, cachedFirst: @Sendable (Response) async -> Void
    ) async throws(HTTPError) -> Response {
        // A partial file that turns out not to match (a 416 short of the end) is dropped once, and the download
        // starts again from zero.
        for pass in 1...2 {
            var engineRequest = try RequestEncoding.encode(request)
            engineRequest.allowsInsecureRedirects = configuration.allowsInsecureRedirects
            engineRequest.cancellation = cancellation
            defer { for file in engineRequest.temporaryFiles { try? FileManager.default.removeItem(at: file) } }
            var download: DownloadPlan?
            if request.kind == .download {
                download = try DownloadPlan(request, url: engineRequest.url!)
                download!.apply(to: &engineRequest)
            }
            if request.kind == .data, let reply = request.endpointStub, configuration.usesEndpointStubs {
                return try await stubbed(reply, engineRequest, request, configuration, cancellation)
            }
            let cache = CacheStep(request: request, engineRequest: engineRequest, configuration: configuration)
            if let cached = try cache?.beforeNetwork() {
                if request.cachePolicy == .cacheThenNetwork {
                    await cachedFirst(cached)
                } else {
                    return cached
                }
            }
            cache?.addValidators(to: &engineRequest)
            if !plugins.isEmpty {
                do throws(HTTPError) {
                    try await plugins.adapt(&engineRequest, for: request)
                } catch {
                    download?.interrupted()
                    throw error
                }
            }
            log?.request(request, engineRequest)
            guard !engineRequest.isCancelled else {
                download?.interrupted()
                throw HTTPError(.cancelled, "the request was cancelled before it was sent", request: request)
            }
            let start = ContinuousClock.now
            let engineResponse: EngineResponse
            if !plugins.isEmpty { await plugins.willSend(engineRequest, for: request) }
            do {
                let shared = request.deduplicate ?? (configuration.deduplicatesGETs && (request.method == .get
                    || request.method == .head))
                if shared, request.kind == .data, let key = InFlight.Key(engineRequest) {
                    engineResponse = try await inFlight.perform(
                        engineRequest, key: key, engine: configuration.engine, progress: progress ?? { _ in })
                } else {
                    engineResponse = try await configuration.engine.perform(engineRequest, progress: progress ?? { _ in })
                }
            } catch {
                download?.interrupted()
                let failure = HTTPError.from(error, request: request)
                if !plugins.isEmpty { await plugins.didReceive(.failure(failure), for: request) }
                throw failure
            }
            var response = Response(engine: engineResponse, request: request, duration: .now - start)
            if !plugins.isEmpty { await plugins.didReceive(.success(response), for: request) }
            if let cache { response = cache.afterNetwork(response) }
            guard let download else { return response }
            if download.isComplete(after: response) || (acceptable(response, for: request) && response.status != 416) {
                response.fileURL = try download.complete(response)
                return response
            }
            if response.status == 416 && pass == 1 && download.offset > 0 {
                download.discard()
                continue
            }
            download.interrupted()
            return response
        }
        preconditionFailure("the download loop returns or throws on its second pass")
    }

    /// An endpoint's stub, served after its delay (on the center's clock) and marked as such.
    private func stubbed(
        _ reply: StubEngine.Reply, _ engineRequest: EngineRequest, _ request: Request, _ configuration: Configuration,
        _ cancellation: EngineCancellation?
    ) async throws(HTTPError) -> Response {
        do {
            if reply.delay > .zero {
                try await Center.sleep(for: reply.delay, on: configuration.clock, cancellation: cancellation)
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

    /// Sleeps on the center's clock; a request run in its caller's task also wakes when cancelled by identifier.
    static func sleep(
        for duration: Duration, on clock: any Clock<Duration>, cancellation: EngineCancellation?
    ) async throws {
        guard let cancellation else { return try await clock.sleep(for: duration) }
        if clock is ContinuousClock { return try await cancellation.sleep(for: duration) }
        let sleeper = Task { try await clock.sleep(for: duration) }
        let key = cancellation.add { sleeper.cancel() }
        defer { cancellation.remove(key) }
        try await withTaskCancellationHandler {
            try await sleeper.value
        } onCancel: {
            sleeper.cancel()
        }
    }

    /// An error thrown by a hook: an `HTTPError` as it is (with the request filled in), anything else wrapped.
    private static func hookError(
        _ error: any Error, default code: HTTPError.Code, _ message: String, _ request: Request,
        response: Response? = nil
    ) -> HTTPError {
        if var error = error as? HTTPError {
            if error.request == nil { error.request = request }
            if error.response == nil { error.response = response }
            return error
        }
        return HTTPError(code, "\(message): \(error)", request: request, response: response, underlying: error)
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
