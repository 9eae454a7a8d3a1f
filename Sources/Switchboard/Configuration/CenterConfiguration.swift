import Foundation

/// Everything a center applies to the requests it sends (`Center.Configuration`): set once at start-up with
/// `Center.setup(_:)`.
///
/// A value of its own, which the center holds: a request takes a snapshot of it when it is sent and keeps it to the
/// end, so changing the configuration never affects a request in flight.
public struct CenterConfiguration: Sendable {
    /// The base URL for requests that give an `api` but no `server`.
    public var server: String? {
        get { fields.server }
        set {
            let box = storage.unique()
            box.value.server = newValue
            box.value.serverSet()
        }
        _modify {
            let box = storage.unique()
            defer { box.value.serverSet() }
            yield &box.value.server
        }
    }
    /// Named base URLs that requests and endpoints pick with `node`; `.default` is `server`.
    public var nodes: [Node: String] {
        get { fields.nodes }
        set {
            let box = storage.unique()
            box.value.nodes = newValue
            box.value.credentialScope = CredentialScope(server: box.value.server, nodes: newValue)
        }
        _modify {
            let box = storage.unique()
            defer { box.value.credentialScope = CredentialScope(server: box.value.server, nodes: box.value.nodes) }
            yield &box.value.nodes
        }
    }
    /// The origins the center's credentials go to (its server's and its nodes'), read when they were set.
    var credentialScope: CredentialScope { fields.credentialScope }
    /// `server` when it is in the plain form (`URLComposition.isPlainServer`), found when it was set: the URLs
    /// composed under it need no check of their own.
    var plainServer: String? { fields.plainServer }
    /// Plugins every request of this center runs through, in order (see `Plugin`).
    public var plugins: [any Plugin] {
        get { fields.plugins }
        set {
            let box = storage.unique()
            box.value.plugins = newValue
            box.value.chainPlugins()
        }
        _modify {
            let box = storage.unique()
            defer { box.value.chainPlugins() }
            yield &box.value.plugins
        }
    }
    /// The hooks as a plugin, made when they were set (see `PluginChain`).
    var hooks: HookPlugin? { fields.hooks }
    /// The chain of a request with no plugins of its own or its node's, no credential and no console log: `plugins`,
    /// the hooks and the retry policy.
    var pluginChain: PluginChain { fields.pluginChain }
    /// Plugins for the requests to one node, run after the center's `plugins`; `.default` is for requests that
    /// name no other node.
    ///
    /// ```swift
    /// config.nodePlugins[.payment] = [SigningPlugin(key: paymentKey)]
    /// ```
    public var nodePlugins: [Node: [any Plugin]] {
        get { fields.nodePlugins }
        set { storage.unique().value.nodePlugins = newValue }
        _modify { yield &storage.unique().value.nodePlugins }
    }
    /// Whether endpoints that have a `stub` are answered from it instead of the network. `false` by default.
    public var usesEndpointStubs: Bool {
        get { fields.usesEndpointStubs }
        set { storage.unique().value.usesEndpointStubs = newValue }
        _modify { yield &storage.unique().value.usesEndpointStubs }
    }
    /// The response cache, for requests whose `cachePolicy` is not `.networkOnly`. `nil` (no cache) by default.
    public var cache: ResponseCache? {
        get { fields.cache }
        set { storage.unique().value.cache = newValue }
        _modify { yield &storage.unique().value.cache }
    }
    /// Headers sent with every request (unless it turns `useGeneralHeaders` off); the request's own win.
    ///
    /// Credential fields among them go only to the center's own origins, judged on a request's final URL (see
    /// `Authenticator`): to another origin
    /// (an image CDN, a presigned upload), `Authorization`, `Cookie` and `Proxy-Authorization`, and unless
    /// `forwardsSecretHeaders` is on every field with a secret name (`X-Api-Key`, `X-Session-Token`), stay
    /// behind, as they do at a redirect to another origin. A center with neither a `server` nor a node sends them
    /// with every request.
    public var headers: HTTPHeaders {
        get { fields.headers }
        set {
            let box = storage.unique()
            box.value.headers = newValue
            box.value.headersSet()
        }
        _modify {
            let box = storage.unique()
            defer { box.value.headersSet() }
            yield &box.value.headers
        }
    }
    /// The names among `headers` that are credentials (`Authorization`, `Cookie`, `Proxy-Authorization`) or
    /// secret-named, found when the headers were set: a request to another origin leaves them behind
    /// (`CredentialScope`), and a center without any has nothing to leave behind.
    var credentialHeaderNames: [String] { fields.credentialHeaderNames }
    /// The headers with the fields every request adds, for requests that send them as they are.
    var sendingHeaders: SendingHeaders { fields.sendingHeaders }
    /// Parameters sent with every request (unless it turns `useGeneralParameters` off); the request's own win.
    ///
    /// Those with a secret name (`access_token`, `api_key`) go only to the center's own origins, as its
    /// credential headers do.
    public var parameters: [String: any Sendable] {
        get { fields.parameters }
        set {
            let box = storage.unique()
            box.value.parameters = newValue
            box.value.generalParameters = GeneralParameters(newValue)
        }
        _modify {
            let box = storage.unique()
            defer { box.value.generalParameters = GeneralParameters(box.value.parameters) }
            yield &box.value.parameters
        }
    }
    /// `parameters`, converted when they were set: what every request that uses them starts from.
    var generalParameters: GeneralParameters? { fields.generalParameters }
    /// Values merged under every request's `userInfo`, for the hooks to read.
    public var userInfo: [String: any Sendable] {
        get { fields.userInfo }
        set { storage.unique().value.userInfo = newValue }
        _modify { yield &storage.unique().value.userInfo }
    }
    /// How requests that set no `requestSerializer` encode their parameters into a body. `.form` by default.
    public var requestSerializer: RequestSerializer {
        get { fields.requestSerializer }
        set { storage.unique().value.requestSerializer = newValue }
        _modify { yield &storage.unique().value.requestSerializer }
    }
    /// How requests that set no `responseSerializer` decode their responses. `.json` by default.
    public var responseSerializer: ResponseSerializer {
        get { fields.responseSerializer }
        set { storage.unique().value.responseSerializer = newValue }
        _modify { yield &storage.unique().value.responseSerializer }
    }
    /// The queue that callbacks run on. `nil`: a private concurrent queue (not the main queue).
    public var callbackQueue: DispatchQueue? {
        get { fields.callbackQueue }
        set { storage.unique().value.callbackQueue = newValue }
        _modify { yield &storage.unique().value.callbackQueue }
    }
    /// The transport. `URLSessionEngine.shared` by default.
    public var engine: any Engine {
        get { fields.engine }
        set {
            let box = storage.unique()
            box.value.engine = newValue
            box.value.engineSet()
        }
        _modify {
            let box = storage.unique()
            defer { box.value.engineSet() }
            yield &box.value.engine
        }
    }
    /// The engine's `honoursCancellation`, read once when it was set: every request asks.
    var engineHonoursCancellation: Bool { fields.engineHonoursCancellation }
    /// Whether to print request, response and error banners, with secrets redacted. `false` by default.
    public var consoleLog: Bool {
        get { fields.consoleLog }
        set { storage.unique().value.consoleLog = newValue }
        _modify { yield &storage.unique().value.consoleLog }
    }
    /// Where console banners go when `consoleLog` is on. Standard output by default.
    public var consoleLogHandler: @Sendable (String) -> Void {
        get { fields.consoleLogHandler }
        set { storage.unique().value.consoleLogHandler = newValue }
        _modify { yield &storage.unique().value.consoleLogHandler }
    }
    /// More words that make a name secret in the console log, beside the built-in ones (`token`, `secret`,
    /// `key`, `password`, `session`, `auth`, `signature`, `cookie`, `credential`, `pin`, `otp`, `card`, ...): a
    /// header, query item, form field, parameter, JSON member, XML element or attribute, property-list key or
    /// multipart part with one of them as a word of its name (split at `-`, `_`, `.` and case changes, without
    /// regard to case), or a word that ends with one, is printed as `<redacted>`: `X-Api-Key`, `apiKey`,
    /// `client_secret`, `accesstoken`, but not `author`, `keyboard` or `monkey`.
    public var consoleLogSecretNames: Set<String> {
        get { fields.consoleLogSecretNames }
        set { storage.unique().value.consoleLogSecretNames = newValue }
        _modify { yield &storage.unique().value.consoleLogSecretNames }
    }
    /// The most requests of this center on its engine at once, or `nil` (the default) for no limit beyond the
    /// engine's own per host. A request past it waits, not counted against its timeouts, and waiting requests start
    /// by `Request.priority`, first come first served within one; cancelled while it waits, a request never reaches
    /// the engine. Batch members and chain steps count as requests; a response from the cache or a stub takes no
    /// place, and an open stream keeps its place until it ends. The wait is in `TransferMetrics.queued`.
    public var maxRequestsInFlight: Int? {
        get { fields.maxRequestsInFlight }
        set { storage.unique().value.maxRequestsInFlight = newValue }
        _modify { yield &storage.unique().value.maxRequestsInFlight }
    }
    /// Whether requests wait for a usable network path before they are sent, unless a request says otherwise
    /// (`Request.waitsForConnectivity`). `false` by default.
    public var waitsForConnectivity: Bool {
        get { fields.waitsForConnectivity }
        set { storage.unique().value.waitsForConnectivity = newValue }
        _modify { yield &storage.unique().value.waitsForConnectivity }
    }
    /// How parameters are written into a query or a form body, unless a request sets its own (`Request.formStyle`):
    /// `tag[]=a` and `true` by default. See `FormStyle`.
    public var formStyle: FormStyle {
        get { fields.formStyle }
        set { storage.unique().value.formStyle = newValue }
        _modify { yield &storage.unique().value.formStyle }
    }
    /// Which redirects requests follow, unless a request sets its own (`Request.redirectPolicy`): `.follow` (up to
    /// 20) by default. See `RedirectPolicy`.
    public var redirectPolicy: RedirectPolicy {
        get { fields.redirectPolicy }
        set { storage.unique().value.redirectPolicy = newValue }
        _modify { yield &storage.unique().value.redirectPolicy }
    }
    /// `redirectPolicy` when it is not the default: what the encode step puts on a request that sets none.
    var redirectPolicyIfSet: RedirectPolicy? { fields.redirectPolicy.isDefault ? nil : fields.redirectPolicy }
    /// What TLS trusts and presents, by host pattern: a host name (`api.example.com`), `*.` and a domain
    /// (`*.example.com`: every name under it, not the domain itself), or `*` (every host). A host takes its exact
    /// entry, else the longest matching `*.` pattern, else `*`, else the system's trust. A node's requests take the
    /// policy of its host. Checked when a request is sent: an entry that could never apply (a scheme, port or path in
    /// the pattern, a malformed pin, `.evaluationDisabled` for a pattern) fails every request of the center with
    /// `HTTPError.Code.unsupported`. See `TrustPolicy`.
    public var trustPolicies: [String: TrustPolicy] {
        get { fields.trustPolicies }
        set {
            let box = storage.unique()
            box.value.trustPolicies = newValue
            box.value.trust = TrustTable.make(newValue)
        }
        _modify {
            let box = storage.unique()
            defer { box.value.trust = TrustTable.make(box.value.trustPolicies) }
            yield &box.value.trustPolicies
        }
    }
    /// `trustPolicies`, checked and ready to look up, or `nil` when there are none to apply.
    var trust: TrustTable? { fields.trust }
    /// Whether redirects from `https` to plain `http` are followed. `false` (the default) fails them with
    /// `HTTPError.Code.insecureRedirect`, on every engine.
    public var allowsInsecureRedirects: Bool {
        get { fields.allowsInsecureRedirects }
        set { storage.unique().value.allowsInsecureRedirects = newValue }
        _modify { yield &storage.unique().value.allowsInsecureRedirects }
    }
    /// Whether header fields with secret names go with a redirect to another origin (another scheme, host or
    /// port). `false` (the default): a field whose name is secret by the console log's built-in rule (it holds
    /// `token`, `secret`, `key`, `password`, `passwd`, `session`, `auth`, `signature`, `cookie` or `credential`,
    /// or has a word such as `pin` or `otp`: `X-Api-Key`, `Private-Token`, `X-Signature`, `X-OTP`) stays with the
    /// origin it was set for, on every engine, as `Authorization`, `Cookie` and `Proxy-Authorization` always do.
    /// Set it for an API that redirects to a sibling host that needs the same key. The same rule keeps such
    /// fields among the center's `headers` from requests to an origin other than its servers'.
    public var forwardsSecretHeaders: Bool {
        get { fields.forwardsSecretHeaders }
        set { storage.unique().value.forwardsSecretHeaders = newValue }
        _modify { yield &storage.unique().value.forwardsSecretHeaders }
    }
    /// The longest a request may wait without receiving anything (the idle timeout). 60 seconds by default.
    public var timeout: Duration {
        get { fields.timeout }
        set { storage.unique().value.timeout = newValue }
        _modify { yield &storage.unique().value.timeout }
    }
    /// The `maxResponseBytes` a configuration starts with: 64 MiB.
    public static let defaultMaxResponseBytes: Int64 = 64 << 20
    /// The longest a whole exchange may take, however steadily data arrives. `nil` (no limit) by default.
    public var totalTimeout: Duration? {
        get { fields.totalTimeout }
        set { storage.unique().value.totalTimeout = newValue }
        _modify { yield &storage.unique().value.totalTimeout }
    }
    /// The most bytes of response body a request takes into memory, unless it sets its own
    /// (`Request.maxResponseBytes`): 64 MiB by default (`defaultMaxResponseBytes`), so that a server that sends
    /// without end, or a small compressed body that inflates to gigabytes, cannot fill the app's memory. `nil`
    /// sets no limit. Downloads into a file and streams are not counted (they keep bounds of their own).
    public var maxResponseBytes: Int64? {
        get { fields.maxResponseBytes }
        set { storage.unique().value.maxResponseBytes = newValue }
        _modify { yield &storage.unique().value.maxResponseBytes }
    }
    /// Status codes that count as success. 200 to 299 by default.
    public var acceptableStatusCodes: Set<Int> {
        get { fields.acceptableStatusCodes ?? Self.successCodes }
        set { storage.unique().value.acceptableStatusCodes = newValue == Self.successCodes ? nil : newValue }
    }
    /// `acceptableStatusCodes` when it is not 200 to 299: a request then asks the set; otherwise it checks the
    /// status's range, without hashing it.
    var unusualAcceptableStatusCodes: Set<Int>? { fields.acceptableStatusCodes }
    private static let successCodes = Set(200...299)
    /// Keeps a credential on every request and refreshes it once when it is refused. `nil` by default.
    public var authenticator: Authenticator? {
        get { fields.authenticator }
        set { storage.unique().value.authenticator = newValue }
        _modify { yield &storage.unique().value.authenticator }
    }
    /// Whether identical `GET` and `HEAD` requests in flight share one transfer (each caller still gets its own
    /// callbacks). `false` by default; `Request.deduplicate` decides for one request.
    public var deduplicatesGETs: Bool {
        get { fields.deduplicatesGETs }
        set { storage.unique().value.deduplicatesGETs = newValue }
        _modify { yield &storage.unique().value.deduplicatesGETs }
    }
    /// When and how failed requests are retried. `.never` by default; `.default` gives three attempts.
    public var retryPolicy: RetryPolicy {
        get { fields.retryPolicy }
        set {
            let box = storage.unique()
            box.value.retryPolicy = newValue
            box.value.chainPlugins()
        }
        _modify {
            let box = storage.unique()
            defer { box.value.chainPlugins() }
            yield &box.value.retryPolicy
        }
    }
    /// The clock the center waits on between retries; inject one in tests to control time.
    public var clock: any Clock<Duration> {
        get { fields.clock }
        set { storage.unique().value.clock = newValue }
        _modify { yield &storage.unique().value.clock }
    }
    /// How many failed requests and groups (sent with callbacks) the center remembers for `retry(_:)`, and how
    /// many successes it remembers to answer `.succeeded`. 100 by default; 0 turns retry by identifier off.
    public var retainedFailures: Int {
        get { fields.retainedFailures }
        set { storage.unique().value.retainedFailures = newValue }
        _modify { yield &storage.unique().value.retainedFailures }
    }
    /// Runs before each request is encoded, after merging and URL composition: it may change anything, and may
    /// throw to refuse sending (the request then fails with the thrown `HTTPError`, or `.vetoed`).
    public var onRequest: (@Sendable (inout Request) async throws -> Void)? {
        get { fields.onRequest }
        set {
            let box = storage.unique()
            box.value.onRequest = newValue
            box.value.chainPlugins()
        }
        _modify {
            let box = storage.unique()
            defer { box.value.chainPlugins() }
            yield &box.value.onRequest
        }
    }
    /// Runs after a response passed status validation and was decoded: it may return a different response,
    /// or throw to fail the request (with the thrown `HTTPError`, or `.business`).
    public var onResponse: (@Sendable (Request, Response) async throws -> Response)? {
        get { fields.onResponse }
        set {
            let box = storage.unique()
            box.value.onResponse = newValue
            box.value.chainPlugins()
        }
        _modify {
            let box = storage.unique()
            defer { box.value.chainPlugins() }
            yield &box.value.onResponse
        }
    }
    /// Runs once on the final error of a failed request (a cancelled one too), before the plugins' `process` and
    /// the failure callbacks; returns the error to report (the same, or another).
    public var onError: (@Sendable (Request, HTTPError) async -> HTTPError)? {
        get { fields.onError }
        set {
            let box = storage.unique()
            box.value.onError = newValue
            box.value.chainPlugins()
        }
        _modify {
            let box = storage.unique()
            defer { box.value.chainPlugins() }
            yield &box.value.onError
        }
    }

