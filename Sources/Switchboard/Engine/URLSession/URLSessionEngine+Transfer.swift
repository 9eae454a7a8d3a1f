import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// One exchange on a `URLSessionEngine`, possibly across several tasks: a `307`/`308` is re-sent by hand, and a
/// download into a file is fetched in segments (see `Segments`).
final class SessionTransfer: Sendable {
    enum StopReason: Sendable {
        case cancelled
        case deadline
        case failed(any Error)
    }

    private struct State {
        var continuation: UnsafeContinuation<EngineResponse, any Error>?
        var task: URLSessionDataTask?
        var stopReason: StopReason?
        var response: HTTPURLResponse?
        var body = BodyAccumulator()
        var sink: FileSink?
        var counter = DownloadCounter()
        var challengeResponse: HTTPURLResponse?
        var pendingRedirect: URLRequest?
        var redirects = 0
        var segments: Segments?
        /// The wait before the next segment of a speed-limited download, while one is pending: a stop ends it.
        var pacing: UInt64?
        var pacingCount: UInt64 = 0
        /// When the first task started, for pacing.
        var started = ContinuousClock.now
        /// Whether the next task is a plain data task with a completion handler: URLSession then hands over the
        /// whole body once, instead of a delegate call for every chunk (on Apple platforms an operation-queue hop
        /// each). For in-memory `GET` and `HEAD` exchanges nobody watches the progress of. Redirect and challenge
        /// delegate calls still come.
        var quick = false
        /// A body that must go with a length (a multipart body), copied into a temporary file for
        /// `uploadTask(fromFile:)`, once for every send of this exchange; deleted when the exchange ends.
        var spooled: URL?
        /// Whether a redirect followed has dropped the body (the request became a `GET`).
        var bodyDropped = false
        /// Whether the current task's redirect was declined, so that the redirect response itself is the answer: a
        /// completion handler never gets its body (see `quickCompleted`).
        var redirectDeclined = false
        /// The body stream given to the current task. URLSession on Linux never closes it (a file stream would keep
        /// its descriptor), so the transfer does, when the task is over.
        var bodyStream: InputStream?
        /// Whether the current response's body goes to the request's stream receiver.
        var streaming = false
        /// What the transfer measures itself, for `TransferMetrics`: when the head of the response arrived, the
        /// body bytes received and sent, and URLSession's own task metrics where the platform collects them (Apple
        /// platforms; never on Linux).
        var firstByte: ContinuousClock.Instant?
        /// When the current task started, and when its head arrived with the bytes received before it: a segment's
        /// latency and speed, which size the next segment.
        var launched = ContinuousClock.now
        var headArrived: (at: ContinuousClock.Instant, bytesBefore: Int64)?
        var bytesReceived: Int64 = 0
        var bytesSent: Int64?
        var taskMetrics: URLSessionTaskMetrics?
        /// The request the current task was launched for, and how many redirects had been followed then: what is
        /// sent again when its connection turns out stale (see `sendAgain`).
        var launchedRequest: URLRequest?
        var redirectsAtLaunch = 0
        /// Whether the exchange sent a request again after a stale connection (once at most), and the upload
        /// progress reported before that, which the new send's progress must pass before it is reported.
        var sentAgain = false
        var sentFloor: Int64 = 0
    }

    private let request: EngineRequest
    private let progress: @Sendable (TransferProgress) -> Void
    private let session: URLSession
    private let delegate: SessionDelegate
    /// Where each request of the exchange takes its cookies from (see `URLSessionEngine.cookies`); `nil` when the
    /// request carries its own `Cookie` field.
    private let cookies: HTTPCookieStorage?
    /// Where the cookies responses set are kept (see `URLSessionEngine.keptCookies`), whatever the request's own
    /// fields.
    private let storage: HTTPCookieStorage?
    /// The engine's per-host queue, which knows the origins that answered before (see `sendAgain`).
    private let connections: HostQueue
    private let state = Locked(State())

    /// An exchange of `engine`'s: its session, delegate, cookie storages, segment size and per-host queue.
    init(
        request: EngineRequest, progress: @escaping @Sendable (TransferProgress) -> Void, engine: URLSessionEngine
    ) {
        self.request = request
        self.progress = progress
        session = engine.session
        delegate = engine.delegate
        connections = engine.queue
        cookies = request.headers["Cookie"] == nil ? engine.cookies : nil
        storage = engine.keptCookies
        let segmentSize = engine.downloadSegmentSize
        let quick =
            request.destination == .memory && !request.observesProgress && request.body == .none
            && (request.method == .get || request.method == .head)
            && request.maxReceiveBytesPerSecond == nil && request.receiver == nil && request.memoryLimit == nil
            // A policy's redirect that is the answer sends the request again through the delegate on Linux, which
            // would ask the policy twice.
            && request.redirectPolicy.isDefault
        state.withLock { state in
            state.segments = Segments(for: request, size: segmentSize)
            state.quick = quick
        }
    }

    deinit {
        // A body that was never taken gives its pooled block back; a spooled body never outlives its exchange.
        let spooled = state.withLock { state in
            state.body.reset()
            return state.spooled
        }
        if let spooled { try? FileManager.default.removeItem(at: spooled) }
    }

    // MARK: - Starting and stopping

    func start(_ continuation: UnsafeContinuation<EngineResponse, any Error>) {
        let stopped = state.withLock { state -> Bool in
            state.continuation = continuation
            return state.stopReason != nil
        }
        if stopped {
            finish(.failure(CancellationError()))
            return
        }
        if let totalTimeout = request.totalTimeout {
            DispatchQueue.global().asyncAfter(deadline: .now() + totalTimeout.seconds) { [weak self] in
                self?.stop(.deadline)
            }
        }
        let segments = state.withLock { state in
            state.started = .now
            return state.segments
        }
        let url = request.url.map(URLComposition.canonicalizing)
        let first = request.urlRequest(url: url) { fields in
            if let segments { Self.set(segments.range, for: "Range", in: &fields) }
            adjust(&fields, for: url)
        }
        launch(first, adjusted: true)
    }

    /// Starts a task for the request with this transfer's body (see `SessionCalls` for where); `adjusted` when the
    /// request is `outgoing` already.
    private func launch(_ urlRequest: URLRequest, adjusted: Bool = false) {
        SessionCalls.run(for: self) { [self] in launchNow(adjusted ? urlRequest : outgoing(urlRequest)) }
    }

