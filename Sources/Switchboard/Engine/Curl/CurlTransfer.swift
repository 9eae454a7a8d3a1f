import CCurlShim
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// One libcurl easy handle's exchange. Everything here runs on the worker thread (libcurl calls the callbacks from
/// `curl_multi_perform`), except `continuation`, which is set before the transfer is handed to the worker.
final class CurlTransfer: @unchecked Sendable {
    // Safety: after `CurlWorker.start` hands the transfer over, only the worker thread touches it; `continuation`
    // is written before that hand-over and resumed exactly once, by `finish`, on the worker thread. The stored
    // properties are not checked for exclusivity at run time (each check cost a thread-local lookup, several per
    // callback): one thread reads and writes them, and no access to one overlaps another access to it (none is
    // passed `inout`, no mutating method of one calls back into the transfer).
    let request: EngineRequest
    /// The engine's system authorities (see `CurlEngine.systemRoots`).
    let systemRoots: String?
    /// The trust policy of the request's host, or `nil` for the system's trust.
    let trustPolicy: TrustPolicy?
    /// Where a stream's cookies are kept as it opens (see `received(header:)`); any other response's are kept by
    /// `CurlEngine.follow` once it has arrived whole.
    let cookies: HTTPCookieStorage?
    let progress: @Sendable (TransferProgress) -> Void
    @exclusivity(unchecked) var continuation: UnsafeContinuation<EngineResponse, any Error>?
    @exclusivity(unchecked) var cancelledEarly = false
    /// The easy handle and its error buffer, from `configure` until `releaseHandle()`.
    @exclusivity(unchecked) private var handle: CurlHandle?
    var easy: UnsafeMutableRawPointer? { handle?.easy }
    /// The header list libcurl sends (shared with other transfers that send the same fields).
    @exclusivity(unchecked) private var headerList: CurlHeaderList?
    /// The upload file being read, held to its length when the send started (its `Content-Length`).
    @exclusivity(unchecked) private var upload: LengthHeldFile?
    @exclusivity(unchecked) private var bodyStream: CurlBodyStream?
    @exclusivity(unchecked) private var resume: (@Sendable () -> Void)?
    @exclusivity(unchecked) private var status = 0
    /// The URL a response of this transfer has (see `configure`).
    @exclusivity(unchecked) private var responseAddress = URLAddress.url(nil)
    @exclusivity(unchecked) private var version = "HTTP/1.1"
    /// The fields of the head being received, in arrival order, as bytes.
    @exclusivity(unchecked) private var fields = ReceivedFields()
    /// Whether a field was received last in the head being read (a folded line continues it), and whether it is a
    /// `Set-Cookie`.
    @exclusivity(unchecked) private var lastIsField = false
    @exclusivity(unchecked) private var lastIsSetCookie = false
    /// The head's `Set-Cookie` fields, each apart: joined, as `headers` joins repeated fields, a cookie's attributes
    /// could be read as another's (a `Secure` followed by `, =x` was lost).
    @exclusivity(unchecked) private var setCookies: [String] = []
    /// The final response head, once it has arrived (its body comes at the end).
    @exclusivity(unchecked) private var head: EngineResponse?
    @exclusivity(unchecked) private var body = BodyAccumulator()
    @exclusivity(unchecked) private var sink: FileSink?
    @exclusivity(unchecked) private var counter = DownloadCounter()
    /// Whether the current response's body in memory is held to `maxResponseBytes` (it is the answer, not a
    /// redirect that will be followed).
    @exclusivity(unchecked) private var limitsBody = false
    @exclusivity(unchecked) private var failure: (any Error)?
    @exclusivity(unchecked) private var uploaded: Int64 = 0
    /// Body bytes handed to libcurl so far (a chunked body's progress counts these, not libcurl's, which include the
    /// chunks' framing).
    @exclusivity(unchecked) private var handedOver: Int64 = 0
    /// Bumped whenever a byte goes either way; the idle check reads it (the callbacks need no clock).
    @exclusivity(unchecked) private var activity = 0
    /// The `activity` the last idle check saw, and when it first saw it (or when the exchange started: set by
    /// `configure`, the clock read once for each transfer).
    @exclusivity(unchecked) private var checkedActivity = 0
    @exclusivity(unchecked) private var lastActivity: ContinuousClock.Instant?
    /// Whether the transfer waits for its own body stream, which is not the server being idle.
    @exclusivity(unchecked) private var waitingForBody = false
    /// Whether the body of the response goes to the request's stream receiver, and whether the transfer is paused
    /// because the stream's reader is behind (which is not the server being idle either).
    @exclusivity(unchecked) private var streaming = false
    @exclusivity(unchecked) private var waitingForReader = false
    /// Paces the response body to `maxReceiveBytesPerSecond`, when the request has one.
    @exclusivity(unchecked) private var pacer: ReceivePacer?
    /// Whether `pacer` is set, read for every chunk: looking into the optional itself, and the optional instant it
    /// answers, went through the standard library's generic paths for every chunk of every body.
    @exclusivity(unchecked) private var paced = false
    /// When a transfer paused by the pacer is due to take its held chunk (the worker un-pauses it then).
    @exclusivity(unchecked) private(set) var receiveDue: ContinuousClock.Instant?
    /// Whether the transfer is a GET without a body, a pause or any option beyond those `configure` always sets.
    @exclusivity(unchecked) private var plainGet = false
    /// Whether the transfer ended with libcurl's success.
    @exclusivity(unchecked) private var completed = false
    /// Whether any byte of an answer (a head line, body bytes) arrived.
    @exclusivity(unchecked) private var answered = false
    /// Whether the transfer must open a new connection: it sends again a request whose reused connection failed
    /// (see `StaleConnection`).
    @exclusivity(unchecked) private var freshConnection = false
    /// libcurl's receive buffer (CURLOPT_BUFFERSIZE) for a body taken whole, and for one paced or streamed (libcurl's
    /// own default).
    static let receiveBufferSize = 64 << 10
    static let streamedChunkSize = 16 << 10
    /// The idle timeout: the longest wait without a single byte sent or received.
    private var idleLimit: Duration {
        max(.milliseconds(1), request.timeout)
    }

    /// The worker that runs it, for a cancel that comes from another thread.
    private let worker: CurlWorker
    /// Whether anyone listens to the download's progress (`EngineRequest.observesProgress`): a report for each chunk
    /// of a body nobody watches was a closure call and a value made for nothing.
    private let reportsProgress: Bool