    /// Creates a configuration with every property at its default.
    public init() {}

    /// The stored values. Every request takes a snapshot of the configuration, so they live in one box that
    /// copies share until one of them changes.
    struct Fields: Sendable {
        var server: String?
        var nodes: [Node: String] = [:]
        var credentialScope = CredentialScope(server: nil, nodes: [:])
        var plainServer: String?
        var plugins: [any Plugin] = []
        var nodePlugins: [Node: [any Plugin]] = [:]
        var usesEndpointStubs: Bool = false
        var cache: ResponseCache?
        var headers: HTTPHeaders = [:]
        var credentialHeaderNames: [String] = []
        var sendingHeaders = SendingHeaders([:])
        var parameters: [String: any Sendable] = [:]
        var generalParameters: GeneralParameters?
        var userInfo: [String: any Sendable] = [:]
        var requestSerializer = RequestSerializer.form
        var responseSerializer = ResponseSerializer.json
        var callbackQueue: DispatchQueue?
        var engine: any Engine = URLSessionEngine.shared
        var engineHonoursCancellation = URLSessionEngine.shared.honoursCancellation
        var consoleLog: Bool = false
        var consoleLogHandler: @Sendable (String) -> Void = { print($0) }
        var consoleLogSecretNames: Set<String> = []
        var allowsInsecureRedirects: Bool = false
        var redirectPolicy = RedirectPolicy.follow
        var trustPolicies: [String: TrustPolicy] = [:]
        var trust: TrustTable?
        var formStyle = FormStyle()
        var maxRequestsInFlight: Int?
        var waitsForConnectivity = false
        var forwardsSecretHeaders: Bool = false
        var timeout: Duration = .seconds(60)
        var totalTimeout: Duration?
        var maxResponseBytes: Int64? = CenterConfiguration.defaultMaxResponseBytes
        /// `nil` for 200 to 299.
        var acceptableStatusCodes: Set<Int>?
        var authenticator: Authenticator?
        var deduplicatesGETs: Bool = false
        var retryPolicy: RetryPolicy = .never
        var clock: any Clock<Duration> = ContinuousClock()
        var retainedFailures: Int = 100
        var onRequest: (@Sendable (inout Request) async throws -> Void)?
        var onResponse: (@Sendable (Request, Response) async throws -> Response)?
        var onError: (@Sendable (Request, HTTPError) async -> HTTPError)?
        var hooks: HookPlugin?
        var pluginChain = PluginChain([], retry: RetryDecision(policy: .never))

