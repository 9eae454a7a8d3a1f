import Dispatch

/// Counts the exchanges under way on the network, for a network-activity indicator or a "busy" badge.
///
/// ```swift
/// let activity = ActivityPlugin { count in
///     DispatchQueue.main.async { spinner.isHidden = count == 0 }
/// }
/// Center.shared.setup { $0.plugins.append(activity) }
/// ```
///
/// Each attempt counts from just before the engine starts it until its response or error arrives; responses served
/// from the cache or an endpoint stub never count. Register one instance on as many centers as should share the
/// count.
public final class ActivityPlugin: Plugin {
    private let count = Locked(0)
    private let onChange: (@Sendable (Int) -> Void)?
    private let queue = DispatchQueue(label: "Switchboard.ActivityPlugin")

    /// Creates a counter; `onChange` hears each new count, in order, on a serial queue of the plugin's.
    public init(onChange: (@Sendable (Int) -> Void)? = nil) {
        self.onChange = onChange
    }

    /// How many exchanges are under way now.
    public var current: Int {
        count.withLock { $0 }
    }

    public func willSend(_ request: EngineRequest, for original: Request) async {
        change(by: 1)
    }

    public func didReceive(_ result: Result<Response, HTTPError>, for original: Request) async {
        change(by: -1)
    }

    private func change(by delta: Int) {
        // Each count is queued inside the lock (the handler itself runs on the queue), so it hears them in order.
        count.withLock { count in
            count += delta
            if let onChange { queue.async { [count] in onChange(count) } }
        }
    }
}