    init(
        request: EngineRequest, systemRoots: String?, cookies: HTTPCookieStorage?, worker: CurlWorker,
        progress: @escaping @Sendable (TransferProgress) -> Void
    ) {
        self.request = request
        self.systemRoots = systemRoots
        trustPolicy = request.hostTrustPolicy
        self.cookies = cookies
        self.worker = worker
        self.progress = progress
        reportsProgress = request.observesProgress
    }

    /// Makes the transfer send again a request that `stale` ended: on a new connection, with its upload progress going
    /// on from where the failed send left it (none is reported until the new send passes that). Called before the
    /// transfer is handed to the worker.
    func sendAgain(after stale: StaleConnection) {
        freshConnection = true
        uploaded = stale.uploaded
    }

    /// Asks the worker to remove the transfer (from any thread); it ends as cancelled.
    func cancel() {
        worker.cancel(self)
    }

    deinit {
        handle?.destroy()
        upload?.close()
        bodyStream?.close()
        body.reset()
    }

    // MARK: - Setting up

    /// Configures an easy handle (a fresh one, or one reset after an earlier transfer) for this exchange and keeps
    /// it until `releaseHandle()`.
    ///
    /// - Parameter makeResume: makes the closure that asks the worker to un-pause this transfer (a stream body has
    ///   bytes again, a stream's reader caught up), called from another thread; made only for a transfer that can
    ///   pause so (it holds weak references, which cost allocations every other request would pay for nothing).
    func configure(
        _ handle: CurlHandle, headers: inout CurlHeaderList?, resume makeResume: () -> @Sendable () -> Void
    ) throws {
        let easy = handle.easy
        self.handle = handle
        handle.errorBuffer[0] = 0
        let canPause: Bool = if case .stream = request.body { true } else { request.receiver != nil }
        if canPause { resume = makeResume() }
        let requested = request.address
        guard let address = requested.text else { throw URLError(.badURL) }
        let context = Unmanaged.passUnretained(self).toOpaque()
        // What the handle holds from its last transfer, when that was a plain GET it kept without a reset: options
        // already at the value this transfer wants are not set again (a string option is copied by libcurl, and the
        // content encodings' list is built anew, each time it is set). Noted in place as each is set, so that the
        // settings say what the handle holds even when configuring stops at an error.
        let reused = handle.settings.primed
        // libcurl follows no redirect (the engine does), so the response is the request URL's (as libcurl sends it,
        // and as URLSessionEngine's response has it: see `URLComposition.canonical`), kept as text when the request's
        // is.
        if handle.settings.url != address {
            set(easy, .url, address)
            handle.settings.url = address
            // Worked out when the handle's URL changes, not for every request: reading a host such as `127.0.0.1`
            // and the scheme took more instructions than the rest of setting up a reused handle.
            handle.settings.canonicalURL = URLComposition.canonical(address)
            handle.settings.secure = address.utf8.prefix(6).lazy.map({ $0 | 0x20 }).elementsEqual("https:".utf8)
        }
        responseAddress = handle.settings.canonicalURL.map { .url($0) } ?? requested
        if !reused {
            set(easy, .noSignal, 1)
            set(easy, .followLocation, 0)
            set(easy, .protocols, CurlLibrary.httpProtocols)  // never file://, dict:// or any other scheme
            set(easy, .errorBuffer, UnsafeRawPointer(handle.errorBuffer))
            // Sent when the request has no `User-Agent` of its own (libcurl sends none), as URLSessionEngine does.
            set(easy, .userAgent, EngineRequest.defaultUserAgent)
            // Compressed bodies are asked for and decoded, whatever the request's own `Accept-Encoding` (which then
            // goes instead of libcurl's list): a body arrives decoded on every engine, as URLSession decodes it.
            set(easy, .acceptEncoding, "")
            sb_easy_setopt_data_callback(easy, CurlLibrary.Option.writeFunction.rawValue, curlWrite)
            sb_easy_setopt_data_callback(easy, CurlLibrary.Option.headerFunction.rawValue, curlHeader)
            handle.settings.primed = true
        }
        // A larger receive buffer than libcurl's 16 KiB: a 1 MiB body then takes 16 reads and callbacks, not 64, which
        // cut the CPU of a 1 MiB GET by about a sixth. Paced and streamed bodies keep 16 KiB chunks (a chunk is what
        // the pacer holds back, or what a stream's reader gets at once). Checked every time: a reused handle may hold
        // the other size.
        let buffered = request.maxReceiveBytesPerSecond == nil && request.receiver == nil
        let bufferSize = buffered ? Self.receiveBufferSize : Self.streamedChunkSize
        if handle.settings.bufferSize != bufferSize {
            set(easy, .bufferSize, bufferSize)
            handle.settings.bufferSize = bufferSize
        }
        sb_easy_setopt_pointer(easy, CurlLibrary.Option.writeData.rawValue, context)
        sb_easy_setopt_pointer(easy, CurlLibrary.Option.headerData.rawValue, context)

        // The idle timeout is measured here (`isIdle`), not with libcurl's low-speed limit, which averages over
        // its window: it cut off a server dripping a byte now and then, and fired late on one that stalled.
        lastActivity = .now
        // Set whether used or not (to libcurl's default when not), unless the handle holds that value
        // already: a handle that served a plain GET is reused without a reset (see `handleNeedsReset`), and may still
        // hold that GET's values.
        let timeout = request.totalTimeout.map { max(1, Int($0.seconds * 1000)) } ?? 0
        if handle.settings.timeout != timeout {
            set(easy, .timeoutMilliseconds, timeout)
            handle.settings.timeout = timeout
        }
        // The receive limit is kept here, chunk by chunk (see `ReceivePacer`); the send limit by libcurl, whose check
        // between sends is fine-grained enough.
        pacer = request.maxReceiveBytesPerSecond.map(ReceivePacer.init)
        paced = pacer != nil
        if let rate = request.maxSendBytesPerSecond {
            sb_easy_setopt_offset(easy, CurlLibrary.Option.maxSendSpeedLarge.rawValue, rate)
        }
        if freshConnection { set(easy, .freshConnect, 1) }
        if let trustPolicy { try apply(trustPolicy, to: easy, context: context) }

        let method = request.method
        switch request.body {
        case .none:
            if method == .head {
                set(easy, .noBody, 1)
            } else if method == .get {
                // A handle kept from a plain GET is set for one already.
                if !reused { set(easy, .httpGet, 1) }
            } else if method.anticipatesBody {
                sb_easy_setopt_offset(easy, CurlLibrary.Option.postFieldSizeLarge.rawValue, 0)
                set(easy, .copyPostFields, "")
            }
        case .data(let data):
            sb_easy_setopt_offset(easy, CurlLibrary.Option.postFieldSizeLarge.rawValue, Int64(data.count))
            data.withUnsafeBytes { bytes in
                _ = sb_easy_setopt_pointer(
                    easy, CurlLibrary.Option.copyPostFields.rawValue,
                    bytes.baseAddress ?? UnsafeRawPointer(bitPattern: 1)!)
            }
            observeUpload(easy, context: context)
        case .file(let file):
            do {
                upload = try LengthHeldFile(file, length: request.body.count ?? 0)
            } catch {
                throw UploadFile.unreadable(file)
            }
            setUploadCallbacks(easy, length: request.body.count ?? 0, context: context)
        case .stream(let stream):
            bodyStream = CurlBodyStream(stream, ready: resume ?? {})
            setUploadCallbacks(easy, length: stream.length, context: context)
        }
        // Wait for a connection that may multiplex (HTTP/2) rather than open one per request.
        let pipeWait = handle.settings.secure ? 1 : 0
        if handle.settings.pipeWait != pipeWait {
            set(easy, .pipeWait, pipeWait)
            handle.settings.pipeWait = pipeWait
        }
        if method != .get && method != .head && !(method == .post && request.body != .none && !request.body.isStreamed)
        {
            set(easy, .customRequest, method.rawValue)
        }

        // No `Expect: 100-continue` round trip before bodies (libcurl adds none to a request without one), and no
        // `Content-Type` the caller did not set (libcurl labels what it posts `application/x-www-form-urlencoded`).
        var removed = CurlHeaderList.Removed()
        if case .none = request.body {} else { removed.insert(.expect) }
        if method != .get, method != .head, request.headers["Content-Type"] == nil { removed.insert(.contentType) }
        if let last = headers, last.matches(request.headers, removed: removed) {
            headerList = last
        } else {
            var list: OpaquePointer?
            for field in request.headers {
                list = Self.append(field, to: list)
            }
            if removed.contains(.expect) { list = sb_slist_append(list, "Expect:") }
            if removed.contains(.contentType) { list = sb_slist_append(list, "Content-Type:") }
            headerList = CurlHeaderList(list, fields: request.headers, removed: removed)
            headers = headerList
        }
        // The same list as the handle's last transfer sent (`lastHeaders`) is still set on it.
        let list = headerList?.list.map { UnsafeRawPointer($0) }
        if !reused || handle.settings.headerList != list {
            sb_easy_setopt_pointer(easy, CurlLibrary.Option.httpHeader.rawValue, list)
            handle.settings.headerList = list
        }
        plainGet =
            method == .get && request.body == .none && request.receiver == nil && pacer == nil && !freshConnection
            && request.maxSendBytesPerSecond == nil && trustPolicy == nil
    }