    /// Starts a task for the request with this transfer's body. On Linux a body in memory, a file, and a stream of
    /// known length (a multipart body among them) go as a stream held to that length, with it as their
    /// `Content-Length` (see `lengthHeldTask`); on Apple platforms a file goes by `uploadTask(fromFile:)`.
    private func launchNow(_ urlRequest: URLRequest) {
        // Kept for a resend after a stale connection, which goes through `outgoing` again: the same fields, with the
        // cookies read anew.
        let launched = urlRequest
        var urlRequest = urlRequest
        let task: URLSessionDataTask
        switch request.body {
        case .none where state.withLock({ $0.quick }):
            // The handler holds the transfer until URLSession lets the handler go, after it ran.
            task = session.dataTask(with: urlRequest) { [self] data, response, error in
                quickCompleted(data: data, response: response, error: error)
            }
        case .none:
            task = session.dataTask(with: urlRequest)
        #if canImport(FoundationNetworking)
        case .data(let body) where body.isEmpty:
            urlRequest.httpBody = body
            task = session.dataTask(with: urlRequest)
        case .data, .file:
            guard let lengthHeld = lengthHeldTask(urlRequest) else { return }
            task = lengthHeld
        case .stream(let stream) where stream.length != nil:
            guard let lengthHeld = lengthHeldTask(urlRequest) else { return }
            task = lengthHeld
        #else
        case .data(let body):
            urlRequest.httpBody = body
            task = session.dataTask(with: urlRequest)
        case .file(let url):
            urlRequest.httpBody = nil
            task = session.uploadTask(with: urlRequest, fromFile: url)
        case .stream(let stream) where stream.needsLength:
            // URLSession can give a length only to a file body: copy the stream into one (once per exchange). The
            // copy is made on a thread of its own (`BlockingWork`), and the launch goes on from there once it is
            // done: copying a large file part takes seconds, which neither the shared pool nor the engine's queue of
            // calls (`SessionCalls`, on which every other request of the engine starts) should wait for.
            guard let file = state.withLock({ $0.spooled }) else {
                let pending = urlRequest
                BlockingWork.start { [self] in
                    do {
                        _ = try spool(stream)
                    } catch {
                        recordFailure(error)
                        completed(nil)
                        return
                    }
                    // Stopped (cancelled, out of time) while copying: end here rather than start a task to cancel.
                    if state.withLock({ $0.stopReason != nil }) { return completed(nil) }
                    launch(pending)
                }
                return
            }
            urlRequest.httpBody = nil
            urlRequest.setValue(nil, forHTTPHeaderField: "Content-Length")
            task = session.uploadTask(with: urlRequest, fromFile: file)
        #endif
        case .stream(let stream):
            // A stream of unknown length (on Apple platforms, any stream but a multipart body) goes chunked;
            // URLSession sends both framings if given a `Content-Length` too.
            urlRequest.setValue(nil, forHTTPHeaderField: "Content-Length")
            do {
                let made = try stream.makeStream()
                #if canImport(FoundationNetworking)
                // URLSession on Linux takes a stream that cannot be read (one that failed to open) for an empty one:
                // checked, a failure aborts the upload.
                let opened: InputStream = LengthHeldStream(made, length: nil) { [weak self] error in
                    self?.recordFailure(error)
                }
                #else
                let opened = made
                #endif
                urlRequest.httpBodyStream = opened
                state.withLock { $0.bodyStream = opened }
            } catch {
                recordFailure(error)
                completed(nil)
                return
            }
            task = session.dataTask(with: urlRequest)
        }
        delegate.register(self, for: task)
        let stopped = state.withLock { state -> Bool in
            state.task = task
            state.launched = .now
            state.headArrived = nil
            state.launchedRequest = launched
            state.redirectsAtLaunch = state.redirects
            return state.stopReason != nil
        }
        task.resume()
        if stopped { task.cancel() }
    }

    /// The request as URLSession gets it: its URL as `URLComposition.canonical` writes it, and its fields as `adjust`
    /// leaves them. Changing the request of a redirect or a segment (`start` makes the first one so from the outset).
    private func outgoing(_ urlRequest: URLRequest) -> URLRequest {
        var urlRequest = urlRequest
        if let url = urlRequest.url, let lowered = URLComposition.canonical(url) { urlRequest.url = lowered }
        var fields = urlRequest.allHTTPHeaderFields ?? [:]
        if adjust(&fields, for: urlRequest.url) { urlRequest.allHTTPHeaderFields = fields }
        return urlRequest
    }

    /// The fields as URLSession gets them for a request to `url`: the stored cookies the rules choose (see
    /// `CookieRules`), the center's `User-Agent` when the request has none of its own, as on CurlEngine (URLSession
    /// would send its own, with the process's name on Linux), and on Linux the blank fields that keep URLSession from
    /// adding fields of its own. Changed in a dictionary, set on the request once: on Linux every
    /// `setValue(_:forHTTPHeaderField:)` copies the request and its fields, and folds the case of each name, which
    /// cost more than the rest of a small request's launch. Returns whether anything changed.
    @discardableResult
    private func adjust(_ fields: inout [String: String], for url: URL?) -> Bool {
        var changed = false
        func add(_ value: String, ifMissing name: String) {
            guard Self.position(of: name, in: fields) == nil else { return }
            fields[name] = value
            changed = true
        }
        if let cookies, let url {
            let stored = CookieRules.requestField(for: url, in: cookies)
            if stored != nil || Self.position(of: "Cookie", in: fields) != nil {
                Self.set(stored, for: "Cookie", in: &fields)
                changed = true
            }
        }
        add(EngineRequest.defaultUserAgent, ifMissing: "User-Agent")
        #if canImport(FoundationNetworking)
        // URLSession on Linux labels a POST body `application/x-www-form-urlencoded` when the request has no
        // `Content-Type`, and adds `Accept-Language` with the process locale's language to every request; a field
        // with a blank value keeps it from doing so, and libcurl sends no such field. CurlEngine adds neither.
        if request.method != .get, request.method != .head { add(" ", ifMissing: "Content-Type") }
        add(" ", ifMissing: "Accept-Language")
        // It also sends `Content-Length: 0` for a `DELETE`, an `OPTIONS` or a method of the caller's without a body,
        // which CurlEngine does not (see `HTTPMethod.anticipatesBody`).
        if request.body == .none, !request.method.anticipatesBody { add(" ", ifMissing: "Content-Length") }
        #endif
        return changed
    }

    /// Where the field with this name is, whatever the case of either.
    private static func position(of name: String, in fields: [String: String]) -> [String: String].Index? {
        fields.firstIndex { $0.key.equalsIgnoringASCIICase(name) }
    }

