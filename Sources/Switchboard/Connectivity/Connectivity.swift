import Foundation

/// Whether a usable network path exists, and over which interface.
///
/// On Linux a path is usable when a default route goes out through an interface that is up, is not the loopback,
/// and has an address of the route's family (read from the kernel's routing tables over netlink). On Apple
/// platforms it is `NWPathMonitor`'s `satisfied`.
public struct NetworkPath: Sendable, Hashable {
    /// The kind of interface a path goes through.
    public enum Interface: Sendable, Hashable {
        /// Wi-Fi (on Linux: an interface with a `wireless` directory in `/sys/class/net`).
        case wifi
        /// A cellular modem (on Linux: an interface named `wwan…`).
        case cellular
        /// Wired Ethernet, or a virtual interface that is Ethernet to the system (`veth`, a bridge).
        case wiredEthernet
        /// The loopback interface.
        case loopback
        /// Anything else (a tunnel, a point-to-point link).
        case other
    }

    /// Whether requests can leave this machine.
    public var isUsable: Bool
    /// The interface the default route goes through, when the path is usable and the system says which.
    public var interface: Interface?
    /// That interface's name (`eth0`, `wlan0`, `en0`), when known.
    public var interfaceName: String?

    /// Creates a path; a monitor of your own, or a test, may want one.
    public init(isUsable: Bool, interface: Interface? = nil, interfaceName: String? = nil) {
        (self.isUsable, self.interface, self.interfaceName) = (isUsable, interface, interfaceName)
    }
}

/// Follows the network path: what it is now (`path`), and each change, as an asynchronous sequence (`paths`) or a
/// callback (`observe(_:)`). One follows the system for the whole process: `Center.connectivity`.
///
/// ```swift
/// for await path in Center.shared.connectivity.paths {
///     print(path.isUsable ? "online over \(path.interfaceName ?? "?")" : "offline")
/// }
/// ```
///
/// A request can wait for a usable path before it is sent (`Request.waitsForConnectivity`) instead of failing at
/// once.
public final class Connectivity: Sendable {
    private struct State {
        var path: NetworkPath?
        var observers: [UInt64: @Sendable (NetworkPath) -> Void] = [:]
        var next: UInt64 = 0
    }
    private let state = Locked(State())

    /// The process's monitor, started when first asked for.
    static let shared: Connectivity = {
        let connectivity = Connectivity()
        PathMonitor.start { path in connectivity.update(path) }
        return connectivity
    }()

    init() {}

    /// The path now. Until the system has answered once (a moment after the monitor starts), it reads as usable, so
    /// that nothing waits on a monitor that is still starting.
    public var path: NetworkPath {
        state.withLock { $0.path } ?? NetworkPath(isUsable: true)
    }

    /// The path now, then each change, until the task iterating it is cancelled.
    public var paths: AsyncStream<NetworkPath> {
        AsyncStream { continuation in
            let observation = observe { continuation.yield($0) }
            continuation.onTermination = { _ in observation.cancel() }
        }
    }

    /// Calls `handler` with the path now (once the system has answered), then with each change, from the monitor's
    /// thread, until the observation is cancelled or released.
    public func observe(_ handler: @escaping @Sendable (NetworkPath) -> Void) -> ConnectivityObservation {
        let (key, current) = state.withLock { state -> (UInt64, NetworkPath?) in
            state.next += 1
            state.observers[state.next] = handler
            return (state.next, state.path)
        }
        if let current { handler(current) }
        return ConnectivityObservation { [weak self] in _ = self?.state.withLock { $0.observers[key] = nil } }
    }

    /// A new path from the monitor: observers hear of a change, not of the same path again.
    func update(_ path: NetworkPath) {
        let observers = state.withLock { state -> [@Sendable (NetworkPath) -> Void] in
            guard state.path != path else { return [] }
            state.path = path
            return Array(state.observers.values)
        }
        for observer in observers { observer(path) }
    }

    /// Waits until the path is usable, at most `limit`; `cancellation` (work run in its caller's task) stops the wait
    /// as the task's cancellation does.
    ///
    /// - Throws: `.cannotConnect` when none appeared in time; `CancellationError` when cancelled.
    func waitForUsablePath(within limit: Duration, cancellation: EngineCancellation? = nil) async throws {
        guard !path.isUsable else { return }
        let wait = PathWait()
        let key = cancellation?.add { wait.finish(.failure(CancellationError())) }
        defer { if let key { cancellation?.remove(key) } }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                wait.start(continuation, on: self, limit: limit)
            }
        } onCancel: {
            wait.finish(.failure(CancellationError()))
        }
    }
}

/// One wait for a usable path: whichever comes first of the path, the time limit and a cancel ends it, once, and
/// stops the others.
private final class PathWait: Sendable {
    private struct State {
        var continuation: CheckedContinuation<Void, any Error>?
        var outcome: Result<Void, any Error>?
        var observation: ConnectivityObservation?
        var timer: Task<Void, Never>?
    }
    private let state = Locked(State())

    func start(_ continuation: CheckedContinuation<Void, any Error>, on connectivity: Connectivity, limit: Duration) {
        // A cancel may have come first.
        if let outcome = state.withLock({ state -> Result<Void, any Error>? in
            if state.outcome == nil { state.continuation = continuation }
            return state.outcome
        }) {
            continuation.resume(with: outcome)
            return
        }
        let observation = connectivity.observe { [self] path in if path.isUsable { finish(.success(())) } }
        let timer = Task { [self] in
            guard (try? await Task.sleep(for: limit)) != nil else { return }
            let waited = String(format: "%.1f s", limit.seconds)
            finish(.failure(HTTPError(.cannotConnect, "no usable network path appeared within \(waited)")))
        }
        let ended = state.withLock { state -> Bool in
            if state.outcome == nil { (state.observation, state.timer) = (observation, timer) }
            return state.outcome != nil
        }
        if ended {
            observation.cancel()
            timer.cancel()
        }
    }

    func finish(_ outcome: Result<Void, any Error>) {
        let taken = state.withLock {
            state -> (CheckedContinuation<Void, any Error>?, ConnectivityObservation?, Task<Void, Never>?)? in
            guard state.outcome == nil else { return nil }
            state.outcome = outcome
            defer { (state.continuation, state.observation, state.timer) = (nil, nil, nil) }
            return (state.continuation, state.observation, state.timer)
        }
        guard let (continuation, observation, timer) = taken else { return }
        continuation?.resume(with: outcome)
        observation?.cancel()
        timer?.cancel()
    }
}

/// An observation of the network path (`Connectivity.observe(_:)`): it ends when cancelled or released.
public final class ConnectivityObservation: Sendable {
    private let end: Locked<(@Sendable () -> Void)?>

    init(_ end: @escaping @Sendable () -> Void) {
        self.end = Locked(end)
    }

    /// Stops the observation.
    public func cancel() {
        end.withLock { end in
            defer { end = nil }
            return end
        }?()
    }

    deinit { cancel() }
}
