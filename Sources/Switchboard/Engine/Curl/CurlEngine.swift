import CCurlShim
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// An engine on the system libcurl, loaded at run time: no headers at build time, no link dependency.
///
/// One thread owns a libcurl multi handle and drives every transfer; requests are handed to it and resumed through
/// continuations, and cancelling the Swift task removes the transfer at once. Redirects are followed by the engine
/// with the same rules as `URLSessionEngine` (credentials stay with their origin, `307`/`308` keep their body);
/// `timeout` is an idle limit (no byte for that long) and `totalTimeout` a limit on the whole exchange. A download
/// into a file is written in libcurl's own callback, so a slow disk slows the transfer instead of filling memory.
///
/// ```swift
/// let engine = try CurlEngine()
/// Center.shared.setup { $0.engine = engine }
/// ```
public final class CurlEngine: Engine {
    private let worker: CurlWorker
    /// The system's directory of certificate authorities, which a trust policy `.adding(_:)` roots keeps beside its
    /// own file (`nil` when there is none).
    private let systemRoots: String?
    private let cookies: HTTPCookieStorage?
    /// Whether it keeps and sends cookies (for `dump`).
    var keepsCookies: Bool { cookies != nil }
    private let queue: HostQueue

    /// The most exchanges with one host (scheme, host and port) at a time, or `nil` for no limit (the default:
    /// libcurl opens connections as they are needed, and multiplexes HTTP/2 streams on one). Further requests wait
    /// in the engine; the wait counts against `totalTimeout`, not against the idle `timeout`.
    public var maximumConnectionsPerHost: Int? { queue.limit }

    /// Loads libcurl (once per process) and starts the engine's thread.
    ///
    /// - Throws: `HTTPError` with code `.unsupported` when libcurl is missing, too old (7.68 is needed) or numbers
    ///   its options differently.
    ///
    /// What TLS trusts and presents is a center's `trustPolicies`, per host, which this engine applies in full.
    ///
    /// - Parameters:
    ///   - cookies: where cookies are kept and taken from, as URLSession does; `nil` sends and keeps none.
    ///   - maximumConnectionsPerHost: the most exchanges with one host at a time (at least 1), or `nil` for no
    ///     limit; see the property of that name.
    public convenience init(
        cookies: HTTPCookieStorage? = .shared, maximumConnectionsPerHost: Int? = nil
    ) throws(HTTPError) {
        try self.init(
            cookies: cookies, maximumConnectionsPerHost: maximumConnectionsPerHost,
            systemRoots: CurlLibrary.shared.get().systemRoots)
    }

    /// An engine whose system authorities are those in `systemRoots` (a directory as `openssl rehash` makes), for
    /// tests.
    init(cookies: HTTPCookieStorage?, maximumConnectionsPerHost: Int?, systemRoots: String?) throws(HTTPError) {
        _ = try CurlLibrary.shared.get()
        self.systemRoots = systemRoots
        self.cookies = cookies
        queue = HostQueue(limit: maximumConnectionsPerHost)
        worker = CurlWorker()
    }

    /// The version of the libcurl in use, e.g. `7.88.1`, or `nil` when it cannot be loaded.
    public static var libraryVersion: String? {
        try? CurlLibrary.shared.get().version
    }

    /// Whether `CurlEngine` can run here: libcurl 7.68 or newer loads. When it cannot, `unavailableReason` says why
    /// and `CurlEngine()` throws that reason.
    public static var isAvailable: Bool {
        libraryVersion != nil
    }

    /// Why `CurlEngine` cannot run here (libcurl missing, too old, or numbering its options differently), or `nil`
    /// when it can.
    public static var unavailableReason: String? {
        if case .failure(let error) = CurlLibrary.shared { error.message } else { nil }
    }

    deinit {
        worker.shutdown()
    }

    /// `true`: `perform` stops when the request's `cancellation` fires.
    public var honoursCancellation: Bool { true }

    /// `true`: the engine holds `maxReceiveBytesPerSecond` chunk by chunk (pausing the transfer, so the server is
    /// slowed by TCP and memory stays bounded; only the first tenth of a second's worth, at most 16 KiB, may come
    /// early), and libcurl holds `maxSendBytesPerSecond` (CURLOPT_MAX_SEND_SPEED_LARGE).
    public var honoursRateLimits: Bool { true }

    /// `true`: a stream's body goes to its receiver chunk by chunk, and the transfer pauses while the stream's
    /// buffer is full (the server is slowed by TCP; memory stays bounded).
    public var streamsResponses: Bool { true }

    /// `true`: the engine follows redirects itself (libcurl follows none), each as the policy decides.
    public var honoursRedirectPolicy: Bool { true }