    /// Appends `Name: value` to a libcurl header list (which copies it), composed in a buffer on the stack: a string
    /// and a C copy of it per field cost two allocations each.
    private static func append(_ field: HTTPHeaders.Field, to list: OpaquePointer?) -> OpaquePointer? {
        let (name, value) = (field.name, field.value)
        if value.utf8.allSatisfy(HTTPHeaders.isBlank) {
            // `Name:` with nothing after it would remove the field (libcurl's rule, for its own fields); `Name;`
            // sends it with an empty value, as URLSession does.
            return sb_slist_append(list, name + ";")
        }
        return name.withUTF8Bytes { name in
            value.withUTF8Bytes { value in
                withUnsafeTemporaryAllocation(of: CChar.self, capacity: name.count + value.count + 3) { line in
                    let bytes = UnsafeMutableRawBufferPointer(line)
                    bytes.copyMemory(from: UnsafeRawBufferPointer(name))
                    bytes[name.count] = UInt8(ascii: ":")
                    bytes[name.count + 1] = UInt8(ascii: " ")
                    UnsafeMutableRawBufferPointer(rebasing: bytes[(name.count + 2)...])
                        .copyMemory(from: UnsafeRawBufferPointer(value))
                    bytes[name.count + 2 + value.count] = 0
                    return sb_slist_append(list, line.baseAddress!)
                }
            }
        }
    }

    /// Whether the handle must be reset before another transfer. Not after a plain GET that completed: every option
    /// such a transfer sets, `configure` sets again for the next one (its header list and error buffer are replaced
    /// before the handle is used again), and a reset costs more than the rest of the handle's bookkeeping (it frees
    /// every option and copies libcurl's defaults back in). Any other transfer may have set options that `configure`
    /// leaves alone when unused (a body, a method, a send limit, TLS settings, a pause), so its handle is reset.
    var handleNeedsReset: Bool { !(plainGet && completed) }

    /// Gives the easy handle back once the transfer is out of the multi handle: the worker resets it for another
    /// transfer, unless `handleNeedsReset` says otherwise. The header list it pointed to is freed with this transfer,
    /// after the reset (or after the next transfer has set its own).
    func releaseHandle() -> CurlHandle? {
        defer { handle = nil }
        return handle
    }

    /// A body read through the read callback (a file or a stream): sent with a `Content-Length` when the length is
    /// known, chunked over HTTP/1.1 otherwise.
    private func setUploadCallbacks(_ easy: UnsafeMutableRawPointer, length: Int64?, context: UnsafeMutableRawPointer) {
        set(easy, .upload, 1)
        observeUpload(easy, context: context)
        sb_easy_setopt_offset(easy, CurlLibrary.Option.inFileSizeLarge.rawValue, length ?? -1)
        sb_easy_setopt_data_callback(easy, CurlLibrary.Option.readFunction.rawValue, curlRead)
        sb_easy_setopt_pointer(easy, CurlLibrary.Option.readData.rawValue, context)
        // Lets libcurl send the body again on a new connection when a reused one turns out dead.
        sb_easy_setopt_seek_callback(easy, CurlLibrary.Option.seekFunction.rawValue, curlSeek)
        sb_easy_setopt_pointer(easy, CurlLibrary.Option.seekData.rawValue, context)
    }