    /// Sets the field with this name (any spelling of it replaced); `nil` removes it.
    private static func set(_ value: String?, for name: String, in fields: inout [String: String]) {
        if let existing = position(of: name, in: fields) { fields.remove(at: existing) }
        if let value { fields[name] = value }
    }

    /// Ends the exchange early: by cancellation, or because the total timeout passed. The first reason wins; a stop
    /// before `start` makes `start` fail at once, and a stop after the end changes nothing.
    func stop(_ reason: StopReason) {
        let (task, wasPacing) = state.withLock { state -> (URLSessionDataTask?, Bool) in
            guard state.stopReason == nil else { return (nil, false) }
            state.stopReason = reason
            defer { state.pacing = nil }
            return (state.task, state.pacing != nil)
        }
        if let task { SessionCalls.run(for: self) { task.cancel() } }
        // No task runs while a speed-limited download waits for its next segment: the stop ends the exchange now.
        if wasPacing { completed(nil) }
    }

    /// Records `error` as the reason the exchange ends (unless it has one already), without cancelling anything: for
    /// a failure met before the task starts, or one that makes URLSession end the task itself.
    func recordFailure(_ error: any Error) {
        state.withLock { state in
            if state.stopReason == nil { state.stopReason = .failed(error) }
        }
    }

    /// The center's trust policies, for the session delegate's TLS challenges.
    var trust: TrustTable? { request.trust }

    /// The error the transfer was stopped with, if it was stopped by one.
    var stopError: (any Error)? {
        state.withLock { state in
            if case .failed(let error)? = state.stopReason { error } else { nil }
        }
    }

    /// Keeps the cookies a response sets, and applies their `Max-Age` to the storage (see `CookieRules.store`), in
    /// place of URLSession (Linux): it stored those of fields spelled `Set-Cookie` alone, and dropped those of a
    /// `set-cookie`, as every HTTP/2 server and many HTTP/1.1 ones spell it (CurlEngine stored them), and gave a cookie
    /// without a `Path` the path `/`. Its response has the fields' values joined under one name: `CookieRules` reads
    /// each cookie's text apart again.
    private func storeCookies(from response: HTTPURLResponse) {
        // Most responses set no cookie: one look for the field (any spelling) first. `allHeaderFields` makes a new
        // dictionary of boxed keys and values on each read (1.6 us for six fields, against 0.25 for the look), in the
        // work queue every transfer shares.
        guard let storage, let url = response.url, response.value(forHTTPHeaderField: "Set-Cookie") != nil else {
            return
        }
        // The fields are looked through where they are: this runs in URLSession's work queue, for every response,
        // and a dictionary of them as strings (`headerFields`) cost more than the rest of a small response there.
        var values: [String] = []
        for (name, value) in response.allHeaderFields {
            guard let name = name.base as? String, name.utf8.count == 10, name.equalsIgnoringASCIICase("Set-Cookie"),
                let value = value as? String
            else { continue }
            values.append(value)
        }
        if !values.isEmpty { CookieRules.store(values, for: url, in: storage) }
    }

    // MARK: - Task events

    func received(_ response: URLResponse) {
        guard let response = response as? HTTPURLResponse else { return }
        // A head that is not sound HTTP is refused whole. (Its cookies are kept when the answer has arrived whole:
        // see `finish`.)
        let refusal = response.headRefusal
        // A stream's answer has arrived with its head (its body is its reader's): its cookies are kept now, before the
        // reader hears of it, and not again at the end (`finish`).
        if refusal == nil, request.receiver?.wouldAccept(status: response.statusCode) == true {
            storeCookies(from: response)
        }
        let failure = state.withLock { state -> (any Error)? in
            state.sink?.abandon()
            state.response = response
            if state.firstByte == nil { state.firstByte = .now }
            state.headArrived = (.now, state.bytesReceived)
            state.counter = DownloadCounter(response: response)
            state.streaming = false
            // Checked first, as on CurlEngine: a `Content-Length` too large for the limit may be no number at all.
            // (`conflictingLocations`: a redirect URLSession did not offer to the delegate, a `Location` it could not
            // read as a URL.)
            if let refusal {
                state.body.reset()
                return refusal
            }
            if let tooLarge = request.tooLargeHead(status: response.statusCode, bodyLength: state.counter.bodyLength) {
                state.body.reset()
                return tooLarge
            }
            if let receiver = request.receiver, receiver.accepts(EngineResponse(response: response, body: Data())) {
                state.streaming = true
                state.sink = nil
                state.body.reset()
                return nil
            }
            do {
                // Each chunk is written as it comes, in the delegate call: see `FileSink.Mode.direct`.
                state.sink = try request.sink(for: response, start: state.segments?.current, mode: .direct)
                state.body.reset(expectedLength: state.sink == nil ? state.counter.bodyLength : nil)
                return nil
            } catch {
                state.body.reset()
                state.sink = nil
                return error
            }
        }
        if let failure {
            stop(.failed(failure))
        } else {
            request.onEvent?(
                .responseHead(status: response.statusCode, headers: HTTPHeaders(received: response.headerFields)))
        }
    }

    func received(_ data: Data) {
        let outcome = state.withLock { state -> Result<(TransferProgress, streaming: Bool), any Error>? in
            // Stopped (a limit passed, a cancel): URLSession on Linux goes on handing over what libcurl has already
            // read (a compressed body inflating, say) until its work queue takes the cancel; each chunk is dropped
            // at once.
            guard state.stopReason == nil else { return nil }
            state.bytesReceived += Int64(data.count)
            if state.streaming { return .success((state.counter.add(data.count), true)) }
            do {
                if let sink = state.sink {
                    try sink.write(data)
                } else {
                    if let tooLarge = request.tooLargeBody(received: state.counter.received, adding: data.count) {
                        return .failure(tooLarge)
                    }
                    state.body.append(data)
                }
                return .success((state.counter.add(data.count), false))
            } catch {
                return .failure(error)
            }
        }
        switch outcome {
        case nil:
            return
        case .success(let (report, streaming)):
            // A stream's chunk goes to its receiver outside the lock. URLSession cannot pause a data task on Linux
            // (its libcurl layer has no way to), so a reader too far behind ends the stream instead of filling memory.
            if streaming, let receiver = request.receiver, !receiver.offer(data, resume: {}) {
                return stop(.failed(receiver.overflow()))
            }
            progress(report)
        case .failure(let error):
            stop(.failed(error))
        }
    }

    func sent(_ total: Int64, of expected: Int64) {
        let floor = state.withLock { state in
            state.bytesSent = total
            return state.sentFloor
        }
        guard total > floor else { return }
        let expected = expected > 0 ? expected : request.body.count
        progress(
            TransferProgress(direction: .upload, completed: total, expected: expected.flatMap { $0 > 0 ? $0 : nil }))
    }