    /// `true`: each connection is made with its host's `EngineRequest.trustPolicy`, all of it.
    public var honoursTrustPolicy: Bool { true }

    /// Performs one exchange, following redirects.
    public func perform(
        _ request: EngineRequest,
        progress: @escaping @Sendable (TransferProgress) -> Void
    ) async throws -> EngineResponse {
        try await queue.admit(request) { deadline in try await follow(request, deadline: deadline, progress: progress) }
    }

    /// The exchange and the redirects after it, each with what is left of the total timeout.
    private func follow(
        _ request: EngineRequest, deadline: Moment?,
        progress: @escaping @Sendable (TransferProgress) -> Void
    ) async throws -> EngineResponse {
        var current = request
        let ownCookieHeader = request.headers["Cookie"] != nil
        let start = Moment.now
        let policy = request.redirectPolicy
        for redirects in 0...policy.maxRedirects {
            let began = redirects == 0 ? start : Moment.now
            if let deadline { current.totalTimeout = HostQueue.remaining(until: deadline) }
            var sent = current
            // Looked up for the URL as it is sent (`127.1` is sent to `127.0.0.1`), as URLSessionEngine does.
            if let cookies, !ownCookieHeader,
                let field = CookieRules.requestField(for: sent.url.map(URLComposition.canonicalizing), in: cookies)
            {
                sent.headers["Cookie"] = field
            }
            var response: EngineResponse
            do {
                response = try await exchange(sent, progress: progress)
            } catch let stale as StaleConnection {
                if let deadline { sent.totalTimeout = HostQueue.remaining(until: deadline) }
                response = try await exchange(sent, progress: progress, after: stale)
            }
            if redirects > 0 { Self.shiftMetrics(of: &response, by: began - start, redirects: redirects) }
            // The response arrived whole, and its head is sound (the transfer refused one that is not): its cookies
            // are kept (a stream's were, as it opened). An exchange that failed keeps none, on either engine.
            if let cookies, let fields = response.setCookieFields, let url = response.url {
                CookieRules.store(fields, for: url, in: cookies)
            }
            guard let proposed = Redirects.next(after: response, for: current) else { return consume response }
            let next: EngineRequest
            switch Redirects.step(
                proposed, status: response.status, headers: response.headers ?? HTTPHeaders(), from: current.url,
                number: redirects + 1, policy: policy)
            {
            case .answer: return consume response
            case .fail(let error): throw error
            case .follow(let chosen): next = chosen
            }
            if let refusal = Redirects.refusal(from: current.url, to: next.url, for: current) { throw refusal }
            request.onEvent?(.redirected(status: response.status, from: current.url, to: next.url))
            current = next
        }
        throw Redirects.tooMany(policy.maxRedirects)
    }

    /// The metrics of an exchange after redirects, as from the first request. Out of line: the 200-byte copies of
    /// the metrics would otherwise sit in `follow`'s frame, which every request allocates.
    @inline(never)
    private static func shiftMetrics(of response: inout EngineResponse, by offset: Duration, redirects: Int) {
        response.metrics = response.metrics?.starting(earlier: offset, redirects: redirects)
    }

    /// One request and its answer; `after` a `StaleConnection`, the same request again, on a new connection.
    private func exchange(
        _ request: EngineRequest, progress: @escaping @Sendable (TransferProgress) -> Void,
        after stale: StaleConnection? = nil
    ) async throws -> EngineResponse {
        let transfer = CurlTransfer(
            request: request, systemRoots: systemRoots, cookies: cookies, worker: worker, progress: progress)
        if let stale { transfer.sendAgain(after: stale) }
        let worker = worker
        // Cancelled by the task or by the request's signal, whichever comes first; both may come, and the worker
        // ignores a cancel for a transfer it no longer runs, so no once-guard (nor its allocation) is needed, as
        // `EngineRequest.withCancellationHandler` would add. The handlers capture the transfer alone: a closure
        // holding one object needs no context of its own.
        let key = request.cancellation?.add { transfer.cancel() }
        defer { request.cancellation?.remove(key) }
        return try await withTaskCancellationHandler {
            // Unchecked: `finish` resumes it exactly once (it takes it out first), and the checked kind allocates a
            // watchdog per request.
            try await withUnsafeThrowingContinuation { continuation in
                transfer.continuation = continuation
                worker.start(transfer)
            }
        } onCancel: {
            transfer.cancel()
        }
    }
}

