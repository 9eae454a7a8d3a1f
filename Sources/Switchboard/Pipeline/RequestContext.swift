/// What every step of one request shares, for all its attempts: its identifier, the configuration it took when it
/// was sent, its plugins (its credential and console log among them) and their event relay, where its progress
/// goes, how it is cancelled (when it runs in its caller's task), the stream its body goes to (for `Center.stream`),
/// and the header that carries its idempotency key.
final class RequestContext: Sendable {
    let id: RequestID
    let configuration: CenterConfiguration
    let plugins: PluginChain
    let events: EventRelay?
    let progress: (@Sendable (TransferProgress) -> Void)?
    let cancellation: EngineCancellation?
    let stream: StreamChannel?
    /// The header that carries an idempotency key, when the retry policy names one.
    let keyHeader: String?

    /// The context of a numbered request, sent with this configuration; `owner` is what the authenticator's refresh
    /// sends through.
    init(
        _ request: Request, _ configuration: CenterConfiguration, owner: any AnyObject & Sendable,
        progress: (@Sendable (TransferProgress) -> Void)?, cancellation: EngineCancellation?, stream: StreamChannel?
    ) {
        id = request.id
        self.configuration = configuration
        plugins = PluginChain.of(request, configuration, owner: owner)
        events = EventRelay.of(plugins)
        self.progress = progress
        self.cancellation = cancellation
        self.stream = stream
        keyHeader = request.idempotencyKeyHeader(in: configuration)
    }

    /// Whether the request was cancelled: its task, or its signal when it runs in its caller's task.
    var isCancelled: Bool { Task.isCancelled || cancellation?.isCancelled == true }
}

extension PluginChain {
    /// The chain of a request sent with this configuration: the center's plugins, its node's, its own, with the
    /// center's hooks and retry policy, the authenticator's credential (unless the request opts out) and the console
    /// log. A request with none of its own, its node's, a credential or a log takes the center's chain as it was made.
    static func of(
        _ request: Request, _ configuration: CenterConfiguration, owner: any AnyObject & Sendable
    ) -> PluginChain {
        guard !takesCentersChain(request, configuration) else { return configuration.pluginChain }
        let forNode = nodePlugins(of: request, configuration)
        let authenticator = request.usesAuthenticator ? configuration.authenticator : nil
        var plugins = configuration.plugins
        if let forNode { plugins += forNode }
        plugins += request.plugins
        var credential: CredentialPlugin?
        if let authenticator {
            credential = CredentialPlugin(authenticator, scope: configuration.credentialScope, owner: owner)
        }
        var log: ConsoleLog?
        if configuration.consoleLog {
            log = ConsoleLog(configuration.consoleLogHandler, secretNames: configuration.consoleLogSecretNames)
        }
        return PluginChain(
            plugins, hooks: configuration.hooks, credential: credential,
            retry: RetryDecision(policy: configuration.retryPolicy), log: log)
    }

    /// Whether the request's chain is the center's as it was made: no node's plugins, none of its own, no credential
    /// and no console log.
    static func takesCentersChain(_ request: Request, _ configuration: CenterConfiguration) -> Bool {
        nodePlugins(of: request, configuration) == nil && request.plugins.isEmpty
            && !(request.usesAuthenticator && configuration.authenticator != nil) && !configuration.consoleLog
    }

    /// The plugins of the request's node, if it has any. No node's plugins, no lookup (hashing the node's name is
    /// most of what an empty chain costs).
    private static func nodePlugins(of request: Request, _ configuration: CenterConfiguration) -> [any Plugin]? {
        configuration.nodePlugins.isEmpty ? nil : configuration.nodePlugins[request.node ?? .default]
    }
}
