import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The default engine, on `URLSession`, with the traps of URLSession on Linux handled.
///
/// On Linux (swift-corelibs-foundation) URLSession hangs forever on a `401` with `WWW-Authenticate: Basic` unless a
/// delegate answers the challenge, forwards `Authorization` and `Cookie` to other hosts on redirects, drops the body
/// of a `307`/`308` redirect, does not enforce a total timeout, does not count received bytes, and has no
/// backpressure. This engine answers every challenge (the 401 comes back as a response, with its body), strips credentials when a
/// redirect leaves the origin, re-sends the body itself on `307`/`308`, enforces `totalTimeout`, counts bytes for
/// progress, and fetches downloads into files in segments so that their memory stays bounded.
///
/// ```swift
/// Center.shared.setup { $0.engine = URLSessionEngine(configuration: .ephemeral) }
/// ```
public final class URLSessionEngine: Engine {
    /// The engine centers use unless configured otherwise; one session, so connections are shared.
    public static let shared = URLSessionEngine()

    let session: URLSession
    /// Where the engine takes each request's cookies from itself (see `CookieRules`), or `nil` when URLSession does
    /// (Apple platforms) or nobody does (`httpShouldSetCookies` off).
    let cookies: HTTPCookieStorage?
    /// Where the engine keeps the cookies responses set itself, or `nil` when URLSession does (Apple platforms) or
    /// nobody does (no storage, or a `httpCookieAcceptPolicy` of `.never`).
    let keptCookies: HTTPCookieStorage?
    /// Whether it keeps or sends cookies itself (for `dump`; on Apple platforms URLSession does).
    var keepsCookies: Bool { cookies != nil || keptCookies != nil }
    let delegate: SessionDelegate
    let downloadSegmentSize: Int?
    let queue: HostQueue

    /// The most exchanges with one host (scheme, host and port) at a time, from the configuration's
    /// `httpMaximumConnectionsPerHost` (6 unless set). Further requests wait in the engine, not in URLSession, so
    /// the wait does not count against their idle `timeout` (URLSession would count it); it counts against
    /// `totalTimeout`.
    public var maximumConnectionsPerHost: Int { queue.limit ?? 0 }

    /// Creates an engine with its own session.
    ///
    /// - Parameters:
    ///   - configuration: copied; its URL cache is turned off (URLSession on Linux never stores responses, so
    ///     Switchboard does its own caching the same way everywhere).
    ///   - downloadSegmentSize: downloads into files are fetched in `Range` segments of at most this many bytes,
    ///     one after the other, which bounds the memory a download can take where URLSession can deliver a body
    ///     faster than it is written. `nil` fetches each download in one request, without `Range` (as CurlEngine
    ///     does). On Linux, where each chunk is written in URLSession's own thread before the next is read and
    ///     nothing piles up, `nil` is the default (a server with a careless `Range` implementation fails no
    ///     download there), and every segment is this size when one is given. On Apple platforms the default is
    ///     16 MiB: the first segment is 2 MiB (or this size, if smaller) and each next one is sized from how the last
    ///     arrived, small on a fast, near network, up to this size on a distant one. A download paced by
    ///     `maxReceiveBytesPerSecond` is fetched in segments whatever this is.
    ///
    /// Set `httpMaximumConnectionsPerHost` on the configuration to change how many exchanges run with one host at a
    /// time (see `maximumConnectionsPerHost`). Cookies live in its `httpCookieStorage`: sent unless
    /// `httpShouldSetCookies` is off, kept from responses unless `httpCookieAcceptPolicy` is `.never` (on Linux the
    /// engine chooses and keeps them itself, by RFC 6265, in place of URLSession).
    public init(
        configuration: URLSessionConfiguration = .default,
        downloadSegmentSize: Int? = URLSessionEngine.defaultDownloadSegmentSize
    ) {
        self.downloadSegmentSize = downloadSegmentSize
        let configuration = configuration.copy() as! URLSessionConfiguration
        let perHost = max(1, configuration.httpMaximumConnectionsPerHost)
        configuration.httpMaximumConnectionsPerHost = perHost
        queue = HostQueue(limit: perHost)
        configuration.urlCache = nil
        configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
        #if canImport(FoundationNetworking)
        // URLSession on Linux sends every cookie of the host, `Secure` over plain http and whatever the path, and
        // replaces a request's own `Cookie` field with them: the engine chooses them instead. It stores the cookies
        // responses set itself too (see `CookieRules.store`): URLSession gave a cookie without a `Path` the path `/`,
        // and dropped those of fields spelled `set-cookie`.
        // It keeps them by the configuration's settings, as URLSession would: sent unless `httpShouldSetCookies` is
        // off, kept unless the policy is `.never` (URLSession on Linux kept them while sending none).
        let storage = configuration.httpCookieStorage
        cookies = configuration.httpShouldSetCookies ? storage : nil
        keptCookies = configuration.httpCookieAcceptPolicy == .never ? nil : storage
        configuration.httpShouldSetCookies = false
        configuration.httpCookieStorage = nil
        // Without a policy of `.never`, URLSession reads every line of every response head as a cookie (a string made
        // of the line, split, trimmed through NSString, handed to `HTTPCookie`) before it finds no storage to put it
        // in: about 7% of a small GET's CPU, in the work queue every transfer of the process shares. It reads the
        // policy nowhere else.
        configuration.httpCookieAcceptPolicy = .never
        #else
        cookies = nil
        keptCookies = nil
        #endif
        delegate = SessionDelegate()
        session = URLSession(configuration: configuration, delegate: delegate, delegateQueue: Self.delegateQueue())
    }