/// The thread that owns the multi handle: it adds and removes transfers, runs libcurl, and finishes transfers.
final class CurlWorker: @unchecked Sendable {
    // Safety: `multi`, `running` and everything a `CurlTransfer` holds are only touched on the worker thread;
    // other threads reach it only through `inbox`, which is `Locked`, and `sb_multi_wakeup`, which libcurl documents
    // as callable from any thread. The stored properties are not checked for exclusivity at run time: one thread uses
    // them, and no access to one overlaps another access to it.
    private let multi: UnsafeMutableRawPointer
    @exclusivity(unchecked) private var running: [UnsafeMutableRawPointer: CurlTransfer] = [:]
    /// Easy handles reset after their transfer, for the next ones: setting up a fresh handle costs more than the
    /// rest of a small exchange's bookkeeping. At most `spareLimit` are kept.
    @exclusivity(unchecked) private var spareHandles: [CurlHandle] = []
    /// The running transfers with a receive limit, which the loop un-pauses when their held chunk is due; kept apart
    /// so that the loop visits no other transfer for it.
    @exclusivity(unchecked) private var paced: [UnsafeMutableRawPointer: CurlTransfer] = [:]
    private static let spareLimit = 64
    /// The header list of the last transfer configured, for the next one that sends the same fields.
    @exclusivity(unchecked) private var lastHeaders: CurlHeaderList?
    /// How many idle connections the multi handle keeps open for reuse. libcurl's default follows the number of
    /// transfers added, so it shrank whenever a burst ended and closed connections the next burst wanted.
    static let connectionCacheSize = 128
    /// When the running transfers are next checked for idleness (worker thread).
    @exclusivity(unchecked) private var nextIdleCheck = ContinuousClock.now
    private let inbox = Locked(CurlInbox<CurlTransfer>())

    init() {
        multi = sb_multi_init()
        sb_multi_setopt_long(multi, CurlLibrary.MultiOption.maxConnects.rawValue, CurlWorker.connectionCacheSize)
        let thread = Thread { [self] in loop() }
        thread.name = "Switchboard.CurlEngine"
        thread.start()
    }

    /// Closes the connections the multi handle keeps for reuse, and frees it. Here, not at the end of the loop: the
    /// worker is released only once its loop has ended (its thread holds it until then) and no other thread is in
    /// `post`, which may still be about to wake the multi handle after the loop has seen `stop`.
    deinit {
        sb_multi_cleanup(multi)
    }

    func start(_ transfer: CurlTransfer) {
        post { $0.starts.append(transfer) }
    }

    func cancel(_ transfer: CurlTransfer) {
        post { $0.cancels.append(transfer) }
    }

    /// Un-pauses a transfer whose request body stream has bytes again, or whose stream's reader has caught up.
    func resume(_ transfer: CurlTransfer) {
        post { $0.resumes.append(transfer) }
    }

    func shutdown() {
        post { $0.stop = true }
    }

    /// Hands something to the worker, and wakes it when it waits (libcurl's wake-up may be called from any thread).
    private func post(_ add: (inout CurlInbox<CurlTransfer>) -> Void) {
        if inbox.withLock({ $0.post(add) }) { sb_multi_wakeup(multi) }
    }

