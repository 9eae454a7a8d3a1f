import Foundation

/// The center every request goes through: one configuration, one place to send, cancel and look up requests.
///
/// Configure it once at start-up, then send requests described by closures:
///
/// ```swift
/// Center.shared.setup { config in
///     config.server = "https://api.example.com/v1/"
///     config.headers["X-Client"] = "ios"
/// }
/// let id = Center.shared.send { $0.api = "users" } onSuccess: { response in
///     print(response.status)
/// }
/// Center.shared.cancel(id)
/// ```
///
/// `Center.shared` serves most apps; create independent centers for separate back ends and for tests. A center is
/// safe to use from any thread or task.
public final class Center: Sendable {
    /// The shared center.
    public static let shared = Center()

    /// What a center applies to every request it sends: `CenterConfiguration`.
    public typealias Configuration = CenterConfiguration

    private let state: Locked<Configuration>
    /// Serialises `setup` calls, so that each one reads and writes the configuration as a whole without the state
    /// lock being held while user code runs.
    private let setupLock = NSLock()
    let registry = Registry()
    let inFlight = InFlight()
    /// Where callbacks run when the configuration names no queue.
    let privateQueue = DispatchQueue(label: "Switchboard.Center.callbacks", attributes: .concurrent)
    static let privateQueueKey = DispatchSpecificKey<ObjectIdentifier>()

    /// Creates an independent center.
    ///
    /// ```swift
    /// let payments = Center { $0.server = "https://pay.example.com/" }
    /// ```
    public init(_ configure: (inout Configuration) -> Void = { _ in }) {
        var configuration = Configuration()
        configure(&configuration)
        state = Locked(configuration)
        privateQueue.setSpecific(key: Center.privateQueueKey, value: ObjectIdentifier(self))
    }

    /// A snapshot of the current configuration.
    public var configuration: Configuration {
        state.snapshot
    }

    /// Changes the configuration: the closure gets the current one and edits it in place.
    ///
    /// Unlike XMNetworking's `setupConfig`, nothing is reset: headers and parameters you add join the existing ones,
    /// and anything can be set back to `nil`. Requests already sent keep the configuration they started with.
    /// Do not call `setup` from inside the closure.
    public func setup(_ configure: (inout Configuration) -> Void) {
        setupLock.lock()
        defer { setupLock.unlock() }
        var configuration = state.snapshot
        configure(&configuration)
        state.withLock { $0 = configuration }
    }

    /// Sets a header sent with every request; `nil` removes it.
    public func setHeader(_ value: String?, for name: String) {
        setup { $0.headers[name] = value }
    }

    /// Sets a parameter sent with every request; `nil` removes it.
    public func setParameter(_ value: (any Sendable)?, for key: String) {
        setup { $0.parameters[key] = value }
    }

    /// Points a node at a base URL (`nil` removes it); requests sent afterwards use it.
    public func setNode(_ node: Node, to url: String?) {
        setup { $0.nodes[node] = url }
    }

    /// Whether a usable network path exists, and each change: one monitor for the whole process, started when first
    /// asked for (see `Connectivity`).
    public var connectivity: Connectivity { Connectivity.shared }

    // MARK: - Looking up and cancelling

    /// The running request, batch or chain with this identifier, as it is being sent; `nil` once it has finished
    /// or was cancelled. A group lists its members' identifiers.
    public func request(for id: RequestID) -> AnyRequest? {
        registry.work(for: id)
    }

    /// Cancels a running request, batch or chain.
    ///
    /// A request ends with `HTTPError.Code.cancelled` through its `onFailure` and `onFinished` callbacks (exactly
    /// once, never `onSuccess`), or its `async` call throws it. A group cancels every running member and starts no
    /// other, then finishes once as cancelled; members that had finished keep their responses. `onCancel` runs on the
    /// callback queue with what was cancelled, or `nil` when nothing with this identifier was running.
    ///
    /// A download can be cancelled until its file takes its final name; from then on it is done (the file is in
    /// place and replaced any there before), a cancel does not reach it (`onCancel` gets `nil`), and it ends with
    /// its response. A cancelled download never leaves a file at its destination.
    public func cancel(_ id: RequestID, onCancel: (@Sendable (AnyRequest?) -> Void)? = nil) {
        let cancelled = registry.cancel(id)
        if let onCancel {
            callbackQueue(configuration).async { onCancel(cancelled) }
        }
    }

    /// Cancels every running request and group of this center; returns how many there were (members count too).
    @discardableResult
    public func cancelAll() -> Int {
        registry.cancelAll().count
    }

    /// Cancels every running request and group that carries this tag (`Request.tag`, `BatchRequest.tag`,
    /// `ChainRequest.tag`); returns how many there were.
    ///
    /// ```swift
    /// center.send { $0.api = "search"; $0.tag = "search" } onSuccess: { response in show(response) }
    /// center.cancel(tag: "search")          // when the user types again
    /// ```
    ///
    /// Each ends as `cancel(_:)` ends it: `.cancelled`, exactly once. A cancelled group cancels all its members,
    /// whatever their tags; a member with the tag is cancelled on its own, and its group sees it fail.
    @discardableResult
    public func cancel(tag: String) -> Int {
        registry.cancel(tag: tag).count
    }

    func callbackQueue(_ configuration: Configuration) -> DispatchQueue {
        configuration.callbackQueue ?? privateQueue
    }

    // MARK: - Configuring

    /// Where all work starts.
    var launcher: Launcher { Launcher(registry: registry) }

    /// Builds the request from the closure and numbers it, with the configuration it will run under (a snapshot);
    /// the launcher registers it when it starts.
    func configured(_ configure: (inout Request) -> Void) -> (Request, Configuration) {
        (Launcher.numbered(configure), configuration)
    }
}
