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
}

extension Pipeline {
    /// Merge, compose, plugins, `onRequest`, compose again: a plugin or hook may change `api`, `server`, `node`,
    /// method, parameters or body, and the URL is composed after it. Then the center's credentials, judged on that
    /// final URL (`CredentialScope`): to another origin, its origin-bound headers and secret parameters stay behind
    /// and the authenticator is not asked; to its own, the credential's plugin puts the credential on the request.
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
        let (id, configuration, plugins) = (context.id, context.configuration, context.plugins)
        let own = request
        request = request.merged(with: configuration)
        if request.kind == .upload && request.method == .get {
            // An upload carries a body, which a GET cannot: left at the default, the method becomes POST.
            request.method = .post
        }
        var (composed, isPlain) = try URLComposition.compose(request, plainServer: configuration.plainServer)
        request.url = composed
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
            (composed, isPlain) = try URLComposition.compose(request, plainServer: configuration.plainServer)
            request.url = composed
        }
        if plugins.credential != nil || CredentialScope.mayCarry(own, configuration) {
            if configuration.credentialScope.covers(request.url) {
                try await plugins.authenticate(&request)
            } else {
                CredentialScope.withhold(from: &request, own: own, configuration)
            }
        }
        if let keyHeader = context.keyHeader, RetryPolicy.keys(request.method), request.headers[keyHeader] == nil {
            let key = idempotencyKey ?? UUID().uuidString
            idempotencyKey = key
            request.headers[keyHeader] = key
        }
        // Plain by construction, unless the authenticator set a URL of its own.
        return PreparedRequest(id: id, request: request, urlIsPlain: isPlain && request.url == composed)
    }
}