    private func loop() {
        // The inbox's lists are swapped with these (emptied, their storage kept), not replaced by new ones: a list
        // that grows from empty for every request costs an allocation each time.
        var starts: [CurlTransfer] = []
        var cancels: [CurlTransfer] = []
        var resumes: [CurlTransfer] = []
        while true {
            let stop = inbox.withLock { $0.take(&starts, &cancels, &resumes) }
            defer {
                // A burst's worth is kept, up to a bound: a 10,000-member batch's list is not held for good. Most
                // turns of the loop take nothing, and emptying an empty list is not free.
                if !starts.isEmpty { starts.removeAll(keepingCapacity: starts.capacity <= 256) }
                if !cancels.isEmpty { cancels.removeAll(keepingCapacity: cancels.capacity <= 256) }
                if !resumes.isEmpty { resumes.removeAll(keepingCapacity: resumes.capacity <= 256) }
            }
            for transfer in starts {
                if transfer.cancelledEarly { transfer.finish(.failure(CancellationError())); continue }
                guard let handle = spareHandles.popLast() ?? CurlHandle.make() else {
                    transfer.finish(
                        .failure(
                            URLError(
                                .unknown,
                                userInfo: [
                                    NSLocalizedDescriptionKey:
                                        "libcurl could not create a transfer handle (out of memory?)"
                                ])))
                    continue
                }
                do {
                    try transfer.configure(handle, headers: &lastHeaders) {
                        { [weak self, weak transfer] in
                            if let self, let transfer { self.resume(transfer) }
                        }
                    }
                    running[handle.easy] = transfer
                    if transfer.request.maxReceiveBytesPerSecond != nil { paced[handle.easy] = transfer }
                    sb_multi_add_handle(multi, handle.easy)
                } catch {
                    recycle(transfer)
                    transfer.finish(.failure(error))
                }
            }
            for transfer in cancels {
                if let easy = transfer.easy, running.removeValue(forKey: easy) != nil {
                    sb_multi_remove_handle(multi, easy)
                    transfer.cancelled()
                    recycle(transfer)
                } else {
                    transfer.cancelledEarly = true
                }
            }
            for transfer in resumes {
                if let easy = transfer.easy, running[easy] === transfer { transfer.resumeTransfer() }
            }
            if stop && running.isEmpty { break }
            var nextDue: ContinuousClock.Instant?
            if !paced.isEmpty {
                let now = ContinuousClock.now
                for transfer in paced.values {
                    transfer.resumeReceivingIfDue(at: now)
                    if let due = transfer.receiveDue { nextDue = min(nextDue ?? due, due) }
                }
            }
            var active: Int32 = 0
            sb_multi_perform(multi, &active)
            var easy: UnsafeMutableRawPointer?
            var code: Int32 = 0
            while sb_multi_next_done(multi, &easy, &code) == 1, let done = easy {
                guard let transfer = running.removeValue(forKey: done) else { continue }
                sb_multi_remove_handle(multi, done)
                transfer.complete(code: code)
                recycle(transfer)
            }
            let now = ContinuousClock.now
            if now >= nextIdleCheck {
                nextIdleCheck = now + .milliseconds(50)
                for (easy, transfer) in running where transfer.isIdle(at: now) {
                    running.removeValue(forKey: easy)
                    sb_multi_remove_handle(multi, easy)
                    transfer.idledOut()
                    recycle(transfer)
                }
            }
            var timeout: Int32 = running.isEmpty ? 1000 : 100
            if let nextDue {
                // Wake when a paced transfer's chunk is due.
                let wait = max(0, (nextDue - ContinuousClock.now).seconds * 1000)
                timeout = min(timeout, Int32(wait.rounded(.up)))
            }
            // Waits only with the inbox empty: what came during this turn is taken at once, and what comes during
            // the wait wakes it.
            if inbox.withLock({ $0.wait(stopSeen: stop) }) {
                var descriptors: Int32 = 0
                sb_multi_poll(multi, timeout, &descriptors)
            }
        }
        for handle in spareHandles { handle.destroy() }
        spareHandles = []
    }

    /// Takes a finished transfer's handle (out of the multi handle), resets it when the transfer says so, and keeps
    /// it for the next transfer.
    private func recycle(_ transfer: CurlTransfer) {
        guard let handle = transfer.releaseHandle() else { return }
        paced[handle.easy] = nil
        guard spareHandles.count < CurlWorker.spareLimit else {
            handle.destroy()
            return
        }
        if transfer.handleNeedsReset { handle.reset() }
        spareHandles.append(handle)
    }
}

/// What other threads hand the worker, and whether it must be woken for it: a value, so that the rule is tested
/// without a thread (`CurlWorker` keeps it in a lock).
struct CurlInbox<Item> {
    var starts: [Item] = []
    var cancels: [Item] = []
    var resumes: [Item] = []
    var stop = false
    /// Whether the worker waits in `sb_multi_poll` (or is about to) with nothing left in the inbox, and must be
    /// woken for what comes next. The first to add something then wakes it and clears this; while it is clear, the
    /// worker is awake and takes the inbox before it waits again, so nobody wakes it (a wake-up is a system call on
    /// the caller's side and a turn of the loop on the worker's).
    var waiting = false

    /// The worker, awake: takes the lists (swapped with its own emptied ones; see `CurlWorker.loop`) and returns
    /// `stop`. It is no longer waiting, whatever woke it (a post, or libcurl's sockets), so nothing posted before it
    /// waits again wakes it.
    mutating func take(_ starts: inout [Item], _ cancels: inout [Item], _ resumes: inout [Item]) -> Bool {
        swap(&self.starts, &starts)
        swap(&self.cancels, &cancels)
        swap(&self.resumes, &resumes)
        waiting = false
        return stop
    }

    /// Adds something with `add`; returns whether the worker must be woken for it.
    mutating func post(_ add: (inout CurlInbox) -> Void) -> Bool {
        add(&self)
        defer { waiting = false }
        return waiting
    }

    /// The worker, about to wait: whether it may (nothing was added since it took the inbox, when it saw `stop` as
    /// `stopSeen`); if so it is marked as waiting, and the next `post` wakes it.
    mutating func wait(stopSeen: Bool) -> Bool {
        guard starts.isEmpty, cancels.isEmpty, resumes.isEmpty, stop == stopSeen else { return false }
        waiting = true
        return true
    }
}