    /// Upload progress (and activity, for the idle check) comes from libcurl's progress callback. A request without
    /// a body sets none, which spares a call on every turn of the transfer.
    private func observeUpload(_ easy: UnsafeMutableRawPointer, context: UnsafeMutableRawPointer) {
        sb_easy_setopt_progress_callback(easy, CurlLibrary.Option.xferInfoFunction.rawValue, curlProgress)
        sb_easy_setopt_pointer(easy, CurlLibrary.Option.xferInfoData.rawValue, context)
        set(easy, .noProgress, 0)
    }

    /// Sets what the host's trust policy asks for. Options that hold for the connection (authorities, pins, the
    /// client identity, verification) are part of libcurl's match when it looks for a connection to reuse, so a
    /// connection made under one policy never serves another. Certificate pins are checked on the chain read at the
    /// handshake (CURLOPT_CERTINFO) before the request goes (CURLOPT_PREREQFUNCTION), on a connection of the
    /// request's own that no other request reuses: libcurl's match does not include them, and a reused connection
    /// has no chain to read.
    private func apply(_ policy: TrustPolicy, to easy: UnsafeMutableRawPointer, context: UnsafeMutableRawPointer)
        throws(HTTPError)
    {
        if !policy.evaluatesServerTrust {
            set(easy, .sslVerifyPeer, 0)
            set(easy, .sslVerifyHost, 0)
        }
        switch policy.roots {
        case .system: break
        case .adding(let file):
            guard let systemRoots else {
                throw HTTPError(
                    .unsupported,
                    "CurlEngine found no directory of system certificate authorities to add \(file.path) to; "
                        + "use .replacing with a file that holds every authority to trust")
            }
            set(easy, .caInfo, file.path)
            set(easy, .caPath, systemRoots)
        case .replacing(let file):
            set(easy, .caInfo, file.path)
            sb_easy_setopt_pointer(easy, CurlLibrary.Option.caPath.rawValue, nil)
        }
        if !policy.publicKeyPins.isEmpty {
            set(easy, .pinnedPublicKey, policy.publicKeyPins.joined(separator: ";"))
        }
        if !policy.certificatePins.isEmpty {
            guard sb_easy_setopt_prereq_callback(easy, CurlLibrary.Option.prereqFunction.rawValue, curlPrereq) == 0
            else {
                throw HTTPError(
                    .unsupported,
                    "CurlEngine cannot check certificate pins before a request is sent on libcurl "
                        + "\(CurlEngine.libraryVersion ?? "") (7.80 or newer is needed); pin public keys instead")
            }
            sb_easy_setopt_pointer(easy, CurlLibrary.Option.prereqData.rawValue, context)
            set(easy, .certInfo, 1)
            set(easy, .freshConnect, 1)
            set(easy, .forbidReuse, 1)
            set(easy, .sslSessionIDCache, 0)
        }
        switch policy.clientIdentity {
        case nil: break
        case .pem(let certificate, let key):
            set(easy, .sslCert, certificate.path)
            set(easy, .sslKey, key.path)
        case .pkcs12(let file, let password):
            set(easy, .sslCertType, "P12")
            set(easy, .sslCert, file.path)
            set(easy, .keyPassword, password)
        }
    }

    /// Called once the connection is up, before the request is sent (CURLOPT_PREREQFUNCTION, set only for a host
    /// with certificate pins): whether the chain the server presented has a pinned certificate.
    func connected() -> Int32 {
        guard let easy, let policy = trustPolicy else { return 0 }
        var chain: [Data] = []
        while let pem = sb_easy_peer_certificate(easy, Int32(chain.count)) {
            guard let certificate = DERCertificate.fromPEM(String(cString: pem)).first else { break }
            chain.append(certificate)
        }
        // The key is libcurl's to check (CURLOPT_PINNEDPUBLICKEY), at the handshake.
        if !chain.isEmpty, policy.certificatePinsMatch(chain: chain) { return 0 }
        failure = HTTPError(
            .pinning,
            "the certificates \(request.url?.host ?? "the host") presented match none of its certificate pins"
                + (chain.isEmpty ? " (it presented none that could be read)" : ""))
        return 1
    }

    private func set(_ easy: UnsafeMutableRawPointer, _ option: CurlLibrary.Option, _ value: Int) {
        sb_easy_setopt_long(easy, option.rawValue, value)
    }

    private func set(_ easy: UnsafeMutableRawPointer, _ option: CurlLibrary.Option, _ value: String) {
        value.withCString { _ = sb_easy_setopt_pointer(easy, option.rawValue, $0) }
    }

    private func set(_ easy: UnsafeMutableRawPointer, _ option: CurlLibrary.Option, _ value: UnsafeRawPointer) {
        sb_easy_setopt_pointer(easy, option.rawValue, value)
    }

    // MARK: - Callbacks (worker thread)

