import Foundation

/// A request after the prepare step: merged with the center's configuration, its URL composed, the plugins'
/// `prepare` and the `onRequest` hook applied. The steps after it work on this.
struct PreparedRequest: Sendable {
    /// The request's identifier (every request in the pipeline has one).
    let id: RequestID
    /// The request as the later steps, the hooks and the logs see it; its `url` is the composed URL, before encoding
    /// adds the query.
    let request: Request
    /// Whether the request's `url` is in the plain form by construction (see `URLComposition.compose`).
    let urlIsPlain: Bool
    /// Whether `request` differs from the request the registry holds (it was not prepared early, or it got an
    /// idempotency key).
    let changed: Bool
}

extension Pipeline {
    /// Merge, compose, plugins, `onRequest`, compose again: a plugin or hook may change `api`, `server`, `node`,
    /// method, parameters or body, and the URL is composed after it. Then the center's credentials, judged on that
    /// final URL (`CredentialScope`): to another origin, its origin-bound headers and secret parameters stay behind
    /// and the authenticator is not asked; to its own, the credential's plugin puts the credential on the request.
    /// A request merged and composed before it was registered (`prepareEarly`) has had all of that
    /// (`preparedEarly` finishes it without an async call).
    ///
    /// Last, a `POST` or `PATCH` gets its idempotency key when the context names the header for one (see
    /// `RetryPolicy.idempotencyKey`) and the request has no such header: `idempotencyKey`, made here at the first
    /// attempt that needs it, so that every attempt sends the same.
    ///
    /// `request` is left as far as the step got (merged, at least), so that a failure reports the request as it
    /// stood.
    nonisolated(nonsending) func prepare(
        _ request: inout Request, _ context: RequestContext, idempotencyKey: inout String?
    ) async throws(HTTPError) -> PreparedRequest {
        if let prepared = try Self.preparedEarly(&request, context, idempotencyKey: &idempotencyKey) {
            return prepared
        }
        let isPlain = try await mergeAndCompose(&request, context)
        return Self.keyed(&request, context, urlIsPlain: isPlain, changed: true, idempotencyKey: &idempotencyKey)
    }

    /// `prepare` for a request prepared early under this identifier: nothing in it waits, so a caller needs no async
    /// call for it. `nil` for any other request.
    static func preparedEarly(
        _ request: inout Request, _ context: RequestContext, idempotencyKey: inout String?
    ) throws(HTTPError) -> PreparedRequest? {
        guard let early = request.fields.early, early.id == context.id else { return nil }
        let isPlain: Bool
        if let urlIsPlain = early.urlIsPlain {
            isPlain = urlIsPlain
        } else {
            // A URL that did not compose then is composed again, to throw its error.
            isPlain = try request.compose(context.configuration).isPlain
        }
        return keyed(&request, context, urlIsPlain: isPlain, changed: false, idempotencyKey: &idempotencyKey)
    }

    /// The prepared request, with its idempotency key when it needs one.
    private static func keyed(
        _ request: inout Request, _ context: RequestContext, urlIsPlain: Bool, changed: Bool,
        idempotencyKey: inout String?
    ) -> PreparedRequest {
        var changed = changed
        if let keyHeader = context.keyHeader, RetryPolicy.keys(request.method), request.headers[keyHeader] == nil {
            let key = idempotencyKey ?? UUID().uuidString
            idempotencyKey = key
            request.headers[keyHeader] = key
            changed = true
        }
        return PreparedRequest(id: context.id, request: request, urlIsPlain: urlIsPlain, changed: changed)
    }

    /// The merge, the URL, the plugins and the credentials, for a request not prepared early; returns whether the
    /// URL is plain by construction.
    nonisolated(nonsending) private func mergeAndCompose(
        _ request: inout Request, _ context: RequestContext
    ) async throws(HTTPError) -> Bool {
        let (id, configuration, plugins) = (context.id, context.configuration, context.plugins)
        let own = request
        request.merge(with: configuration)
        var (composed, isPlain) = try request.compose(configuration)
        if !plugins.preparing.isEmpty {
            let before = request
            do throws(HTTPError) {
                try await plugins.prepare(&request)
            } catch {
                request.id = id
                throw error
            }
            request.id = id
            if request.url == composed {
                // No URL of their own: a new node (or general-server choice) picks its server again, and
                // a new `api` or server is composed again, as if the request had been written that way.
                if request.server == before.server,
                    request.node != before.node || request.useGeneralServer != before.useGeneralServer
                {
                    var resolved = request
                    resolved.server = own.server
                    request.server = resolved.server(in: configuration)
                }
                if request.api != before.api || request.server != before.server { request.url = own.url }
            }
            (composed, isPlain) = try request.compose(configuration)
        }
        if plugins.credential != nil || CredentialScope.mayCarry(own, configuration) {
            if configuration.credentialScope.covers(request.url) {
                try await plugins.authenticate(&request)
            } else {
                CredentialScope.withhold(from: &request, own: own, configuration)
            }
        }
        // Plain by construction, unless the authenticator set a URL of its own.
        return isPlain && request.url == composed
    }

    /// The prepare step's first part (the merge and the URL), done in the request's own box before it is
    /// registered, when no later part needs the request as written: no plugin or hook prepares it (a changed `api`
    /// or server is composed again from the request as written), no credential is judged (what it did not set
    /// itself stays behind elsewhere) and no console log describes it as written (a callback send keeps the request
    /// as written besides, for `retry`, which merges it again with the configuration of its time). The registry, the
    /// steps and the response then share that one box; otherwise the merge copies the request. A URL that does not
    /// compose is composed again by `prepare`, which reports it.
    static func prepareEarly(_ request: inout Request, _ configuration: CenterConfiguration) {
        guard PluginChain.takesCentersChain(request, configuration), configuration.pluginChain.preparing.isEmpty,
            !CredentialScope.mayCarry(request, configuration)
        else { return }
        request.merge(with: configuration)
        let isPlain = try? request.compose(configuration).isPlain
        request.fields.early = Request.EarlyPreparation(id: request.id, urlIsPlain: isPlain)
    }
}

extension Request {
    /// Composes the URL of a merged request, and sets it; returns it and whether it is plain by construction.
    fileprivate mutating func compose(
        _ configuration: CenterConfiguration
    ) throws(HTTPError) -> (text: String, isPlain: Bool) {
        let composed = try URLComposition.compose(self, plainServer: configuration.plainServer)
        url = composed.text
        return composed
    }
}