    /// The queue URLSession calls the delegate on. On Linux, none of its own: URLSession's work queue, where the
    /// data arrived, calls the delegate directly (see `InlineDelegateQueue`). On Apple platforms, a serial queue of
    /// URLSession's making.
    private static func delegateQueue() -> OperationQueue? {
        #if canImport(FoundationNetworking)
        InlineDelegateQueue()
        #else
        nil
        #endif
    }

    /// The `downloadSegmentSize` an engine has unless given one: `nil` on Linux (one request per download), 16 MiB
    /// on Apple platforms.
    public static let defaultDownloadSegmentSize: Int? = delegateRunsInWorkQueue ? nil : 16 << 20

    /// Whether the delegate runs in URLSession's own work queue (`delegateQueue()`), so that a chunk is written
    /// before the next one is read: what download segments are sized by (`Segments.adapts`), and whether they are
    /// needed at all.
    static let delegateRunsInWorkQueue = delegateQueue() != nil

    deinit {
        session.finishTasksAndInvalidate()
    }

    /// `true`: `perform` stops when the request's `cancellation` fires.
    public var honoursCancellation: Bool { true }

    /// `true`, within what URLSession allows: a download into a file keeps `maxReceiveBytesPerSecond` on average by
    /// pacing its `Range` segments (approximate; a server that ignores ranges sends the file unpaced). Any other
    /// request with a limit fails with `HTTPError.Code.unsupported`.
    public var honoursRateLimits: Bool { true }

    /// `true`: on Apple platforms the session delegate evaluates each host's `EngineRequest.trustPolicy`; on Linux,
    /// where URLSession cannot evaluate trust, a request (or a redirect) to a host with a policy fails with
    /// `HTTPError.Code.unsupported`, naming it. Use CurlEngine there.
    public var honoursTrustPolicy: Bool { true }

    /// `true`: a stream's body goes to its receiver chunk by chunk. URLSession cannot pause a transfer on Linux, so
    /// a reader that falls more than `Request.streamBufferSize` behind ends the stream with `.streamOverflow`.
    public var streamsResponses: Bool { true }

    /// `true`: each redirect URLSession proposes goes to the session delegate, which decides it as the policy does.
    public var honoursRedirectPolicy: Bool { true }