    /// A fresh body stream, when URLSession asks for one (to send the body again).
    ///
    /// The new stream is the one the transfer closes when the task is over (URLSession on Linux closes none); the
    /// one it replaces, which URLSession is done with, is closed now.
    func newBodyStream() -> InputStream? {
        let fresh: InputStream?
        #if canImport(FoundationNetworking)
        if case .stream(let stream) = request.body, stream.length == nil {
            fresh = try? stream.open()
        } else {
            fresh = lengthHeldBody()?.stream
        }
        #else
        if case .stream(let stream) = request.body { fresh = try? stream.open() } else { fresh = nil }
        #endif
        guard let fresh else { return nil }
        state.withLock { state in
            defer { state.bodyStream = fresh }
            return state.bodyStream
        }?.close()
        return fresh
    }

    #if canImport(FoundationNetworking)
    /// A task that sends the request's body (in memory, a file, or a stream of known length) as a stream with its
    /// `Content-Length` (see `lengthHeldBody`); `nil` when the stream cannot be made, and the exchange has then ended.
    ///
    /// URLSession on Linux sends a body in memory or a file only once: on a keep-alive connection the server dropped,
    /// the request waits for its idle timeout, where a stream is asked for again and sent on a new connection. Its
    /// own file upload is also slower (it reads the file through a dispatch channel and pauses the transfer while a
    /// read is pending: about a quarter of the speed for 1 GiB here), and can crash the process when the transfer
    /// ends while a read is pending (its `try!` on `curl_easy_pause`, which then fails).
    private func lengthHeldTask(_ urlRequest: URLRequest) -> URLSessionDataTask? {
        guard let body = lengthHeldBody() else {
            completed(nil)
            return nil
        }
        var urlRequest = urlRequest
        urlRequest.httpBody = nil
        urlRequest.setValue(String(body.length), forHTTPHeaderField: "Content-Length")
        urlRequest.setValue(" ", forHTTPHeaderField: "Transfer-Encoding")
        urlRequest.httpBodyStream = body.stream
        state.withLock { $0.bodyStream = body.stream }
        return session.dataTask(with: urlRequest)
    }

    /// A new stream of the request's body (in memory, a file, or a stream of known length), held to its length, for
    /// URLSession on Linux to send with it as its `Content-Length`; `nil` for an empty body or a stream of unknown
    /// length, and when it cannot be made (with the reason recorded to end the exchange with).
    ///
    /// URLSession on Linux sends a stream chunked: libcurl beneath it decides so unless the request has a
    /// `Transfer-Encoding` field of its own. One with a blank value is such a field, and libcurl sends none (a field
    /// with nothing after its colon only turns off libcurl's own), so the body goes with the `Content-Length` the
    /// caller sets. A stream that then disagrees with the length stops the transfer with the reason (see
    /// `LengthHeldStream`), which the task's end reports.
    private func lengthHeldBody() -> (stream: InputStream, length: Int64)? {
        let made: Result<(InputStream, Int64), HTTPError>
        switch request.body {
        case .file(let url):
            // The file's size as the send starts: a file that then grows or shrinks fails the request, the stream
            // saying so as a file (`UploadFile.changed`).
            if let length = FileSink.size(of: url) {
                made = .success((MultipartStream([.file(url, length: length)]), length))
            } else {
                made = .failure(UploadFile.unreadable(url))
            }
        case .stream(let stream):
            guard let length = stream.length else { return nil }
            made = Result { () throws(HTTPError) in (try stream.makeStream(), length) }
        case .data(let data) where !data.isEmpty:
            made = .success((InputStream(data: data), Int64(data.count)))
        case .none, .data:
            return nil
        }
        switch made {
        case .success(let (source, length)):
            let held = LengthHeldStream(source, length: length) { [weak self] error in
                self?.recordFailure(error)
            }
            return (held, length)
        case .failure(let error):
            recordFailure(error)
            return nil
        }
    }
    #endif

    /// Decides the request a redirect continues with: credentials stay with their origin, and a redirect that keeps
    /// the body (a `307`/`308`, or a `301`/`302` to anything but a `POST`) is not followed by URLSession (which would
    /// drop the body, or send a stream it has read already) but re-sent by `completed`.
    func redirect(_ response: HTTPURLResponse, to proposed: URLRequest) -> URLRequest? {
        // Only http and https URLs with a host and a valid port are followed; the redirect response itself is the
        // answer otherwise, as on CurlEngine. The Location header decides: URLSession on Linux proposes an http URL
        // with the path of a `file:` target, and the current host for `http:///path`.
        // The target is resolved here too (RFC 3986, as on CurlEngine): URLSession on Linux puts a relative path
        // under the root (`../x` from `/a/b` becomes `/../x`, `x` becomes `/x`).
        if let refusal = response.headRefusal {
            stop(.failed(refusal))
            return nil
        }
        // The redirect has arrived, and its head is sound: its cookies are kept whether or not it is followed, as on
        // CurlEngine.
        storeCookies(from: response)
        let from = response.url ?? request.url
        let target = Redirects.target(of: response.value(forHTTPHeaderField: "Location"), from: from)
        // URLSession on Linux also follows a `305` and a `306`, which are answers (see `Redirects.follows`).
        guard Redirects.follows(status: response.statusCode), Redirects.isFollowable(proposed.url),
            Redirects.isFollowable(target)
        else {
            state.withLock { $0.redirectDeclined = true }
            return nil
        }
        if let refusal = Redirects.refusal(from: from, to: target, for: request) {
            stop(.failed(refusal))
            return nil
        }
        #if canImport(FoundationNetworking)
        if let target, URLComposition.hasIPLiteralHost(target) {
            stop(.failed(URLSessionEngine.ipLiteralRefusal(target)))
            return nil
        }
        #endif
        var next = proposed
        next.url = target.map(URLComposition.canonicalizing)
        if !Redirects.sameOrigin(response.url ?? request.url, target) {
            for name in Redirects.originBoundHeaders(request.headers, forwardingSecrets: request.forwardsSecretHeaders)
            {
                next.setValue(nil, forHTTPHeaderField: name)
            }
        }
        // URLSession on Linux does not send cookies that the redirect response itself set (kept above): send what
        // the cookie rules choose for the next URL (unless the caller set its own `Cookie` field).
        if let cookies, let to = target {
            next.setValue(CookieRules.requestField(for: to, in: cookies), forHTTPHeaderField: "Cookie")
        }
        if !request.redirectPolicy.isDefault {
            switch decide(response, from: from) {
            case .answer:
                state.withLock { $0.redirectDeclined = true }
                return nil
            case .fail(let error):
                stop(.failed(error))
                return nil
            case .follow(let chosen):
                if let refusal = Redirects.refusal(from: from, to: chosen.url, for: request) {
                    stop(.failed(refusal))
                    return nil
                }
                next.url = chosen.url.map(URLComposition.canonicalizing)
                next.httpMethod = chosen.method.rawValue
                let cookie = next.value(forHTTPHeaderField: "Cookie")
                next.allHTTPHeaderFields = chosen.headers.dictionary
                if chosen.headers["Cookie"] == nil, let cookie { next.setValue(cookie, forHTTPHeaderField: "Cookie") }
            }
        }
        #if canImport(FoundationNetworking)
        if let refusal = URLSessionEngine.trustRefusal(request.trust, next.url) {
            stop(.failed(refusal))
            return nil
        }
        #endif
        let limit = request.redirectPolicy.maxRedirects
        let followed = state.withLock { state -> URLRequest? in
            state.redirects += 1
            let hasBody = !request.body.isEmpty && !state.bodyDropped
            switch SessionDecision.redirect(
                status: response.statusCode, redirects: state.redirects, limit: limit, hasBody: hasBody,
                method: request.method)
            {
            case .refuse:
                return nil
            case .holdToResend:
                next.httpMethod = request.method.rawValue
                state.pendingRedirect = next
                return nil
            case .follow:
                // A HEAD stays a HEAD (RFC 9110 section 15.4.4; browsers, and libcurl, keep it): URLSession on Linux
                // made it a GET after a `303`, and so fetched the body the HEAD was sent to do without.
                if request.method == .head { next.httpMethod = HTTPMethod.head.rawValue }
                if hasBody {
                    // A redirect that drops the body (a `303`, or a `301`/`302` to a `POST`): URLSession makes the
                    // request a `GET` but keeps the body's stream and length fields.
                    state.bodyDropped = true
                    next.httpBodyStream = nil
                    for name in ["Content-Length", "Content-Type", "Transfer-Encoding"] {
                        next.setValue(nil, forHTTPHeaderField: name)
                    }
                }
                return next
            }
        }
        if let onEvent = request.onEvent, followed != nil {
            // URLSession does not hand a redirect it follows to `received`: its head is reported here. One held to
            // be re-sent is answered (and reported) as a response, and reported as a redirect when it is re-sent.
            onEvent(.responseHead(status: response.statusCode, headers: HTTPHeaders(received: response.headerFields)))
            onEvent(.redirected(status: response.statusCode, from: from, to: next.url))
        }
        return followed
    }