    func received(header line: UnsafeRawBufferPointer) -> Int {
        activity &+= 1
        answered = true
        let text = Self.trimmed(line[...])
        if lastIsField, let first = line.first, first == 0x20 || first == 0x09 {
            // A folded line (obs-fold) continues the field before it; libcurl hands it over as a line of its own.
            let continuation = UnsafeRawBufferPointer(rebasing: text)
            fields.continueLast(continuation)
            if lastIsSetCookie, !setCookies.isEmpty, !continuation.isEmpty {
                setCookies[setCookies.count - 1] += " " + HTTPHeaders.receivedText(continuation)
            }
        } else if Self.isStatusLine(text) {
            // `HTTP/1.1 200 OK`, `HTTP/2 200`; in any case, as libcurl (and so URLSession) reads it.
            let space = text.firstIndex(of: UInt8(ascii: " ")) ?? text.endIndex
            version = String(decoding: text[..<space], as: UTF8.self)
            status = Self.statusCode(text[space...].drop { $0 == UInt8(ascii: " ") })
            fields = ReceivedFields()
            lastIsField = false
            setCookies = []
            head = nil
            streaming = false
        } else if text.isEmpty {
            // The end of a head; an interim `1xx` head is followed by the real one.
            lastIsField = false
            guard status >= 200 else { return line.count }
            let ordered = HTTPHeaders(received: fields)
            // A stream's answer has arrived with its head (its body is its reader's): its cookies are kept now, before
            // the reader hears of it, and not again at the end.
            let opensStream = request.receiver?.wouldAccept(status: status) == true
            // A constant: a variable was copied for each call that reads it.
            let head = EngineResponse(
                status: status, address: responseAddress, httpVersion: version, headers: ordered, body: Data(),
                setCookieFields: setCookies.isEmpty || opensStream ? nil : setCookies)
            // A head that is not sound HTTP is refused whole (its cookies are not kept), as browsers refuse it.
            if let refusal = head.headRefusal {
                failure = refusal
                return 0
            }
            counter = DownloadCounter(response: head)
            request.onEvent?(.responseHead(status: status, headers: ordered))
            // A redirect that will be followed is not the answer: its body is dropped, and not held to the limit
            // (URLSession does not hand such a body over at all).
            // (Under a policy of its own, a redirect may be the answer: its body is held to the limit.)
            limitsBody =
                request.memoryLimit != nil
                && (!request.redirectPolicy.isDefault || Redirects.next(after: head, for: request) == nil)
            if limitsBody, let tooLarge = request.tooLargeHead(status: status, bodyLength: counter.bodyLength) {
                failure = tooLarge
                return 0
            }
            if opensStream, let cookies, !setCookies.isEmpty, let url = head.url {
                CookieRules.store(setCookies, for: url, in: cookies)
            }
            if let receiver = request.receiver, receiver.accepts(head) {
                streaming = true
                self.head = consume head
                return line.count
            }
            do {
                sink = try request.sink(for: head, mode: .buffered)
            } catch {
                failure = error
                return 0
            }
            body.reset(expectedLength: sink == nil ? counter.bodyLength : nil)
            // Kept at its last use, so that it moves here (kept first and read after, it was copied: a reference
            // counted up and down for each of its parts).
            self.head = consume head
        } else if let colon = Self.colon(in: text) {
            // Spaces before the colon are not part of the name (RFC 9112 section 5.1 has a proxy remove them).
            let nameBytes = Self.trimmed(text[..<colon])
            // A name must be a token (RFC 9110 section 5.1): a field named "" or `X Name` is not HTTP, and
            // URLSession refuses the head (-1017); libcurl would hand it over, and it was kept under that name.
            guard !nameBytes.isEmpty, nameBytes.allSatisfy(HTTPMethod.isTokenByte) else {
                failure = URLError(
                    .cannotParseResponse, userInfo: [NSLocalizedDescriptionKey: Self.invalidFieldName])
                return 0
            }
            let name = UnsafeRawBufferPointer(rebasing: nameBytes)
            let value = UnsafeRawBufferPointer(rebasing: Self.trimmed(text[(colon + 1)...]))
            fields.append(name: name, value: value)
            lastIsField = true
            lastIsSetCookie = name.count == 10 && String.equalIgnoringASCIICase(name, "Set-Cookie".utf8)
            if lastIsSetCookie { setCookies.append(HTTPHeaders.receivedText(value)) }
        }
        return line.count
    }

    /// Where a head line's first `:` is (`memchr`: a byte-by-byte search of the slice took about four times the
    /// instructions, for every field of every head).
    private static func colon(in text: Slice<UnsafeRawBufferPointer>) -> Int? {
        guard let base = text.base.baseAddress, !text.isEmpty,
            let found = memchr(base + text.startIndex, Int32(UInt8(ascii: ":")), text.count)
        else { return nil }
        return base.distance(to: UnsafeRawPointer(found))
    }

    /// Whether a head line starts with `HTTP/` (in any case): a status line.
    private static func isStatusLine(_ text: Slice<UnsafeRawBufferPointer>) -> Bool {
        guard text.count >= 5 else { return false }
        let start = text.startIndex
        return text[start] | 0x20 == UInt8(ascii: "h") && text[start + 1] | 0x20 == UInt8(ascii: "t")
            && text[start + 2] | 0x20 == UInt8(ascii: "t") && text[start + 3] | 0x20 == UInt8(ascii: "p")
            && text[start + 4] == UInt8(ascii: "/")
    }

    /// The three digits that start a status line's rest (`200 OK`), or 0 when they are not there.
    private static func statusCode(_ bytes: Slice<UnsafeRawBufferPointer>) -> Int {
        var code = 0
        var digits = 0
        for byte in bytes {
            guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { break }
            guard digits < 3 else { return 0 }
            code = code * 10 + Int(byte - UInt8(ascii: "0"))
            digits += 1
        }
        return digits == 3 ? code : 0
    }

    /// Why a head with a field name that is not a token is refused.
    static let invalidFieldName =
        "the response head has a field whose name is empty or not a token (RFC 9110 section 5.1): it is not HTTP"

    /// The bytes without leading and trailing spaces, tabs, CRs and LFs.
    private static func trimmed(_ bytes: Slice<UnsafeRawBufferPointer>) -> Slice<UnsafeRawBufferPointer> {
        func isSpace(_ byte: UInt8) -> Bool { byte == 0x20 || byte == 0x09 || byte == 0x0D || byte == 0x0A }
        var start = bytes.startIndex
        var end = bytes.endIndex
        while start < end, isSpace(bytes[start]) { start += 1 }
        while end > start, isSpace(bytes[end - 1]) { end -= 1 }
        return bytes[start..<end]
    }

    func received(body bytes: UnsafeRawBufferPointer) -> Int {
        guard !bytes.isEmpty else { return 0 }
        if paced, let due = pacer!.admit(bytes.count, at: .now) {
            receiveDue = due
            return 0x1000_0001  // CURL_WRITEFUNC_PAUSE: libcurl keeps the chunk and offers it again when un-paused
        }
        activity &+= 1
        answered = true
        if streaming, let receiver = request.receiver, let resume {
            guard receiver.offer(Data(bytes), resume: resume) else {
                waitingForReader = true
                return 0x1000_0001  // CURL_WRITEFUNC_PAUSE: the chunk is offered again once the reader has caught up
            }
            let report = counter.add(bytes.count)
            if reportsProgress { progress(report) }
            return bytes.count
        }
        if let sink {
            do {
                try sink.write(Data(bytes))
            } catch {
                failure = error
                return 0
            }
        } else {
            if limitsBody, let tooLarge = request.tooLargeBody(received: counter.received, adding: bytes.count) {
                failure = tooLarge
                return 0
            }
            body.append(bytes)
        }
        let report = counter.add(bytes.count)
        if reportsProgress { progress(report) }
        return bytes.count
    }

