import Foundation

/// A plugin that sees the life of each request as it happens: created, sent, each response head, each redirect,
/// each retry, and the end (finished or cancelled).
///
/// ```swift
/// struct Timeline: RequestObserver {
///     func observe(_ event: RequestEvent) async {
///         print(event.id, event.kind)
///     }
/// }
/// Center.shared.setup { $0.plugins.append(Timeline()) }
/// ```
///
/// Register it as any plugin (on the center, a node, an endpoint or one request). It sees every request that goes
/// through the center's path: plain requests, batch members and chain steps (each with its own identifier), and
/// each connection of a stream or event source. The events of one request reach each observer one at a time, in the
/// order they happened, and all of them before the request's outcome is delivered; events that the engine reports
/// (a response head, a redirect) come from its threads without waiting for the observer. `observe` is `async`, so
/// an observer declared in `@MainActor` code conforms as it is.
public protocol RequestObserver: Plugin {
    /// Sees one event of one request.
    func observe(_ event: RequestEvent) async
}

/// One step in the life of a request, as a `RequestObserver` sees it.
public struct RequestEvent: Sendable {
    /// What happened.
    public enum Kind: Sendable {
        /// The request started on the center.
        case created
        /// An attempt was handed to the engine (not for a response served from the cache or a stub), as the engine
        /// got it: encoded, and changed by the plugins' `adapt`.
        case sent(EngineRequest)
        /// A response head arrived: the status and header fields (a redirect's head too, before `redirected`).
        case responseHead(status: Int, headers: HTTPHeaders)
        /// The engine follows a redirect.
        case redirected(status: Int, from: URL?, to: URL?)
        /// An attempt failed and the request is sent again after `delay` (by the retry policy, a plugin, or the
        /// authenticator after a refresh, with no delay). `attempt` is the one that failed, from 1.
        case retried(attempt: Int, error: HTTPError, delay: Duration)
        /// The request ended with this outcome.
        case finished(Result<Response, HTTPError>)
        /// The request was cancelled (by identifier, by its task, or by its owner going away); it ends here.
        case cancelled
    }

    /// The request's identifier.
    public var id: RequestID
    /// What happened.
    public var kind: Kind
    /// The request, as far as the path had prepared it when the event happened.
    public var request: Request
    /// When it happened.
    public var time: ContinuousClock.Instant

    /// Creates an event.
    public init(id: RequestID, kind: Kind, request: Request, time: ContinuousClock.Instant = .now) {
        self.id = id
        self.kind = kind
        self.request = request
        self.time = time
    }
}

/// Hands one request's events to its observers in order, one at a time: from the request's own task (which waits
/// for them where it must) and from engine threads (which do not wait).
final class EventRelay: Sendable {
    private let observers: [any RequestObserver]
    private struct State {
        var queue: [RequestEvent] = []
        var draining = false
        var waiters: [CheckedContinuation<Void, Never>] = []
    }
    private let state = Locked(State())

    /// The relay of a chain's observers; `nil` without any (checked before anything is made).
    static func of(_ plugins: PluginChain) -> EventRelay? {
        plugins.observers.isEmpty ? nil : EventRelay(plugins.observers)
    }

    private init(_ observers: [any RequestObserver]) {
        self.observers = observers
    }

    /// Queues the event of `kind` for `request`, made here: `RequestEvent` holds a `ContinuousClock.Instant`, whose
    /// size is known only at run time, and one made in an `async` function is allocated on the task for every call
    /// of it, events or none (so this is never inlined into one).
    @inline(never)
    func post(_ kind: RequestEvent.Kind, _ id: RequestID, _ request: Request) {
        post(RequestEvent(id: id, kind: kind, request: request))
    }

    /// Queues an event; the first of a burst starts a task that hands the queue over.
    private func post(_ event: RequestEvent) {
        let starts = state.withLock { state -> Bool in
            state.queue.append(event)
            defer { state.draining = true }
            return !state.draining
        }
        if starts { Task { await drain() } }
    }

    /// Queues the event of `kind` for `request` and waits until every event so far has been observed.
    func deliver(_ kind: RequestEvent.Kind, _ id: RequestID, _ request: Request) async {
        post(kind, id, request)
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let done = state.withLock { state -> Bool in
                guard state.draining else { return true }
                state.waiters.append(continuation)
                return false
            }
            if done { continuation.resume() }
        }
    }

    /// What an engine reports for this request, as events of it.
    func engineHandler(_ request: Request) -> @Sendable (EngineEvent) -> Void {
        { [self] event in
            let kind: RequestEvent.Kind =
                switch event {
                case .responseHead(let status, let headers): .responseHead(status: status, headers: headers)
                case .redirected(let status, let from, let to): .redirected(status: status, from: from, to: to)
                }
            post(kind, request.id, request)
        }
    }

    private func drain() async {
        while true {
            let next = state.withLock { state -> RequestEvent? in
                guard !state.queue.isEmpty else { return nil }
                return state.queue.removeFirst()
            }
            guard let next else {
                let (waiters, stops) = state.withLock { state -> ([CheckedContinuation<Void, Never>], Bool) in
                    // An event queued since the check above keeps this drain going; otherwise the next event
                    // starts a new one.
                    guard state.queue.isEmpty else { return ([], false) }
                    state.draining = false
                    defer { state.waiters = [] }
                    return (state.waiters, true)
                }
                guard stops else { continue }
                for waiter in waiters { waiter.resume() }
                return
            }
            for observer in observers { await observer.observe(next) }
        }
    }
}
