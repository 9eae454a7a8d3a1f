import Foundation

// The request and the center's configuration, for the prepare step: what is merged, which server `api` resolves
// against, which retry policy applies. Values know nothing of the center; the pipeline brings the two together.

extension Request {
    /// Makes this the request as the center sends it: the center's values merged in, the defaults filled.
    ///
    /// The center's headers, parameters and user info go first and the request's own win; each `useGeneral*` flag
    /// opts out of one of them. Which of the center's credentials stay behind is decided once the URL is final
    /// (`CredentialScope`).
    mutating func merge(with configuration: CenterConfiguration) {
        if useGeneralHeaders && !configuration.headers.isEmpty {
            if headers["Content-Type"] == nil, let general = configuration.headers["Content-Type"] {
                fields.centerContentType = general
            }
            var merged = configuration.headers
            merged.merge(headers)
            headers = merged
        }
        if useGeneralParameters, let general = configuration.generalParameters {
            fields.generalParameters = general
        }
        if !configuration.userInfo.isEmpty {
            userInfo = Self.overlaying(userInfo, on: configuration.userInfo)
        }
        server = server(in: configuration)
        timeout = timeout ?? configuration.timeout
        totalTimeout = totalTimeout ?? configuration.totalTimeout
        requestSerializer = requestSerializer ?? configuration.requestSerializer
        responseSerializer = responseSerializer ?? configuration.responseSerializer
        // Only a center's own style is put on (a request's cold fields are made only when something sets one).
        if formStyle == nil, configuration.formStyle != FormStyle() { formStyle = configuration.formStyle }
        // An upload carries a body, which a GET cannot: left at the default, the method becomes POST.
        if kind == .upload && method == .get { method = .post }
    }

    /// The server `api` resolves against: the request's own, else its node's, else the center's (unless
    /// `useGeneralServer` is off).
    func server(in configuration: CenterConfiguration) -> String? {
        if let server, !server.isEmpty { return server }
        if let node, node != .default { return configuration.nodes[node] }
        return useGeneralServer ? configuration.server : server
    }

    /// The retry policy that applies: the request's or the center's, with `retryCount` applied.
    func retryPolicy(in configuration: CenterConfiguration) -> RetryPolicy {
        RetryDecision.policy(for: self, under: configuration.retryPolicy)
    }

    /// The redirect policy that applies: the request's, else the center's.
    func redirectPolicy(in configuration: CenterConfiguration) -> RedirectPolicy {
        redirectPolicy ?? configuration.redirectPolicy
    }

    /// The header that carries this request's idempotency key under the policy that applies to it (its own, else
    /// the center's), when that policy names one.
    func idempotencyKeyHeader(in configuration: CenterConfiguration) -> String? {
        retry.map(\.idempotencyKey) ?? configuration.retryPolicy.idempotencyKey
    }
}