    func read(into buffer: UnsafeMutableRawBufferPointer) -> Int {
        if let bodyStream {
            switch bodyStream.read(into: buffer) {
            case .bytes(let count):
                handedOver += Int64(count)
                return count
            case .pause:
                waitingForBody = true
                return 0x1000_0001  // CURL_READFUNC_PAUSE
            case .end: return 0
            case .failed(let error):
                failure = error
                return 0x1000_0000  // CURL_READFUNC_ABORT
            }
        }
        guard upload != nil else { return 0 }
        do {
            // A file that grew or shrank since the send started fails the request, as on URLSessionEngine.
            let chunk = try upload!.next(upTo: buffer.count)
            chunk.copyBytes(to: buffer)
            return chunk.count
        } catch {
            failure = error
            return 0x1000_0000  // CURL_READFUNC_ABORT
        }
    }

    /// Rewinds the body to `offset` (libcurl asks before sending it again): a file seeks, a stream starts over from
    /// a new one (only to its start). Answers `CURL_SEEKFUNC_OK` (0), or `CURL_SEEKFUNC_CANTSEEK` (2).
    func seek(to offset: Int64, origin: Int32) -> Int32 {
        guard origin == 0 /* SEEK_SET */, offset >= 0 else { return 2 }
        if upload != nil {
            do {
                try upload!.seek(to: offset)
                return 0
            } catch {
                return 2
            }
        }
        if case .stream(let stream) = request.body, offset == 0, let resume {
            bodyStream?.close()
            bodyStream = CurlBodyStream(stream, ready: resume)
            return 0
        }
        return 2
    }

    func reportUpload(total: Int64, sent: Int64) {
        // libcurl counts what it wrote: for a chunked body, the chunks' sizes and line ends too. Progress counts the
        // body's bytes, as URLSessionEngine's does.
        var sent = sent
        if case .stream(let stream) = request.body, stream.length == nil { sent = min(sent, handedOver) }
        guard sent > uploaded else { return }
        uploaded = sent
        activity &+= 1
        progress(TransferProgress(direction: .upload, completed: sent, expected: total > 0 ? total : nil))
    }

    // MARK: - Finishing (worker thread)

    /// Un-pauses a transfer the pacer held, once its chunk is due (worker thread).
    func resumeReceivingIfDue(at now: ContinuousClock.Instant) {
        guard let due = receiveDue, due <= now, let easy else { return }
        receiveDue = nil
        sb_easy_pause(easy, 0)  // CURLPAUSE_CONT: the held chunk comes to `received(body:)` again
    }

    /// Un-pauses the transfer: its request body stream has bytes again, or its stream's reader has caught up.
    func resumeTransfer() {
        guard let easy else { return }
        waitingForBody = false
        waitingForReader = false
        activity &+= 1
        sb_easy_pause(easy, 0)  // CURLPAUSE_CONT
    }

    /// Whether nothing went either way for longer than the idle timeout (waiting for the body stream aside). Called
    /// by the worker every 50 ms, so activity is timed to within that.
    func isIdle(at now: ContinuousClock.Instant) -> Bool {
        if activity != checkedActivity || waitingForBody || waitingForReader || receiveDue != nil {
            checkedActivity = activity
            lastActivity = now
            return false
        }
        guard let lastActivity else { return false }
        return now - lastActivity > idleLimit
    }

    /// Removed from the multi handle for idleness: ends as URLSession's idle timeout does.
    func idledOut() {
        bodyStream?.close()
        sink?.abandon()
        sink = nil
        finish(.failure(URLError.idleTimeout(idleLimit)))
    }

    func complete(code: Int32) {
        completed = code == 0
        bodyStream?.close()
        if code != 0 {
            sink?.abandon()
            if failure == nil, code == 55, !answered, !freshConnection,
                StaleConnection.mayResend(request, sent: uploaded), let easy, Self.reusedConnection(easy)
            {
                finish(.failure(StaleConnection(uploaded: uploaded, error: error(for: code))))
                return
            }
            finish(.failure(failure ?? error(for: code)))
            return
        }
        guard head != nil else {
            finish(
                .failure(
                    status > 0 && status < 200 ? URLError.noFinalResponse(after: status) : URLError(.badServerResponse))
            )
            return
        }
        var length: Int64?
        if let sink {
            do {
                length = try sink.close()
            } catch {
                finish(
                    .failure(HTTPError(.fileSystem, "the download could not be written: \(error)", underlying: error)))
                return
            }
        }
        // Completed where it is kept, then taken out, never copied: the transfer outlives the exchange a little (the
        // worker recycles it after), and a copy, or a variable changed and then handed on, is one more count up and
        // down of each of the response's references.
        head?.body = body.take()
        head?.fileLength = length
        if let easy { head?.metrics = Self.metrics(of: easy, version: version) }
        if let head = head.take() { finish(.success(head)) }
    }

    /// Whether the transfer that just ended on `easy` used a connection an earlier one had opened (CURLINFO_NUM_CONNECTS:
    /// how many connections it opened itself).
    private static func reusedConnection(_ easy: UnsafeMutableRawPointer) -> Bool {
        var opened = 0
        return sb_easy_getinfo_long(easy, 0x20_0000 + 26, &opened) == 0 && opened == 0
    }

    /// What libcurl measured of the transfer that just ended on `easy`: its times run from when the handle was
    /// added to the multi handle, and the body counts are before content decoding.
    static func metrics(of easy: UnsafeMutableRawPointer, version: String) -> TransferMetrics {
        func microseconds(_ info: Int32) -> Duration? {
            var value: Int64 = 0
            guard sb_easy_getinfo_offset(easy, 0x60_0000 + info, &value) == 0, value >= 0 else { return nil }
            return .microseconds(value)
        }
        func count(_ info: Int32) -> Int64? {
            var value: Int64 = 0
            return sb_easy_getinfo_offset(easy, 0x60_0000 + info, &value) == 0 && value >= 0 ? value : nil
        }
        func number(_ info: Int32) -> Int? {
            var value = 0
            return sb_easy_getinfo_long(easy, 0x20_0000 + info, &value) == 0 ? value : nil
        }
        // CURLINFO_TOTAL_TIME_T (50), _NAMELOOKUP_ (51), _CONNECT_ (52), _STARTTRANSFER_ (54), _APPCONNECT_ (56):
        // each from the start, so a phase is the difference between two of them.
        let lookedUp = microseconds(51)
        let connected = microseconds(52)
        let secured = microseconds(56)
        // CURLINFO_NUM_CONNECTS: how many connections the transfer had to open; none means it reused one.
        let opened = number(26)
        // The phases, for a transfer that opened its connection.
        let phases: (lookup: Duration, connect: Duration, secure: Duration?)? =
            if let opened, opened > 0, let lookedUp, let connected {
                (lookedUp, connected - lookedUp, secured.flatMap { $0 > .zero ? $0 - connected : nil })
            } else {
                nil
            }
        var remoteAddress: String?
        var address: UnsafePointer<CChar>?
        if sb_easy_getinfo_string(easy, 0x10_0000 + 32, &address) == 0, let address {  // CURLINFO_PRIMARY_IP
            let text = String(cString: address)
            if !text.isEmpty { remoteAddress = text }
        }
        let port = number(40)  // CURLINFO_PRIMARY_PORT
        // Made in one piece and returned as it is: a variable of this type, changed and then returned, was copied
        // out (a count up and down of each of its strings, for every transfer).
        return TransferMetrics(
            total: microseconds(50) ?? .zero, timeToFirstByte: microseconds(54),
            nameLookup: phases?.lookup, connect: phases?.connect,
            secureConnection: phases?.secure,
            bytesSent: count(7), bytesReceived: count(8),  // CURLINFO_SIZE_UPLOAD_T, CURLINFO_SIZE_DOWNLOAD_T
            reusedConnection: opened.map { $0 == 0 }, httpVersion: version, remoteAddress: remoteAddress,
            remotePort: port.flatMap { $0 > 0 ? $0 : nil })
    }