        /// What every request finds from the server, found once: its origin, and whether it is plain.
        mutating func serverSet() {
            credentialScope = CredentialScope(server: server, nodes: nodes)
            plainServer = server.flatMap { URLComposition.isPlainServer($0) ? $0 : nil }
        }

        /// What every request asks of the engine, read once.
        mutating func engineSet() {
            engineHonoursCancellation = engine.honoursCancellation
        }

        /// What every request finds from the headers, found once: their credential names, and which are sendable.
        mutating func headersSet() {
            credentialHeaderNames = Redirects.credentialFields(in: headers)
            headers.markSendable()
            sendingHeaders = SendingHeaders(headers)
        }

        /// Makes `hooks` and `pluginChain` again, after `plugins`, a hook or the retry policy changed.
        mutating func chainPlugins() {
            hooks = HookPlugin(onRequest: onRequest, onResponse: onResponse, onError: onError)
            pluginChain = PluginChain(plugins, hooks: hooks, retry: RetryDecision(policy: retryPolicy))
        }
    }

    /// The fields, shared by copies of the configuration until one of them changes.
    private var storage = CopyOnWrite(Fields())

    private var fields: Fields {
        get { storage.value }
        set { storage.unique().value = newValue }
        _modify { yield &storage.unique().value }
    }
}