    /// Performs one exchange on the session.
    public func perform(
        _ request: EngineRequest,
        progress: @escaping @Sendable (TransferProgress) -> Void
    ) async throws -> EngineResponse {
        if request.maxSendBytesPerSecond != nil {
            throw HTTPError(
                .unsupported,
                "URLSessionEngine cannot limit upload speed (URLSession has no such "
                    + "control); use CurlEngine for maxUploadBytesPerSecond")
        }
        if request.maxReceiveBytesPerSecond != nil, Segments(for: request, size: downloadSegmentSize) == nil {
            throw HTTPError(
                .unsupported,
                "URLSessionEngine limits download speed only for GET downloads into a "
                    + "file, by pacing their Range segments; use CurlEngine for maxBytesPerSecond on other requests")
        }
        #if canImport(FoundationNetworking)
        if let url = request.url, URLComposition.hasIPLiteralHost(url) { throw Self.ipLiteralRefusal(url) }
        if let refusal = Self.trustRefusal(request.trust, request.url) { throw refusal }
        #endif
        // URLSession on Linux performs a request even when the task was cancelled before the call: `admit` checks.
        return try await queue.admit(request) { deadline in
            var request = request
            if let deadline { request.totalTimeout = HostQueue.remaining(until: deadline) }
            return try await exchange(request, progress: progress)
        }
    }

    #if canImport(FoundationNetworking)
    /// URLSession on Linux refuses every URL whose host is an IPv6 address (`http://[::1]/`) as a bad URL, before it
    /// connects: FoundationNetworking compares the URL's host, without its brackets, to libcurl's, with them.
    static func ipLiteralRefusal(_ url: URL) -> HTTPError {
        HTTPError(
            .unsupported,
            "URLSession on Linux cannot send to an IPv6 address in a URL (\(url.host ?? "")): it refuses the URL; "
                + "CurlEngine can")
    }

    /// URLSession on Linux cannot evaluate trust (its delegate is never asked about the server's chain, nor for a
    /// client certificate): a request (or a redirect's hop) to a host with a trust policy fails rather than go with
    /// the system's trust.
    static func trustRefusal(_ trust: TrustTable?, _ url: URL?) -> HTTPError? {
        guard let policy = trust?.policy(for: url) else { return nil }
        return HTTPError(
            .unsupported,
            "URLSession on Linux cannot apply the trust policy for \(url?.host ?? "the host") (\(policy)); "
                + "CurlEngine can")
    }
    #endif

    private func exchange(
        _ request: EngineRequest, progress: @escaping @Sendable (TransferProgress) -> Void
    ) async throws -> EngineResponse {
        let transfer = SessionTransfer(request: request, progress: progress, engine: self)
        return try await request.withCancellationHandler {
            // Unchecked: `finish` takes it out under the transfer's lock before resuming it, so it is resumed
            // exactly once, and the checked kind allocates a watchdog for every request.
            try await withUnsafeThrowingContinuation { continuation in
                transfer.start(continuation)
            }
        } onCancel: {
            transfer.stop(.cancelled)
        }
    }
}