    /// The policy's step for a redirect (`Redirects.step`), shown the request that follows as the rules make
    /// it from the request that was redirected (after an earlier redirect that dropped the body, a `GET` without
    /// one).
    private func decide(_ response: HTTPURLResponse, from: URL?) -> Redirects.Step {
        let (number, bodyDropped) = state.withLock { ($0.redirects + 1, $0.bodyDropped) }
        var current = request
        current.url = from
        if bodyDropped {
            if current.method != .head { current.method = .get }
            current.body = .none
        }
        let head = EngineResponse(response: response, body: Data())
        guard let proposed = Redirects.next(after: head, for: current) else { return .answer }
        return Redirects.step(
            proposed, status: response.statusCode, headers: head.headers ?? HTTPHeaders(), from: from, number: number,
            policy: request.redirectPolicy)
    }

    func challenged(_ response: HTTPURLResponse?, url: URL?) {
        let failure =
            response
            ?? HTTPURLResponse(
                url: url ?? request.url ?? URL(string: "http://invalid")!, statusCode: 401, httpVersion: "HTTP/1.1",
                headerFields: [:])
        state.withLock { $0.challengeResponse = failure }
    }

    func completed(_ error: (any Error)?) {
        enum Next {
            case finish(Result<EngineResponse, any Error>)
            case follow(URLRequest)
        }
        let next = state.withLock { state -> Next in
            switch SessionDecision.completion(
                stopped: state.stopReason != nil, challenged: state.challengeResponse != nil,
                redirects: state.redirects, limit: request.redirectPolicy.maxRedirects,
                heldRedirect: state.pendingRedirect != nil, taskFailed: error != nil)
            {
            case .stopped:
                state.sink?.abandon()
                state.sink = nil
                return .finish(.failure(SessionTransfer.error(for: state.stopReason!, request: request)))
            case .challenged:
                // URLSession delivered the 401's body before it raised the challenge.
                state.sink?.abandon()
                state.sink = nil
                if let conflict = state.challengeResponse!.headRefusal {
                    state.body.reset()
                    return .finish(.failure(conflict))
                }
                return .finish(.success(EngineResponse(response: state.challengeResponse!, body: state.body.take())))
            case .tooManyRedirects:
                return .finish(.failure(Redirects.tooMany(request.redirectPolicy.maxRedirects)))
            case .resend:
                let redirect = state.pendingRedirect!
                request.onEvent?(
                    .redirected(
                        status: state.response?.statusCode ?? 307, from: state.response?.url ?? request.url,
                        to: redirect.url))
                state.pendingRedirect = nil
                state.response = nil
                state.firstByte = nil
                state.bytesReceived = 0
                state.bytesSent = nil
                state.sentFloor = 0
                state.body.reset()
                state.sink?.abandon()
                state.sink = nil
                return .follow(redirect)
            case .failed:
                // Keep what arrived before the connection was lost: a resumable download continues from it.
                state.sink?.abandon()
                state.sink = nil
                if let again = sendAgain(after: error!, &state) { return .follow(again) }
                return .finish(.failure(SessionTransfer.urlError(error!, idleLimit: request.timeout)))
            case .answered:
                break
            }
            // A redirect URLSession could not even parse the Location of completes without telling the delegate
            // about the response: the task still has it, and it is the answer, without its body.
            guard let response = state.response ?? (state.task?.response as? HTTPURLResponse) else {
                return .finish(.failure(URLError(.badServerResponse)))
            }
            if state.response == nil, let lost = Self.lostBody(of: response, method: request.method) {
                return .finish(.failure(lost))
            }
            // URLSession hands a `101` over as if it were final, with what followed it as the body.
            if response.statusCode < 200 {
                state.sink?.abandon()
                state.sink = nil
                return .finish(.failure(URLError.noFinalResponse(after: response.statusCode)))
            }
            var fileLength: Int64?
            if let sink = state.sink {
                state.sink = nil
                do {
                    fileLength = try sink.close()
                } catch {
                    return .finish(
                        .failure(
                            HTTPError(
                                .fileSystem, "the download could not be written: \(error)",
                                underlying: error)))
                }
            }
            if var segments = state.segments {
                if segments.count == 0, !segments.resumed, response.statusCode == 206,
                    !segments.holds(response, received: fileLength ?? 0)
                {
                    // The first segment's 206 is not the range asked for: a server whose ranges do not hold. The file
                    // is fetched once more in one plain request, as CurlEngine asks for it, unsegmented.
                    if case .file(let url, _) = request.destination { FileSink.cut(url, to: 0) }
                    state.segments = nil
                    state.response = nil
                    state.body.reset()
                    return .follow(request.urlRequest)
                }
                if response.statusCode == 206,
                    let range = ContentRange(response.value(forHTTPHeaderField: "Content-Range")),
                    let start = range.start, let mismatch = range.bodyMismatch(received: (fileLength ?? 0) - start)
                {
                    // The next segment would start where the range said this one ended, past a gap or over bytes. A
                    // segment longer than its range is dropped from the file, as `DownloadPlan` drops such a body.
                    if (fileLength ?? 0) - start > range.count ?? 0, case .file(let url, _) = request.destination {
                        FileSink.cut(url, to: start)
                    }
                    return .finish(.failure(HTTPError(.transport, mismatch)))
                }
                let timing = state.headArrived.map { head in
                    Segments.Timing(
                        latency: head.at - state.launched, bytes: state.bytesReceived - head.bytesBefore,
                        duration: .now - head.at)
                }
                if segments.advance(after: response, timing: timing) {
                    state.segments = segments
                    state.response = nil
                    state.body.reset()
                    return .follow(segments.nextRequest(from: request.urlRequest))
                }
                let overall = segments.overall(response)
                state.segments = nil
                return .finish(
                    .success(EngineResponse(response: overall, body: state.body.take(), fileLength: fileLength)))
            }
            return .finish(
                .success(EngineResponse(response: response, body: state.body.take(), fileLength: fileLength)))
        }
        state.withLock { $0.bodyStream }?.close()
        switch next {
        case .finish(let result): finish(result)
        case .follow(let redirect): follow(redirect)
        }
    }

