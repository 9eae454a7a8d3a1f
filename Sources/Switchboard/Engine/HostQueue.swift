import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// At most `limit` exchanges with one origin (scheme, host, port) at a time; the others wait here, first come first
/// served, before their transfer starts.
///
/// Waiting in the engine rather than in the transport is what keeps the idle timeout honest: URLSession starts a
/// task's timeout when the task starts, so a task queued behind the session's per-host connections timed out
/// without having sent a byte. A wait here counts against the total timeout (the whole exchange) and ends at once
/// when the task is cancelled.
final class HostQueue: Sendable {
    /// The waiters of one origin in arrival order; a waiter that gave up is removed from `waiters` and skipped.
    private struct Line {
        var order: [UInt64] = []
        var head = 0
        var waiters: [UInt64: CheckedContinuation<Void, any Error>] = [:]

        mutating func popFirst() -> CheckedContinuation<Void, any Error>? {
            while head < order.count {
                let id = order[head]
                head += 1
                if let waiter = waiters.removeValue(forKey: id) {
                    if head > 1024, head * 2 > order.count {
                        order.removeFirst(head)
                        head = 0
                    }
                    return waiter
                }
            }
            return nil
        }
    }

    private struct State {
        var running: [Origin: Int] = [:]
        var lines: [Origin: Line] = [:]
        var nextID: UInt64 = 0
        /// The origins an exchange was answered by (see `mayHaveConnection`), at most `answeredLimit`.
        var answered: Set<Origin> = []
    }

    private static let answeredLimit = 1024

    /// The most exchanges per origin at once, or `nil` for no limit.
    let limit: Int?
    private let state = Locked(State())

    init(limit: Int?) {
        self.limit = limit.map { max(1, $0) }
    }

    /// The start every engine's exchange shares: the request is checked (not cancelled, a URL an engine may send),
    /// waits for its place, and `body` runs with the deadline its `totalTimeout` sets, holding the place until it
    /// returns.
    func admit<T>(
        _ request: EngineRequest, _ body: (Moment?) async throws -> T
    ) async throws -> T {
        try request.checkCancellation()
        try Redirects.check(request)
        // Checked here too, not only when the center encodes a request: a plugin's `adapt` and direct callers of an
        // engine set the method and fields after that.
        try request.checkBeforeSending()
        if case .file(let file) = request.body {
            // Said alike by both engines (libcurl's engine reported the file handle's error as a transport failure).
            _ = try UploadFile.length(file)
        }
        let deadline = request.totalTimeout.map { Moment.now + $0 }
        let origin = try await enter(request.url, deadline: deadline, cancellation: request.cancellation)
        var answered = false
        defer { if let origin { release(origin, answered: answered) } }
        try request.checkCancellation()
        let result = try await body(deadline)
        answered = true
        return result
    }

    /// Whether an exchange with the origin of `url` admitted here was answered before, so that the transport may
    /// hold a connection to it that an earlier exchange left open (or has held one). Known only with a `limit`;
    /// past `answeredLimit` origins, every origin may.
    func mayHaveConnection(to url: URL?) -> Bool {
        guard limit != nil else { return false }
        let key = Self.origin(of: url)
        return state.withLock { $0.answered.contains(key) || $0.answered.count >= Self.answeredLimit }
    }

    /// What is left of a total timeout until `deadline` (at least a millisecond, so it still means "a limit").
    static func remaining(until deadline: Moment) -> Duration {
        max(.milliseconds(1), deadline - Moment.now)
    }

    /// The origin a request counts against (see `Origin`); requests without a scheme or host share one.
    static func origin(of url: URL?) -> Origin {
        Origin(url) ?? Origin(scheme: "", host: "", port: 0)
    }

    /// Waits for a place for `url`'s origin. Throws `CancellationError` when the task is cancelled while waiting, and
    /// `URLError(.timedOut)` when `deadline` passes first.
    ///
    /// Returns the origin whose place was taken (to `release` when done), or `nil` when there is no limit; without
    /// one, `url` is not read (the center's URL may be text, parsed when read).
    func enter(
        _ url: @autoclosure () -> URL?, deadline: Moment?, cancellation: EngineCancellation? = nil
    ) async throws -> Origin? {
        guard let limit else { return nil }
        let key = Self.origin(of: url())
        let id = state.withLock { state -> UInt64? in
            if Self.takePlace(&state.running[key, default: 0], limit: limit) { return nil }
            state.nextID += 1
            return state.nextID
        }
        guard let id else { return key }
        let signalKey = cancellation?.add { [weak self] in self?.abandon(id, key: key, with: CancellationError()) }
        defer { cancellation?.remove(signalKey) }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                state.withLock { state in
                    state.lines[key, default: Line()].order.append(id)
                    state.lines[key]!.waiters[id] = continuation
                }
                if Task.isCancelled || cancellation?.isCancelled == true {
                    abandon(id, key: key, with: CancellationError())
                }
                if let deadline {
                    let seconds = max(0, (deadline - Moment.now).seconds)
                    DispatchQueue.global().asyncAfter(deadline: .now() + seconds) { [weak self] in
                        self?.abandon(
                            id, key: key,
                            with: URLError(
                                .timedOut,
                                userInfo: [
                                    NSLocalizedDescriptionKey: "the exchange did not start within its total timeout: "
                                        + "it waited for one of the \(limit) connections to its host"
                                ]))
                    }
                }
            }
        } onCancel: {
            abandon(id, key: key, with: CancellationError())
        }
        return key
    }

    /// Counts one more exchange when there is room (one lookup of the origin, not two).
    private static func takePlace(_ running: inout Int, limit: Int) -> Bool {
        guard running < limit else { return false }
        running += 1
        return true
    }

    /// Ends a wait that is still pending; a waiter already let in keeps its place.
    private func abandon(_ id: UInt64, key: Origin, with error: any Error) {
        let waiter = state.withLock { state in state.lines[key]?.waiters.removeValue(forKey: id) }
        waiter?.resume(throwing: error)
    }

    /// Gives a freed place to the first waiter, or frees it.
    private func release(_ key: Origin, answered: Bool) {
        let next = state.withLock { state -> CheckedContinuation<Void, any Error>? in
            if answered, state.answered.count < Self.answeredLimit { state.answered.insert(key) }
            // Nobody waits anywhere, the usual case: no lookup of the line at all.
            if !state.lines.isEmpty, let index = state.lines.index(forKey: key) {
                if let first = state.lines.values[index].popFirst() {
                    if state.lines.values[index].waiters.isEmpty { state.lines.remove(at: index) }
                    return first
                }
                state.lines.remove(at: index)
            }
            if let index = state.running.index(forKey: key) {
                let running = state.running.values[index] - 1
                if running > 0 { state.running.values[index] = running } else { state.running.remove(at: index) }
            }
            return nil
        }
        next?.resume()
    }
}