/// Where a `URLSessionEngine` makes the calls into URLSession that can wait: creating, resuming and cancelling a
/// task.
///
/// On Linux each of them waits (`sync`) for URLSession's work queue: one serial queue for every session of the
/// process, which also runs libcurl, copies every chunk received and reads stream bodies. During large transfers
/// that wait is long, and a stream body that is slow to read makes it as long as the read. The calls used to be made
/// from the request's task or a delegate callback, both on the threads of the shared pool (on Linux, Swift's tasks
/// and Dispatch's global queues share about one thread a core), so each waiting call held up a share of all the
/// process's tasks. They go to threads of their own instead (`SessionCallThread`): those wait, the pool's threads do
/// not. Apple platforms keep making the calls in place: there the pool is not shared with Dispatch's queues, and
/// these threads answer a fault measured on Linux.
///
/// Every start goes there, even that of a small request while no large transfer runs, where the wait would usually
/// be short and the hand-over costs more (10-15% of a sequential small GET's CPU): a start made in place waits, on a
/// thread of the pool, for everything the work queue has to do before it, which under load (many transfers, large
/// bodies) is long enough to hold up every task of the process. Full runs of the test suite with starts in place
/// failed a timing test after such a stall (1 of 5 runs, beside 6 of 6 clean runs without).
enum SessionCalls {
    /// Makes `call` for `transfer`: a transfer's calls are made in the order they come, on one thread; different
    /// transfers' calls wait side by side.
    static func run(for transfer: AnyObject, _ call: @escaping @Sendable () -> Void) {
        #if canImport(Darwin)
        call()
        #else
        let threads = SessionCallThread.all
        threads[Int(bitPattern: UInt(bitPattern: ObjectIdentifier(transfer).hashValue) % UInt(threads.count))]
            .enqueue(call)
        #endif
    }
}

#if !canImport(Darwin)
/// A thread that makes `URLSessionEngine`'s waiting calls into URLSession, in the order they come.
///
/// A few for the process, shared by every engine, as URLSession's work queue is: a transfer's calls always go to the
/// same one (a cancel after the start it cancels), and several transfers' starts wait for the work queue side by
/// side, as they did from the pool's threads (with one thread, a start waited behind every start queued before it:
/// small requests sent during eight large downloads completed half as often). Threads, not serial dispatch queues: a
/// queue's work moves between Dispatch's threads, and URLSession's work queue, whose thread copies every chunk
/// received, then ran on more threads in turn, each allocating from its own C heap arena (a 1 GiB download peaked
/// 4-7 MiB higher).
final class SessionCallThread: @unchecked Sendable {
    // Safety: `calls` is read and changed only while `condition` is locked; the thread takes the calls out under it
    // and runs them after unlocking.
    static let all = (0..<4).map { _ in SessionCallThread() }

    /// What the threads are called (in a debugger, `top -H`, `/proc/<pid>/task/*/comm`).
    static let threadName = "sb.session-call"

    private let condition = NSCondition()
    private var calls: [@Sendable () -> Void] = []

    private init() {
        BlockingWork.startThread(named: SessionCallThread.threadName) { [self] in
            while true {
                condition.lock()
                while calls.isEmpty { condition.wait() }
                let due = calls
                calls.removeAll(keepingCapacity: true)
                condition.unlock()
                for call in due { call() }
            }
        }
    }

    func enqueue(_ call: @escaping @Sendable () -> Void) {
        condition.lock()
        calls.append(call)
        condition.signal()
        condition.unlock()
    }
}
#endif

#if canImport(FoundationNetworking)
/// A delegate queue that runs what is added at once, in the adding thread: URLSession on Linux adds every delegate
/// call (a response head, each chunk of a body, a completion) from its work queue, as it happens there.
///
/// With a queue of URLSession's own, each call was an operation handed to a thread of the shared pool, woken for it
/// (three times or more for a request with a body or watched progress; raw URLSession's `async` calls hand over
/// nothing: they complete in the work queue), and a download had no backpressure: its chunks piled up in memory while
/// an earlier one was written. Inline, a chunk is written before libcurl reads the next one, as URLSession's own
/// download tasks write theirs.
///
/// What runs here must not wait on the work queue: a delegate call never calls a task's `resume()` or `cancel()`
/// (which wait for the work queue, where the call runs) directly, but through `SessionCalls`, on a thread of its own.
/// The completion handlers URLSession passes to the delegate go back to the work queue asynchronously, except the
/// answer to an authentication challenge, whose `.cancelAuthenticationChallenge` calls `cancel()`: the delegate gives
/// that answer through `SessionCalls` too.
final class InlineDelegateQueue: OperationQueue, @unchecked Sendable {
    // Safety: no stored state of its own; OperationQueue is Sendable, and nothing is ever queued.
    override func addOperation(_ block: @escaping @Sendable () -> Void) {
        block()
    }