    /// The request to send once more, on another connection, when the current one failed as it was being sent (libcurl's
    /// "Send failure": the connection was reset or closed under it) before any byte of an answer, to an origin that
    /// answered this engine before: the server closed a connection an earlier exchange had left open (an idle timeout,
    /// or an earlier request's body it would not read) just as the request went out, and never had the whole request.
    /// CurlEngine does the same (`StaleConnection`), where libcurl itself does not; URLSession on Linux cannot say
    /// whether a connection was reused, so an origin that answered before stands for one. At most once per exchange.
    private func sendAgain(after error: any Error, _ state: inout State) -> URLRequest? {
        #if canImport(FoundationNetworking)
        let nsError = error as NSError
        guard !state.sentAgain, state.response == nil, state.bytesReceived == 0, state.challengeResponse == nil,
            state.redirects == state.redirectsAtLaunch, let again = state.launchedRequest,
            nsError.domain == NSURLErrorDomain,
            (nsError.userInfo[NSLocalizedDescriptionKey] as? String)?.hasPrefix("Send failure") == true,
            StaleConnection.mayResend(request, sent: state.bytesSent ?? 0), connections.mayHaveConnection(to: again.url)
        else { return nil }
        state.sentAgain = true
        state.sentFloor = state.bytesSent ?? 0
        state.bytesSent = nil
        return again
        #else
        return nil
        #endif
    }

    /// Sends the next request of the exchange (a redirect re-sent by hand, the next segment): at once, or for a
    /// speed-limited download when the bytes so far are within the limit.
    private func follow(_ next: URLRequest) {
        let (delay, id) = state.withLock { state -> (Duration, UInt64) in
            let delay = state.segments?.delay(after: .now - state.started) ?? .zero
            guard delay > .zero else { return (.zero, 0) }
            state.pacingCount += 1
            state.pacing = state.pacingCount
            return (delay, state.pacingCount)
        }
        guard delay > .zero else { return launch(next) }
        DispatchQueue.global().asyncAfter(deadline: .now() + delay.seconds) { [self] in
            let goes = state.withLock { state -> Bool in
                guard state.pacing == id else { return false }  // a stop ended the exchange meanwhile
                state.pacing = nil
                return true
            }
            if goes { launch(next) }
        }
    }

    /// The end of a quick task (see `State.quick`): the same decisions as `completed`, on the whole body at once.
    private func quickCompleted(data: Data?, response: URLResponse?, error: (any Error)?) {
        enum Next {
            case finish(Result<EngineResponse, any Error>)
            case again(URLRequest)
        }
        let task = state.withLock { $0.task }
        if let task { delegate.unregister(task) }
        let next = state.withLock { state -> Next in
            if state.challengeResponse != nil && state.stopReason == nil {
                // A completion handler never gets the body of a 401 that URLSession turned into a challenge: ask
                // again, through the delegate, which keeps it (a GET or HEAD, so asking twice is harmless).
                state.quick = false
                state.challengeResponse = nil
                state.redirects = 0
                return .again(request.urlRequest)
            }
            #if canImport(FoundationNetworking)
            if state.redirectDeclined && state.stopReason == nil && error == nil {
                // Nor the body of a redirect the delegate declined (its answer is the redirect response itself):
                // URLSession on Linux hands that body to a delegate alone. Ask again, through the delegate, as above.
                state.quick = false
                state.redirectDeclined = false
                state.redirects = 0
                return .again(request.urlRequest)
            }
            #endif
            switch SessionDecision.completion(
                stopped: state.stopReason != nil, challenged: false, redirects: state.redirects,
                limit: request.redirectPolicy.maxRedirects, heldRedirect: false, taskFailed: error != nil)
            {
            case .stopped:
                return .finish(.failure(SessionTransfer.error(for: state.stopReason!, request: request)))
            case .tooManyRedirects:
                return .finish(.failure(Redirects.tooMany(request.redirectPolicy.maxRedirects)))
            case .failed:
                // A head with no valid length is that fault, as on every other path, whatever the body did next, when
                // URLSession lets the head be seen (with an error it hands a completion handler none, and its task
                // has none before a byte of the body arrived).
                if let head = (response ?? task?.response) as? HTTPURLResponse, let invalid = head.headRefusal {
                    return .finish(.failure(invalid))
                }
                return .finish(.failure(SessionTransfer.urlError(error!, idleLimit: request.timeout)))
            case .answered, .challenged, .resend:
                guard let response = response as? HTTPURLResponse else {
                    return .finish(.failure(URLError(.badServerResponse)))
                }
                if let conflict = response.headRefusal { return .finish(.failure(conflict)) }
                if data?.isEmpty != false, let lost = Self.lostBody(of: response, method: request.method) {
                    return .finish(.failure(lost))
                }
                state.bytesReceived = Int64(data?.count ?? 0)
                return .finish(.success(EngineResponse(response: response, body: data ?? Data())))
            }
        }
        switch next {
        case .again(let urlRequest):
            launch(urlRequest)
        case .finish(let result):
            if case .success(let response) = result, let onEvent = request.onEvent {
                onEvent(.responseHead(status: response.status, headers: response.headers ?? HTTPHeaders()))
            }
            if case .success(let response) = result, !response.body.isEmpty {
                let count = Int64(response.body.count)
                progress(TransferProgress(direction: .download, completed: count, expected: count))
            }
            finish(result)
        }
    }

