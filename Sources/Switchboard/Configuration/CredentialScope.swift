import Foundation

/// Where a center's credentials go: to the origins of its `server` and its nodes, judged on the URL a request is
/// finally sent to (after every hook and plugin), never on how `api` or `url` was written.
///
/// The center's credentials are the authenticator's, the credential fields among its general headers
/// (`Authorization`, `Cookie`, `Proxy-Authorization`, and unless `forwardsSecretHeaders` is on every field with a
/// secret name), and its general parameters with a secret name (`access_token`). A request to any other origin goes
/// without them, and a refused credential there (a `401`) refreshes nothing. A center with neither a server nor a
/// node has no origin to keep them to: they go with every request.
struct CredentialScope: Sendable {
    /// The origins of the center's server and nodes.
    private let origins: [Origin]
    /// Whether the center names a server or a node at all.
    private let hasServers: Bool

    /// The scope of a center with this server and these nodes (`CenterConfiguration.credentialScope` keeps it).
    init(server: String?, nodes: [Node: String]) {
        var servers: [String] = []
        if let server, !server.isEmpty { servers.append(server) }
        for server in nodes.values where !server.isEmpty { servers.append(server) }
        hasServers = !servers.isEmpty
        origins = servers.compactMap(Origin.init(sending:))
    }

    /// Whether the center's credentials go to this URL (a composed URL's text, or the URL that answered).
    func covers(_ url: String?) -> Bool {
        guard hasServers else { return true }
        guard let url, let origin = Origin(sending: url) else { return false }
        return origins.contains(origin)
    }

    /// Whether a request, as written (`own`: its `useGeneral*` flags decided the merge), carries credentials of the
    /// center's general headers or parameters (found when the configuration set them: most centers have none, and
    /// their requests are not judged).
    static func mayCarry(_ own: Request, _ configuration: CenterConfiguration) -> Bool {
        (own.useGeneralHeaders && !configuration.credentialHeaderNames.isEmpty)
            || (own.useGeneralParameters && !(configuration.generalParameters?.secretKeys.isEmpty ?? true))
    }

    /// Takes the center's credentials off a request that goes outside the scope: the origin-bound fields of the
    /// center's headers and the secret-named center parameters that the request did not set itself (`own` is the
    /// request as written, before the merge), unless a hook or plugin gave the field a value of its own.
    static func withhold(
        from request: inout Request, own: Request, _ configuration: CenterConfiguration
    ) {
        if own.useGeneralHeaders {
            let general = configuration.headers
            for name in configuration.credentialHeaderNames
            where own.headers[name] == nil && request.headers[name] == general[name]
                && (!configuration.forwardsSecretHeaders || Redirects.credentialHeaders.contains(name))
            {
                request.headers[name] = nil
            }
        }
        guard own.useGeneralParameters, let general = configuration.generalParameters, !general.secretKeys.isEmpty
        else { return }
        let secret = general.secretKeys.filter { own.parameters[$0] == nil }
        if request.fields.generalParameters === general {
            // Still apart from the request's own: the center's without the secret ones.
            request.fields.generalParameters = GeneralParameters(general.values.filter { !secret.contains($0.key) })
        } else {
            for name in secret { request.parameters[name] = nil }
        }
    }
}