    override func addOperation(_ operation: Operation) {
        operation.start()
    }
}
#endif

/// The session delegate: routes every task event to the transfer that owns the task.
final class SessionDelegate: NSObject, URLSessionDataDelegate, Sendable {
    private let transfers = Locked<[Int: SessionTransfer]>([:])

    func register(_ transfer: SessionTransfer, for task: URLSessionTask) {
        transfers.withLock { $0[task.taskIdentifier] = transfer }
    }

    private func transfer(for task: URLSessionTask) -> SessionTransfer? {
        transfers.withLock { $0[task.taskIdentifier] }
    }

    func urlSession(
        _ session: URLSession, dataTask: URLSessionDataTask, didReceive response: URLResponse,
        completionHandler: @escaping @Sendable (URLSession.ResponseDisposition) -> Void
    ) {
        transfer(for: dataTask)?.received(response)
        completionHandler(.allow)
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        transfer(for: dataTask)?.received(data)
    }

    func urlSession(
        _ session: URLSession, task: URLSessionTask, didSendBodyData bytesSent: Int64, totalBytesSent: Int64,
        totalBytesExpectedToSend: Int64
    ) {
        transfer(for: task)?.sent(totalBytesSent, of: totalBytesExpectedToSend)
    }

    func urlSession(
        _ session: URLSession, task: URLSessionTask,
        needNewBodyStream completionHandler: @escaping @Sendable (InputStream?) -> Void
    ) {
        completionHandler(transfer(for: task)?.newBodyStream())
    }

    func urlSession(
        _ session: URLSession, task: URLSessionTask, willPerformHTTPRedirection response: HTTPURLResponse,
        newRequest request: URLRequest, completionHandler: @escaping @Sendable (URLRequest?) -> Void
    ) {
        // `nil` means "do not follow" (the transfer re-sends a 307/308 itself, or refuses the target); only a task
        // that belongs to no transfer follows URLSession's own proposal.
        guard let transfer = transfer(for: task) else {
            completionHandler(request)
            return
        }
        completionHandler(transfer.redirect(response, to: request))
    }

    func urlSession(
        _ session: URLSession, task: URLSessionTask, didReceive challenge: URLAuthenticationChallenge,
        completionHandler: @escaping @Sendable (URLSession.AuthChallengeDisposition, URLCredential?) -> Void
    ) {
        #if canImport(Security)
        if answeredTrust(challenge, for: transfer(for: task), completionHandler: completionHandler) { return }
        #endif
        // Without an answer URLSession on Linux waits forever. Keep the 401 and end the task; the transfer reports
        // the 401 as the response, as every other platform does.
        let transfer = transfer(for: task)
        transfer?.challenged(challenge.failureResponse as? HTTPURLResponse, url: task.currentRequest?.url)
        // URLSession on Linux answers this by calling the task's `cancel()`, which waits for the work queue, where
        // this call runs (see `InlineDelegateQueue`): the answer goes from a thread of its own.
        SessionCalls.run(for: transfer ?? task) { completionHandler(.cancelAuthenticationChallenge, nil) }
    }

    /// Forgets a task that completes through its completion handler (URLSession then calls no completion delegate
    /// method).
    func unregister(_ task: URLSessionTask) {
        transfers.withLock { _ = $0.removeValue(forKey: task.taskIdentifier) }
    }

    /// Called on Apple platforms before the task completes; URLSession on Linux never calls it.
    func urlSession(_ session: URLSession, task: URLSessionTask, didFinishCollecting metrics: URLSessionTaskMetrics) {
        transfer(for: task)?.collected(metrics)
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        let transfer = transfers.withLock { $0.removeValue(forKey: task.taskIdentifier) }
        transfer?.completed(error)
    }
}