    private func finish(_ result: Result<EngineResponse, any Error>) {
        var result = result
        let (continuation, spooled, streamed) = state.withLock {
            state -> (UnsafeContinuation<EngineResponse, any Error>?, URL?, Bool) in
            defer { state.continuation = nil; state.task = nil; state.spooled = nil }
            if case .success(var response) = result {
                response.metrics = metrics(of: response, state)
                result = .success(response)
            }
            return (state.continuation, state.spooled, state.streaming)
        }
        // The answer has arrived whole: its cookies are kept, before the caller hears of it (a redirect's were, in
        // `redirect`, and a stream's as it opened, in `received`). An exchange that fails keeps none of its answer's,
        // as on CurlEngine; a completion handler could not do otherwise, since URLSession hands it no head with an
        // error.
        // Only with a storage: `response.response` makes a Foundation response for one that has none underneath.
        if storage != nil, case .success(let response) = result, !streamed { storeCookies(from: response.response) }
        if let spooled { try? FileManager.default.removeItem(at: spooled) }
        continuation?.resume(with: result)
    }

    /// URLSession's task metrics, where the platform collects them (Apple platforms).
    func collected(_ metrics: URLSessionTaskMetrics) {
        state.withLock { $0.taskMetrics = metrics }
    }

    /// What is known of the exchange that gave `response`: timed here, counted here, and the connection's details
    /// from URLSession's task metrics when it collected any.
    private func metrics(of response: EngineResponse, _ state: State) -> TransferMetrics {
        let encoded = response.value(forHTTPHeaderField: "Content-Encoding").map { $0.lowercased() != "identity" }
        var metrics = TransferMetrics(
            total: .now - state.started, timeToFirstByte: state.firstByte.map { $0 - state.started },
            bytesSent: state.bytesSent ?? (request.body.isEmpty ? 0 : nil),
            bytesReceived: encoded == true ? nil : state.bytesReceived, redirects: state.redirects)
        guard let task = state.taskMetrics, let last = task.transactionMetrics.last else { return metrics }
        func between(_ start: Date?, _ end: Date?) -> Duration? {
            guard let start, let end, end >= start else { return nil }
            return .seconds(end.timeIntervalSince(start))
        }
        metrics.reusedConnection = last.isReusedConnection
        if !last.isReusedConnection {
            metrics.nameLookup = between(last.domainLookupStartDate, last.domainLookupEndDate)
            metrics.connect = between(last.connectStartDate, last.secureConnectionStartDate ?? last.connectEndDate)
            metrics.secureConnection = between(last.secureConnectionStartDate, last.secureConnectionEndDate)
        }
        if metrics.timeToFirstByte == nil {
            metrics.timeToFirstByte = between(task.taskInterval.start, last.responseStartDate)
        }
        metrics.httpVersion = last.networkProtocolName.map(SessionTransfer.httpVersion)
        metrics.remoteAddress = last.remoteAddress
        #if canImport(Darwin)
        metrics.remotePort = last.remotePort?.intValue
        #else
        metrics.remotePort = last.remotePort.flatMap { Int($0) }  // corelibs types it `String?`
        #endif
        metrics.bytesSent = last.countOfRequestBodyBytesSent
        metrics.bytesReceived = last.countOfResponseBodyBytesReceived
        return metrics
    }

    /// An ALPN protocol name as a status line writes it: `h2` is `HTTP/2`, `http/1.1` is `HTTP/1.1`.
    static func httpVersion(_ protocolName: String) -> String {
        switch protocolName.lowercased() {
        case "h2": "HTTP/2"
        case "h3": "HTTP/3"
        case let name where name.hasPrefix("http/"): "HTTP/" + name.dropFirst(5)
        default: protocolName
        }
    }

    /// The temporary file holding a stream body that needs a length, written on the first send.
    ///
    /// - Throws: `.fileSystem` when it cannot be written or the stream fails (a multipart body's file part that
    ///   changed names its file), `.encoding` when the stream yields another length than it announced.
    private func spool(_ stream: Request.BodyStream) throws -> URL {
        if let spooled = state.withLock({ $0.spooled }) { return spooled }
        let file = FileManager.default.temporaryDirectory
            .appendingPathComponent("switchboard-multipart-\(UUID().uuidString)")
        guard FileManager.default.createFile(atPath: file.path, contents: nil) else {
            throw HTTPError(.fileSystem, "cannot create a temporary file in \(file.deletingLastPathComponent().path)")
        }
        state.withLock { $0.spooled = file }
        let input = try stream.makeStream()
        input.open()
        defer { input.close() }
        let handle = try FileHandle(forWritingTo: file)
        defer { try? handle.close() }
        var buffer = [UInt8](repeating: 0, count: 1 << 20)
        var written: Int64 = 0
        while true {
            let count = input.read(&buffer, maxLength: buffer.count)
            // Said as the other engines say it (a multipart body's file part that changed names its file).
            if count < 0 { throw Request.BodyStream.readFailure(input.streamError) }
            if count == 0 { break }
            try handle.write(contentsOf: buffer[0..<count])
            written += Int64(count)
        }
        if let length = stream.length, written != length {
            throw Request.BodyStream.mismatch(written, announced: length)
        }
        return file
    }

    // MARK: - Helpers

    /// The body length announced by the server, when it is the length of what will arrive (not compressed).
    static func expectedLength(_ response: some ResponseHeadFields) -> Int64? {
        guard response.value(forHTTPHeaderField: "Content-Encoding") == nil,
            let text = response.value(forHTTPHeaderField: "Content-Length"),
            let length = HTTPHeaders.contentLength(text), length > 0
        else { return nil }
        return length
    }

