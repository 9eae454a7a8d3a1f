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
        let server = server(in: configuration)
        // Through the fields at once: each property's setter would ask whether the storage is shared again.
        Self.merge(&fields, configuration, server: server)
    }

    private static func merge(_ fields: inout Fields, _ configuration: CenterConfiguration, server: String?) {
        if fields.useGeneralHeaders && !configuration.headers.isEmpty {
            if let general = configuration.sendingHeaders.contentType, fields.headers["Content-Type"] == nil {
                fields.centerContentType = general
            }
            if fields.headers.isEmpty {
                fields.headers = configuration.headers
            } else {
                var merged = configuration.headers
                merged.merge(fields.headers)
                fields.headers = merged
            }
        }
        if fields.useGeneralParameters, let general = configuration.generalParameters {
            fields.generalParameters = general
        }
        if !configuration.userInfo.isEmpty {
            fields.userInfo = Self.overlaying(fields.userInfo, on: configuration.userInfo)
        }
        fields.server = server
        if fields.timeout == nil { fields.timeout = configuration.timeout }
        if fields.totalTimeout == nil { fields.totalTimeout = configuration.totalTimeout }
        if fields.requestSerializer == nil { fields.requestSerializer = configuration.requestSerializer }
        if fields.responseSerializer == nil { fields.responseSerializer = configuration.responseSerializer }
        // Only a center's own style is put on (a request's cold fields are made only when something sets one).
        if fields.cold?.value.formStyle == nil, configuration.formStyle != FormStyle() {
            fields.coldBox().value.formStyle = configuration.formStyle
        }
        // An upload carries a body, which a GET cannot: left at the default, the method becomes POST.
        if fields.kind == .upload && fields.method == .get { fields.method = .post }
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