    /// Removed from the multi handle by a cancel: what arrived stays in the file (a resumable download continues
    /// from it), and the exchange ends as cancelled.
    func cancelled() {
        bodyStream?.close()
        sink?.abandon()
        sink = nil
        finish(.failure(CancellationError()))
    }

    func finish(_ result: Result<EngineResponse, any Error>) {
        let continuation = continuation
        self.continuation = nil
        continuation?.resume(with: result)
    }

    /// Whether the response head announced a content encoding other than `identity`, which libcurl decodes.
    private var decodesBody: Bool {
        HTTPHeaders.isEncoding(head?.value(forHTTPHeaderField: "Content-Encoding"))
    }

    /// libcurl's result as the `URLError` URLSession would give, keeping libcurl's own words.
    private func error(for code: Int32) -> any Error {
        var detail = handle.map { String(cString: $0.errorBuffer) } ?? ""
        if detail.isEmpty { detail = String(cString: sb_easy_strerror(code)) }
        if code == 28, detail.hasPrefix("Operation timed out"), let total = request.totalTimeout {
            // CURLOPT_TIMEOUT_MS fired: the total timeout (the idle one is measured by the worker, `isIdle`).
            detail = URLError.totalTimeoutMessage(total) + " (\(detail))"
        }
        // The same code as URLSessionEngine gives for the same fault (see `SessionTransfer.urlError`).
        let urlCode: URLError.Code =
            switch code {
            case 6: .cannotFindHost
            case 7: .cannotConnectToHost
            case 28: .timedOut
            case 35: .secureConnectionFailed
            case 47: .httpTooManyRedirects
            // The connection was lost: reset, closed under a send, or closed before the body's end.
            case 18, 55: .networkConnectionLost
            // A receive that failed on the connection, or on what the server sent (a malformed chunk, a head too
            // large to read).
            case 56: detail.hasPrefix("Recv failure") ? .networkConnectionLost : .badServerResponse
            // What the server sent is not an HTTP answer: no status line, a status that is not three digits, a
            // malformed `Content-Length`, nothing at all. (The URL was checked before sending, so libcurl's
            // "unsupported protocol" is the status line's.)
            case 1, 8, 52: .badServerResponse
            case 61: .cannotDecodeContentData
            // A write that failed in libcurl's decoder, not in this engine (its own failures are kept and reported
            // instead): data after a gzip body's end.
            case 23: decodesBody ? .cannotDecodeContentData : .unknown
            case 60, 77: .serverCertificateUntrusted
            case 90: .serverCertificateUntrusted
            default: .unknown
            }
        if code == 27, head == nil {
            // CURLE_OUT_OF_MEMORY before the head was whole: a field longer than libcurl reads (its header buffer
            // refuses to grow past it, in those words), as URLSession on Linux finds too.
            return URLError.headFieldTooLong("\(detail) (libcurl error \(code))")
        }
        if code == 60 || code == 77 {
            return HTTPError(.serverTrust, "the server's certificate is not trusted: \(detail) (libcurl error \(code))")
        }
        if code == 58 || ((code == 35 || code == 56) && HTTPError.isClientCertificateAlert(detail)) {
            return HTTPError(
                .clientCertificate,
                (code == 58
                    ? "the client certificate could not be used: " : "the server refused the client certificate: ")
                    + "\(detail) (libcurl error \(code))")
        }
        if code == 90 {
            return HTTPError(
                .pinning,
                "the server's public key matches none of the pins for \(request.url?.host ?? "the host"): "
                    + "\(detail) (libcurl error \(code))")
        }
        return URLError(urlCode, userInfo: [NSLocalizedDescriptionKey: "\(detail) (libcurl error \(code))"])
    }
}

/// A request whose send failed (libcurl's `CURLE_SEND_ERROR`: the connection was reset or closed under it) on a
/// connection an earlier exchange had left open, before any byte of an answer: the server closed that connection while
/// it sat idle (an idle timeout, or a body of an earlier request it would not read), just as the request went out, and
/// never had the whole request. `CurlEngine` sends it once more on a new connection, as libcurl does itself when such a
/// connection fails while the answer is awaited; a send still in progress is not retried by libcurl.
struct StaleConnection: Error {
    /// The body bytes the failed send had reported as sent.
    let uploaded: Int64
    /// The failure, as the request would end with it.
    let error: any Error

    /// Whether a request whose send failed so may go again: one whose body was not all sent (over HTTP/1.1 always
    /// the case: nothing is written after the body's last byte), or an idempotent one. Over HTTP/2 the failure of a
    /// write for another request on the connection could reach one that was sent whole, which the server may have
    /// acted on. A stream of unknown length counts as not all sent.
    static func mayResend(_ request: EngineRequest, sent: Int64) -> Bool {
        request.method.isIdempotent || request.body.count.map { sent < $0 } ?? true
    }
}

// MARK: - C callbacks