    private static func error(for reason: StopReason, request: EngineRequest) -> any Error {
        switch reason {
        case .failed(let error):
            return error
        case .cancelled:
            return CancellationError()
        case .deadline:
            return URLError(
                .timedOut, userInfo: [NSLocalizedDescriptionKey: URLError.totalTimeoutMessage(request.totalTimeout)])
        }
    }

    /// Errors from swift-corelibs-foundation arrive as `NSError`s in `NSURLErrorDomain`.
    static func urlError(_ error: any Error, idleLimit: Duration? = nil) -> any Error {
        let urlError: URLError
        if let error = error as? URLError {
            urlError = error
        } else {
            let nsError = error as NSError
            guard nsError.domain == NSURLErrorDomain else { return error }
            #if canImport(Darwin)
            urlError = URLError(URLError.Code(rawValue: nsError.code), userInfo: nsError.userInfo)
            #else
            urlError = URLError(URLError.Code(rawValue: nsError.code) ?? .unknown, userInfo: nsError.userInfo)
            #endif
        }
        // The URL was checked before sending (`Redirects.check`), so a "bad" or "unsupported URL" now is the
        // server's fault: URLSession on Linux reports a malformed status line that way. It is a transport failure,
        // as on CurlEngine (and so retryable).
        if urlError.code == .unsupportedURL || urlError.code == .badURL {
            return URLError(.badServerResponse, userInfo: urlError.userInfo)
        }
        if urlError.code == .httpTooManyRedirects {
            // URLSession stops after the 20th redirect, as CurlEngine does: say it in the same words.
            return Redirects.tooMany(RedirectPolicy.maximum)
        }
        if urlError.code == .timedOut, let idleLimit, urlError.userInfo[NSLocalizedDescriptionKey] == nil {
            // URLSession's own timer (`timeoutInterval`, the idle timeout) says no more than "error -1001": say what
            // CurlEngine says.
            return URLError.idleTimeout(idleLimit, underlying: urlError)
        }
        #if canImport(FoundationNetworking)
        // URLSession on Linux stops the transfer from libcurl's header callback at a head it cannot parse, and all
        // that is left is libcurl's "Failed writing header".
        let detail = urlError.userInfo[NSLocalizedDescriptionKey] as? String
        if urlError.code == .unknown, let detail, let code = Self.curlFailureCode(detail) {
            return URLError(code, userInfo: urlError.userInfo)
        }
        if urlError.code == .unknown, let detail, detail == "Out of memory" {
            // libcurl's words for a response head field longer than it reads, as CurlEngine finds too.
            return URLError.headFieldTooLong(detail, underlying: urlError)
        }
        if urlError.code == .unknown, detail == "Failed writing header" {
            return URLError(
                .cannotParseResponse,
                userInfo: [
                    NSLocalizedDescriptionKey: Self.unreadableHead, NSUnderlyingErrorKey: urlError as NSError,
                ])
        }
        #endif
        return urlError
    }

    #if canImport(FoundationNetworking)
    /// The code CurlEngine gives for a failure URLSession on Linux calls unknown (`URLError -1`), told by libcurl's
    /// words, which are all it keeps: a connection lost (to a broken pipe; a reset it calls lost itself, as it calls
    /// an empty reply a bad response), a body cut short, a response that is not one (a malformed chunk, a head too
    /// large, a malformed `Content-Length`), a body that cannot be decoded (or is in an encoding libcurl does not know),
    /// a server certificate not accepted.
    private static func curlFailureCode(_ detail: String) -> URLError.Code? {
        if detail.hasPrefix("Send failure") || detail.hasPrefix("Recv failure")
            || detail.hasPrefix("transfer closed with")
        {
            return .networkConnectionLost
        }
        if detail.contains("chunked-encoding") || detail.hasPrefix("Too large response headers")
            || detail.hasPrefix("Invalid Content-Length") || detail.hasPrefix("Weird server reply")
            || detail.hasPrefix("Header without colon") || detail.hasPrefix("Nul byte in header")
        {
            return .badServerResponse
        }
        // A certificate libcurl did not accept (CURLE_PEER_FAILED_VERIFICATION, CURLE_SSL_CACERT_BADFILE): not signed
        // by a trusted authority, expired, for another host; CurlEngine calls it `.serverTrust`.
        if detail.hasPrefix("SSL certificate problem") || detail.hasPrefix("SSL: no alternative certificate subject")
            || detail.hasPrefix("SSL: certificate subject name") || detail.hasPrefix("SSL peer certificate")
            || detail.hasPrefix("Problem with the SSL CA cert") || detail.hasPrefix("error setting certificate")
        {
            return .serverCertificateUntrusted
        }
        // The last: a write libcurl failed. URLSession's own write callback never fails, so it was libcurl's decoder
        // (data after a gzip body's end), as CurlEngine finds.
        if detail.hasPrefix("Error while processing content unencoding")
            || detail.hasPrefix("Unrecognized content encoding")
            || detail.hasPrefix("Unrecognized or bad HTTP Content or Transfer-Encoding")
            || detail.hasPrefix("Failed writing received data")
        {
            return .cannotDecodeContentData
        }
        return nil
    }
    #endif

    /// The error for a redirect response URLSession ended the task with itself (one without a `Location` it can
    /// read: it asks the delegate about no other), when that response announced a body: URLSession keeps the body of
    /// every `301`-`308` to itself until the delegate declines the redirect, so that body is lost. `nil` when nothing
    /// was lost (a `HEAD`, a `304`, whose `Content-Length` describes no body, or a body announced as empty).
    static func lostBody(of response: HTTPURLResponse, method: HTTPMethod) -> HTTPError? {
        let status = response.statusCode
        guard (301...308).contains(status), status != 304, method != .head else { return nil }
        let length = response.value(forHTTPHeaderField: "Content-Length").flatMap { Int64($0) }
        guard (length ?? 0) > 0 || response.value(forHTTPHeaderField: "Transfer-Encoding") != nil else { return nil }
        let size = length.map { "a body of \($0) bytes" } ?? "a body"
        return HTTPError(
            .unsupported,
            "URLSession loses the body of a \(status) without a Location it can read (this one came with \(size)): "
                + "it keeps a redirect's body from the delegate; CurlEngine delivers it")
    }

    /// Why URLSession on Linux refused a response head (see `urlError`).
    static let unreadableHead =
        "URLSession on Linux could not read the response head: either it is not HTTP (a field whose name is empty or"
        + " not a token), or it is one that other clients read and URLSession cannot (a status line without a reason"
        + " phrase, a field value in ISO-8859-1, lines that end in a bare LF, a space before a field's colon, none"
        + " after it, as in Content-Type:text/plain); CurlEngine reads those"
}
