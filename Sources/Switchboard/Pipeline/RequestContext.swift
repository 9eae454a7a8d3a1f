/// What every step of one request shares, for all its attempts: its identifier, the configuration it took when it
/// was sent, its plugins and their event relay, its console log, where its progress goes, how it is cancelled (when
/// it runs in its caller's task), the stream its body goes to (for `Center.stream`), its authenticator, and the
/// header that carries its idempotency key.
final class RequestContext: Sendable {
    let id: RequestID
    let configuration: CenterConfiguration
    let plugins: PluginChain
    let events: EventRelay?
    let log: ConsoleLog?
    let progress: (@Sendable (TransferProgress) -> Void)?
    let cancellation: EngineCancellation?
    let stream: StreamChannel?
    /// The center's authenticator, unless the request opts out; asked only for the center's own origins.
    let authenticator: Authenticator?
    /// The header that carries an idempotency key, when the retry policy names one.
    let keyHeader: String?

    /// The context of a numbered request, sent with this configuration. The authenticator is asked by the prepare
    /// step only for a request to one of the center's origins (`CredentialScope`), judged on its final URL.
    init(
        _ request: Request, _ configuration: CenterConfiguration, progress: (@Sendable (TransferProgress) -> Void)?,
        cancellation: EngineCancellation?, stream: StreamChannel?
    ) {
        id = request.id
        self.configuration = configuration
        plugins = PluginChain(request, configuration)
        events = plugins.isEmpty ? nil : EventRelay(plugins)
        log =
            configuration.consoleLog
            ? ConsoleLog(configuration.consoleLogHandler, secretNames: configuration.consoleLogSecretNames) : nil
        self.progress = progress
        self.cancellation = cancellation
        self.stream = stream
        authenticator = request.usesAuthenticator ? configuration.authenticator : nil
        keyHeader = request.idempotencyKeyHeader(in: configuration)
    }

    /// Whether the request was cancelled: its task, or its signal when it runs in its caller's task.
    var isCancelled: Bool { Task.isCancelled || cancellation?.isCancelled == true }
}

extension PluginChain {
    /// The chain of a request sent with this configuration: the center's plugins, its node's, its own, then the
    /// center's hooks. A request with no plugins of its own or its node's takes the center's chain as it was made.
    init(_ request: Request, _ configuration: CenterConfiguration) {
        // No node's plugins, no lookup (hashing the node's name is most of what an empty chain costs).
        let forNode = configuration.nodePlugins.isEmpty ? nil : configuration.nodePlugins[request.node ?? .default]
        guard forNode != nil || !request.plugins.isEmpty else {
            self.init(plugins: configuration.pluginChain)
            return
        }
        var plugins = configuration.plugins
        if let forNode { plugins += forNode }
        plugins += request.plugins
        if let hooks = configuration.hooks { plugins.append(hooks) }
        self.init(plugins: plugins)
    }
}