// Each callback reaches its transfer without counting a reference up and down (libcurl calls them several times for
// every request). Safety: `context` is `Unmanaged.passUnretained(transfer)`, set in `configure`, and libcurl calls
// these only on the worker's thread, inside `curl_multi_perform` or the `curl_easy_pause` that resumes a transfer,
// while the transfer is among the worker's running ones (the worker takes it out of them only into a local reference
// it holds past `curl_multi_remove_handle`): the reference is valid for the whole call, as `takeUnretainedValue`
// already relied on.
private let curlWrite: SBDataCallback = { data, size, count, context in
    Unmanaged<CurlTransfer>.fromOpaque(context!)._withUnsafeGuaranteedRef {
        $0.received(body: UnsafeRawBufferPointer(start: data, count: size * count))
    }
}

private let curlHeader: SBDataCallback = { data, size, count, context in
    Unmanaged<CurlTransfer>.fromOpaque(context!)._withUnsafeGuaranteedRef {
        $0.received(header: UnsafeRawBufferPointer(start: data, count: size * count))
    }
}

private let curlPrereq: SBPrereqCallback = { context, _, _, _, _ in
    Unmanaged<CurlTransfer>.fromOpaque(context!)._withUnsafeGuaranteedRef { $0.connected() }
}

private let curlRead: SBDataCallback = { data, size, count, context in
    Unmanaged<CurlTransfer>.fromOpaque(context!)._withUnsafeGuaranteedRef {
        $0.read(into: UnsafeMutableRawBufferPointer(start: data, count: size * count))
    }
}

private let curlSeek: SBSeekCallback = { context, offset, origin in
    Unmanaged<CurlTransfer>.fromOpaque(context!)._withUnsafeGuaranteedRef { $0.seek(to: offset, origin: origin) }
}

private let curlProgress: SBProgressCallback = { context, _, _, uploadTotal, uploadNow in
    Unmanaged<CurlTransfer>.fromOpaque(context!)._withUnsafeGuaranteedRef {
        $0.reportUpload(total: uploadTotal, sent: uploadNow)
    }
    return 0
}

/// A libcurl easy handle and the buffer it writes its error text into, made and kept together: the worker keeps spare
/// ones for later transfers, so neither is allocated again for every request. A class: a transfer holds its handle,
/// and passing a reference cost less than copying the settings' strings and URL in and out of each transfer.
final class CurlHandle {
    let easy: UnsafeMutableRawPointer
    let errorBuffer: UnsafeMutablePointer<CChar>
    /// What `CurlTransfer.configure` set on the handle since it was made or last reset.
    var settings = Settings()

    private init(easy: UnsafeMutableRawPointer, errorBuffer: UnsafeMutablePointer<CChar>) {
        self.easy = easy
        self.errorBuffer = errorBuffer
    }

    /// Options a transfer set on the handle, which the next transfer need not set again when it wants the same: kept
    /// only while the handle is not reset (after a plain GET that completed; see `CurlTransfer.handleNeedsReset`),
    /// and cleared by `reset()`.
    struct Settings {
        /// Whether a transfer set the handle up (every option below, and those every transfer sets alike:
        /// callbacks, error buffer, protocols, no redirects, no signals); the values below are then what it set.
        var primed = false
        var url: String?
        /// For `url`: the URL a response has (`URLComposition.canonical`, `nil` when it is `url` as it is), and
        /// whether it is https (the text starts with the scheme and its colon, read there: `URL.scheme` makes a
        /// string of its own).
        var canonicalURL: URL?
        var secure = false
        var bufferSize: Int?
        var timeout: Int?
        var pipeWait: Int?
        /// The header list set (`nil` for none), once `primed`.
        var headerList: UnsafeRawPointer?
    }

    /// Resets every option to libcurl's default, and forgets what was set.
    func reset() {
        sb_easy_reset(easy)
        settings = Settings()
    }

    /// A new handle, or `nil` when libcurl cannot make one (out of memory).
    static func make() -> CurlHandle? {
        guard let easy = sb_easy_init() else { return nil }
        // CURL_ERROR_SIZE is 256.
        let buffer = UnsafeMutablePointer<CChar>.allocate(capacity: 256)
        buffer.initialize(repeating: 0, count: 256)
        return CurlHandle(easy: easy, errorBuffer: buffer)
    }

    /// Frees the handle, then its buffer.
    func destroy() {
        sb_easy_cleanup(easy)
        errorBuffer.deallocate()
    }
}

/// A libcurl header list and the fields it was built from. The worker keeps the last one made and hands it to the
/// next transfer that sends the same fields (most requests of an app send the same ones: its user agent, its
/// credentials), so that those fields are not copied into a new list, two allocations each, for every request. Each
/// transfer holds the list it sends; the last to let go frees it.
final class CurlHeaderList: @unchecked Sendable {
    // Safety: immutable once made; libcurl only reads the list, and it is freed once, in `deinit`, when no transfer
    // (and so no easy handle in use) holds it any more.
    let list: OpaquePointer?
    private let fields: HTTPHeaders
    private let removed: Removed

    /// Fields of libcurl's own that the list removes (`Name:` with nothing after it).
    struct Removed: OptionSet {
        let rawValue: UInt8
        /// `Expect: 100-continue`, which libcurl adds before a large body.
        static let expect = Removed(rawValue: 1)
        /// `Content-Type: application/x-www-form-urlencoded`, which libcurl adds to what it posts.
        static let contentType = Removed(rawValue: 2)
    }

    init(_ list: OpaquePointer?, fields: HTTPHeaders, removed: Removed) {
        self.list = list
        self.fields = fields
        self.removed = removed
    }

    deinit {
        if let list { sb_slist_free_all(list) }
    }

    /// Whether the list sends exactly these fields: names and values byte for byte (`String`'s `==` would take a
    /// composed `é` for a decomposed one, and the list would send the other bytes), in this order.
    func matches(_ other: HTTPHeaders, removed: Removed) -> Bool {
        removed == self.removed
            && fields.elementsEqual(other) { Self.sameBytes($0.name, $1.name) && Self.sameBytes($0.value, $1.value) }
    }

    /// Whether two strings hold the same UTF-8 bytes: compared as memory where both have them in one piece (every
    /// string made in Swift), not byte by byte through their views, where about 3% of the Center's own CPU on a small
    /// request had gone.
    private static func sameBytes(_ a: String, _ b: String) -> Bool {
        let (left, right) = (a.utf8, b.utf8)
        guard left.count == right.count else { return false }
        let compared = left.withContiguousStorageIfAvailable { left in
            right.withContiguousStorageIfAvailable { right in
                left.isEmpty || memcmp(left.baseAddress!, right.baseAddress!, left.count) == 0
            }
        }
        return (compared ?? nil) ?? left.elementsEqual(right)
    }
}
