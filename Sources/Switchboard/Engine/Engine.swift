import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The transport behind a `Center`: performs one HTTP exchange and reports progress.
///
/// An engine receives a fully encoded `EngineRequest` (URL, method, headers, body, timeouts) and returns the
/// response with its body, or throws. It does not follow application rules: status validation, decoding, hooks and
/// callbacks belong to the center. Cancellation is Swift task cancellation: when the calling task is cancelled, stop
/// the transfer and throw (`CancellationError` or `URLError(.cancelled)`). An engine that stops the same way when
/// `EngineRequest.cancellation` fires declares `honoursCancellation`, and saves the center a task per request.
///
/// Errors may be `URLError`s, `HTTPError`s, or anything else; the center maps them to `HTTPError` once.
///
/// ```swift
/// struct LoggingEngine: Engine {
///     let base: any Engine
///     func perform(
///         _ request: EngineRequest,
///         progress: @escaping @Sendable (TransferProgress) -> Void
///     ) async throws -> EngineResponse {
///         print(request.urlRequest.url!)
///         return try await base.perform(request, progress: progress)
///     }
/// }
/// ```
public protocol Engine: Sendable {
    /// Performs one HTTP exchange.
    ///
    /// - Parameters:
    ///   - request: what to send, and the limits to keep.
    ///   - progress: called as bytes are sent and received, from any thread.
    /// - Returns: the response and its body, whatever the status code.
    func perform(
        _ request: EngineRequest,
        progress: @escaping @Sendable (TransferProgress) -> Void
    ) async throws -> EngineResponse

    /// Whether `perform` stops when `EngineRequest.cancellation` fires, as it does for task cancellation. The center
    /// then runs an `async` request in the caller's task instead of a task of its own, which saves two thread hops a
    /// request. `false` by default; the built-in engines honour it. A center reads it once, when the engine is set.
    var honoursCancellation: Bool { get }

    /// Whether `perform` keeps `EngineRequest.maxReceiveBytesPerSecond` and `maxSendBytesPerSecond` (or fails with
    /// `HTTPError.Code.unsupported` what it cannot limit). `false` by default: the center then refuses a request with
    /// a speed limit before sending it, rather than let it run unlimited. The built-in engines honour it.
    var honoursRateLimits: Bool { get }

    /// Whether `perform` hands the body of a response to `EngineRequest.receiver` piece by piece as it arrives, when
    /// the request has one. `false` by default: the center then refuses a stream (`Center.stream(_:)`) with
    /// `HTTPError.Code.unsupported` before sending it, rather than wait for a body that may never end. The built-in
    /// engines stream.
    var streamsResponses: Bool { get }

    /// Whether `perform` follows redirects as `EngineRequest.redirectPolicy` says. `false` by default: the center
    /// then refuses a request with any policy but `.follow` with `HTTPError.Code.unsupported` before sending it,
    /// rather than let the engine follow as it would. The built-in engines honour it.
    var honoursRedirectPolicy: Bool { get }

    /// Whether `perform` applies `EngineRequest.trustPolicy` to each host it connects to, or fails with
    /// `HTTPError.Code.unsupported` what it cannot apply. `false` by default: the center then refuses a request to a
    /// host with a trust policy before sending it, rather than let it go with the system's trust. The built-in
    /// engines honour it.
    var honoursTrustPolicy: Bool { get }
}

extension Engine {
    public var honoursCancellation: Bool { false }
    public var honoursRateLimits: Bool { false }
    public var streamsResponses: Bool { false }
    public var honoursRedirectPolicy: Bool { false }
    public var honoursTrustPolicy: Bool { false }
}

/// What an engine sends: the request line and headers, the body, and the time limits.
///
/// The method, URL, headers and idle timeout are Switchboard's own values, which an engine reads directly;
/// `urlRequest` presents them as a Foundation `URLRequest` for engines built on one, made only when asked for.
public struct EngineRequest: Sendable {
    /// The method.
    public var method: HTTPMethod {
        get { storage.value.method }
        set { storage.uncheck().value.method = newValue }
        _modify { yield &storage.uncheck().value.method }
    }
    /// The URL.
    ///
    /// The center keeps a composed URL in a plain form as its text, and makes Foundation's `URL` from it when this
    /// is read (see `URLAddress`); read it once where it is needed more than once.
    public var url: URL? {
        get { storage.value.address.url }
        set { storage.unique().value.address = URLAddress(newValue) }
    }
    /// The URL, as Foundation's value or as text it takes unchanged.
    var address: URLAddress {
        get { storage.value.address }
        set { storage.unique().value.address = newValue }
    }
    /// Whether `checkBeforeSending` passed, with nothing it reads set since: the center checks a request as it
    /// encodes it, and each built-in engine checks again as it starts (see `checkBeforeSending`).
    var checked: Bool {
        get { storage.value.checked }
        set { storage.unique().value.checked = newValue }
    }
    /// The URL's text (`absoluteString`), read without parsing it.
    var urlText: String? { storage.value.address.text }
    /// The header fields.
    public var headers: HTTPHeaders {
        get { storage.value.headers }
        set { storage.uncheck().value.headers = newValue }
        _modify { yield &storage.uncheck().value.headers }
    }
    /// The idle timeout: the longest wait without any data. 60 seconds unless set; at most about 31.7 years (10⁹
    /// seconds), which a longer one reads as.
    public var timeout: Duration {
        get { storage.value.timeout.boundedAsWait }
        set { storage.uncheck().value.timeout = newValue }
        _modify { yield &storage.uncheck().value.timeout }
    }
    /// The body to send.
    public var body: Body {
        get { storage.value.body }
        set { storage.uncheck().value.body = newValue }
        _modify { yield &storage.uncheck().value.body }
    }
    /// Where the response body goes.
    public var destination: Destination {
        get { storage.value.destination }
        set { storage.unique().value.destination = newValue }
        _modify { yield &storage.unique().value.destination }
    }
    /// The longest the whole exchange may take, or `nil` for no limit; the engine enforces it. At most about 31.7
    /// years (10⁹ seconds), which a longer one reads as.
    public var totalTimeout: Duration? {
        get { storage.value.totalTimeout?.boundedAsWait }
        set { storage.uncheck().value.totalTimeout = newValue }
        _modify { yield &storage.uncheck().value.totalTimeout }
    }
    /// The most bytes per second the response body may arrive at, or `nil`. An engine that enforces it says so with
    /// `Engine.honoursRateLimits`, and fails what it cannot limit with `HTTPError.Code.unsupported`.
    public var maxReceiveBytesPerSecond: Int64? {
        get { storage.value.maxReceiveBytesPerSecond }
        set { storage.unique().value.maxReceiveBytesPerSecond = newValue }
        _modify { yield &storage.unique().value.maxReceiveBytesPerSecond }
    }
    /// The most bytes of response body (decoded) the engine takes into memory, or `nil` for no limit: past it, the
    /// exchange ends with `HTTPError.Code.responseTooLarge`, at the head when its `Content-Length` (without a
    /// `Content-Encoding`) is larger. A body written to a file or
    /// handed to a `receiver` is not counted. The center checks what an engine returns as well.
    public var maxResponseBytes: Int64? {
        get { storage.value.maxResponseBytes }
        set { storage.unique().value.maxResponseBytes = newValue }
        _modify { yield &storage.unique().value.maxResponseBytes }
    }
    /// The limit on a body that goes to memory: what the engine counts against `maxResponseBytes`.
    var memoryLimit: Int64? {
        guard let limit = storage.value.maxResponseBytes, destination == .memory, receiver == nil else { return nil }
        return limit
    }

    /// The error for a response head whose announced body (`DownloadCounter.bodyLength`: its `Content-Length`,
    /// without a `Content-Encoding`) is longer than `memoryLimit`; `nil` when it fits, or there is no body to come
    /// (the answer to a `HEAD`, a `204`, a `304`).
    func tooLargeHead(status: Int, bodyLength: Int64?) -> HTTPError? {
        guard let limit = memoryLimit, let bodyLength, bodyLength > limit, method != .head, status != 204,
            status != 304
        else { return nil }
        return HTTPError.responseTooLarge(limit: limit, announced: bodyLength)
    }

    /// The error for body bytes that would pass `memoryLimit`, with `received` already taken; `nil` when they fit.
    func tooLargeBody(received: Int64, adding count: Int) -> HTTPError? {
        guard let limit = memoryLimit, received + Int64(count) > limit else { return nil }
        return HTTPError.responseTooLarge(limit: limit)
    }
    /// The most bytes per second the request body may be sent at, or `nil`; as `maxReceiveBytesPerSecond`.
    public var maxSendBytesPerSecond: Int64? {
        get { storage.value.maxSendBytesPerSecond }
        set { storage.unique().value.maxSendBytesPerSecond = newValue }
        _modify { yield &storage.unique().value.maxSendBytesPerSecond }
    }
    /// Which redirects the engine follows (see `RedirectPolicy`). The center sets it from the request's policy, else
    /// its own.
    public var redirectPolicy: RedirectPolicy {
        get { storage.value.redirectPolicy }
        set { storage.unique().value.redirectPolicy = newValue }
        _modify { yield &storage.unique().value.redirectPolicy }
    }
    /// What TLS trusts and presents for the request's host (`TrustPolicy.system` when its center sets no policy for
    /// it, and for a plain `http` URL, which has no TLS). An engine that follows redirects asks a hop's own request,
    /// whose URL is the hop's.
    public var trustPolicy: TrustPolicy { hostTrustPolicy ?? .system }
    /// The trust policy of an `https` request's host, or `nil` for the system's trust.
    var hostTrustPolicy: TrustPolicy? {
        guard let table = storage.value.trust else { return nil }
        return table.policy(for: url)
    }
    /// The center's trust policies, by host (`nil` when it has none).
    var trust: TrustTable? {
        get { storage.value.trust }
        set { storage.unique().value.trust = newValue }
    }
    /// The identifier of the request at the center, for logs and stubs.
    public var id: RequestID? {
        get { storage.value.id }
        set { storage.unique().value.id = newValue }
        _modify { yield &storage.unique().value.id }
    }
    /// Called when `sink(for:)` opens the destination file for a response head, with the head's status and fields:
    /// the download's own business (what it needs to resume), which no engine has to know about.
    var onFileOpened: (@Sendable (_ status: Int, _ field: (String) -> String?) -> Void)? {
        get { storage.value.onFileOpened }
        set { storage.unique().value.onFileOpened = newValue }
        _modify { yield &storage.unique().value.onFileOpened }
    }
    /// Whether the destination file is a download's partial file, which Switchboard names and which is never a
    /// symbolic link: `sink(for:)` then opens it without following one (one put in its place would have the body
    /// written through it, into whatever file it points to).
    var destinationIsPartialFile: Bool {
        get { storage.value.destinationIsPartialFile }
        set { storage.unique().value.destinationIsPartialFile = newValue }
    }
    /// Called as the exchange goes, from any thread, with each response head (a redirect's too) and each redirect the
    /// engine follows, for the center's `RequestObserver`s; `nil` when nobody observes. Engines should call it.
    public var onEvent: (@Sendable (EngineEvent) -> Void)? {
        get { storage.value.onEvent }
        set { storage.unique().value.onEvent = newValue }
        _modify { yield &storage.unique().value.onEvent }
    }
    /// Fires when the center cancels the request by its identifier while it runs in its caller's task (see
    /// `Engine.honoursCancellation`); `nil` when task cancellation is the only way. Engines that honour it treat it as
    /// task cancellation: `withCancellationHandler(operation:onCancel:)` and `isCancelled` do.
    public var cancellation: EngineCancellation? {
        get { storage.value.cancellation }
        set { storage.unique().value.cancellation = newValue }
        _modify { yield &storage.unique().value.cancellation }
    }
    /// Whether a redirect from `https` to plain `http` is followed. `false` by default: such a redirect fails with
    /// `HTTPError.Code.insecureRedirect`, so that nothing (a `307`/`308` body, cookies, the response) crosses the
    /// network in clear without the caller asking for it. The center sets it from `allowsInsecureRedirects`.
    public var allowsInsecureRedirects = false
    /// Whether header fields with secret names (by the console log's built-in rule: `X-Api-Key`, `Private-Token`,
    /// `X-Signature`) go with a redirect to another origin. `false` by default: they stay with the origin they were
    /// set for, as `Authorization`, `Cookie` and `Proxy-Authorization` always do. The center sets it from
    /// `forwardsSecretHeaders`.
    public var forwardsSecretHeaders = false
    /// Whether anyone listens to this exchange's progress. `true` unless set: an engine may then report progress
    /// once, at the end, and save the work of reporting each chunk (URLSessionEngine fetches an in-memory `GET` or
    /// `HEAD` body without a delegate call per chunk). The center clears it when a request has no progress handler.
    public var observesProgress = true
    /// Takes the response body piece by piece as it arrives, instead of `EngineResponse.body`: set by the center for
    /// a stream, on an engine whose `streamsResponses` is `true`. See `BodyReceiver` for what an engine does with it.
    public var receiver: BodyReceiver? {
        get { storage.value.receiver }
        set { storage.unique().value.receiver = newValue }
        _modify { yield &storage.unique().value.receiver }
    }
    /// The URL request this one was made from or last set to, for the settings it has beyond method, URL, headers
    /// and timeout (its cache policy, say), which `urlRequest` keeps.
    private var base: URLRequest? {
        get { storage.value.base }
        set { storage.unique().value.base = newValue }
        _modify { yield &storage.unique().value.base }
    }

    /// The stored properties, shared by copies of an engine request until one of them changes: the request is
    /// handed from step to step and to the engine, and a copy then costs one reference, not every field.
    struct Fields: Sendable {
        var method: HTTPMethod
        var address: URLAddress
        var headers: HTTPHeaders
        var timeout: Duration
        var body: Body
        var destination: Destination
        var totalTimeout: Duration?
        var maxReceiveBytesPerSecond: Int64?
        var maxSendBytesPerSecond: Int64?
        var maxResponseBytes: Int64?
        var redirectPolicy = RedirectPolicy.follow
        var trust: TrustTable?
        var id: RequestID?
        var onFileOpened: (@Sendable (_ status: Int, _ field: (String) -> String?) -> Void)?
        var destinationIsPartialFile = false
        var onEvent: (@Sendable (EngineEvent) -> Void)?
        var cancellation: EngineCancellation?
        var receiver: BodyReceiver?
        var base: URLRequest?
        /// Whether `checkBeforeSending` passed, with nothing it reads (method, headers, body, timeouts) set since.
        var checked = false
    }

    private var storage: CopyOnWrite<Fields>

    /// Creates an engine request from its method, URL and headers.
    public init(
        method: HTTPMethod = .get, url: URL, headers: HTTPHeaders = [:], timeout: Duration = .seconds(60),
        body: Body = .none, destination: Destination = .memory, totalTimeout: Duration? = nil
    ) {
        self.init(
            method: method, address: URLAddress(url), headers: headers, timeout: timeout, body: body,
            destination: destination, totalTimeout: totalTimeout)
    }

    /// Creates an engine request to an address (the center's, which may be text).
    init(
        method: HTTPMethod, address: URLAddress, headers: HTTPHeaders, timeout: Duration = .seconds(60),
        body: Body = .none, destination: Destination = .memory, totalTimeout: Duration?
    ) {
        storage = CopyOnWrite(
            Fields(
                method: method, address: address, headers: headers, timeout: timeout, body: body,
                destination: destination, totalTimeout: totalTimeout))
    }

    /// Creates an engine request from a URL request: its method, URL, header fields and timeout.
    public init(
        urlRequest: URLRequest, body: Body = .none, destination: Destination = .memory,
        totalTimeout: Duration? = nil, id: RequestID? = nil
    ) {
        storage = CopyOnWrite(
            Fields(
                method: .get, address: .url(nil), headers: [:], timeout: .seconds(60), body: body,
                destination: destination, totalTimeout: totalTimeout, id: id))
        self.urlRequest = urlRequest
    }

    /// The method, URL, headers and idle timeout as a Foundation URL request (`timeoutInterval` is the idle
    /// timeout). The body is in `body`, never in `httpBody`. Made when read; setting it sets those four values, and
    /// its other settings are kept for the next read.
    public var urlRequest: URLRequest {
        get { urlRequest(url: url) { _ in } }
        set {
            base = newValue
            method = HTTPMethod(rawValue: newValue.httpMethod ?? "GET")
            url = newValue.url
            headers = HTTPHeaders(newValue.allHTTPHeaderFields ?? [:])
            timeout = .seconds(newValue.timeoutInterval)
        }
    }

    /// The request as `urlRequest` makes it, to `url`, with its fields changed by `adjust` before they are set: a
    /// request is made with its fields in one assignment (on Linux each later change of a field copies them all).
    func urlRequest(url: URL?, adjusting adjust: (inout [String: String]) -> Void) -> URLRequest {
        var request: URLRequest
        if var base {
            base.url = url
            request = base
        } else {
            request = URLRequest(url: url ?? URL(string: "about:blank")!)
            // `URLRequest(url:)` takes a URL, not its absence: the request's own `nil` is kept.
            if url == nil { request.url = nil }
        }
        if request.httpMethod != method.rawValue { request.httpMethod = method.rawValue }
        var fields = headers.dictionary
        for (name, value) in fields where !value.isEmpty && value.utf8.allSatisfy(HTTPHeaders.isBlank) {
            // Blanks alone are an empty value: URLSession on Linux would hand libcurl `Name:` followed by blanks,
            // which libcurl takes as "leave this field out".
            fields[name] = ""
        }
        adjust(&fields)
        request.allHTTPHeaderFields = fields
        request.timeoutInterval = timeout.seconds
        return request
    }

    /// A request body.
    public enum Body: Sendable, Equatable {
        /// No body.
        case none
        /// Bytes in memory.
        case data(Data)
        /// A file, streamed from disk, sent with a `Content-Length`.
        case file(URL)
        /// A stream, opened afresh for every send: with a `Content-Length` when its length is known and the engine
        /// can send one, chunked otherwise.
        case stream(Request.BodyStream)

        /// The number of bytes, when known.
        public var count: Int64? {
            switch self {
            case .none: 0
            case .data(let data): Int64(data.count)
            case .file(let url): FileSink.size(of: url)
            case .stream(let stream): stream.length
            }
        }

        /// Whether there is anything to send.
        var isEmpty: Bool {
            switch self {
            case .none: true
            case .data(let data): data.isEmpty
            case .file, .stream: false
            }
        }

        /// Whether the body is sent from something other than memory (a file or a stream).
        var isStreamed: Bool {
            switch self {
            case .none, .data: false
            case .file, .stream: true
            }
        }
    }

    /// Where an engine puts the response body.
    public enum Destination: Sendable, Equatable {
        /// In `EngineResponse.body`.
        case memory
        /// In this file, for a `200` or `206` response: a `200` body replaces the file's content, a `206` body
        /// (whose `Content-Range` must start at `offset`) is written from `offset` on. The body of any other status
        /// stays in memory, in `EngineResponse.body`, and the file is not touched.
        case file(URL, offset: Int64)
    }

}

extension CopyOnWrite<EngineRequest.Fields> {
    /// `unique()`, for a change to what `checkBeforeSending` reads: the request must be checked again.
    mutating func uncheck() -> Box {
        let box = unique()
        box.value.checked = false
        return box
    }
}

/// What an engine returns: the response head and the whole body.
///
/// The head is kept in Switchboard's own values (`status`, `url`, `headers`); Foundation's `HTTPURLResponse` is made
/// only when `response` is read, since creating one costs more than the rest of a small exchange's bookkeeping.
public struct EngineResponse: Sendable {
    /// The status code (of the last response, after redirects).
    public var status: Int {
        didSet { detach() }
    }
    /// The URL the response answered (after redirects). Made when read from text the engine kept, as
    /// `EngineRequest.url` is.
    public var url: URL? {
        get { address.url }
        set {
            address = .url(newValue)
            detach()
        }
    }
    /// The URL the response answered, as Foundation's value or as text it takes unchanged.
    var address: URLAddress
    /// The protocol of the status line (`HTTP/1.1`, `HTTP/2`), when the engine knows it.
    public var httpVersion: String? {
        didSet { detach() }
    }
    /// The body, decoded from any `Content-Encoding`, unless it went to a file.
    public var body: Data
    /// When the body went to the destination file: how long the file now is.
    public var fileLength: Int64?
    /// What the engine measured of the exchange, or `nil` (see `TransferMetrics` for what each engine measures).
    public var metrics: TransferMetrics? {
        get { metricsBox?.value }
        set { metricsBox = newValue.map(MetricsBox.init) }
    }
    /// `metrics`, by reference (see `MetricsBox`).
    var metricsBox: MetricsBox?
    /// The `Set-Cookie` fields each as it arrived, when the engine kept them apart (CurlEngine); `headers` joins them.
    var setCookieFields: [String]?
    /// The header fields, read from `base` only when first asked for.
    private var fields: HTTPHeaders?
    /// The Foundation response this one was made from, while nothing has changed it.
    private var base: HTTPURLResponse?

    /// The header fields, in the order they arrived when the engine parsed them itself. Never `nil` when read (the
    /// type stays optional so that code setting it before keeps compiling); setting `nil` leaves no fields.
    public var headers: HTTPHeaders? {
        get { fields ?? base.map { HTTPHeaders(received: $0.headerFields) } ?? HTTPHeaders() }
        set {
            fields = newValue ?? HTTPHeaders()
            base = nil
        }
    }

    /// The head as Foundation's `HTTPURLResponse`: the one the engine returned, else made from `status`, `url`
    /// and `headers` on each read. Setting it replaces the head.
    public var response: HTTPURLResponse {
        get {
            if let base { return base }
            let url = url ?? URL(string: "about:blank")!
            return HTTPURLResponse(
                url: url, statusCode: status, httpVersion: httpVersion ?? "HTTP/1.1",
                headerFields: (fields ?? HTTPHeaders()).dictionary)
                ?? HTTPURLResponse(url: url, statusCode: 200, httpVersion: nil, headerFields: nil)!
        }
        set {
            status = newValue.statusCode
            url = newValue.url
            httpVersion = nil
            fields = nil
            base = newValue
        }
    }

    /// The parts a `Response` is made of, moved out of this one (left empty); the header fields as parsed, or left in
    /// the Foundation response until first read. Copies of each, then the release of this one's, counted every
    /// reference up and down once more for every response.
    mutating func take() -> (headers: ResponseHeaders, address: URLAddress, body: Data, metrics: MetricsBox?) {
        var (address, body) = (URLAddress.url(nil), Data())
        swap(&address, &self.address)
        swap(&body, &self.body)
        let headers: ResponseHeaders
        if let fields = fields.take() {
            headers = .fields(fields)
        } else if let base = base.take() {
            headers = .unread(base)
        } else {
            headers = .fields(HTTPHeaders())
        }
        return (headers, address, body, metricsBox.take())
    }

    /// One header field's value, by case-insensitive name, without converting the whole head.
    func value(forHTTPHeaderField name: String) -> String? {
        // Read in place: `if let` copied the fields out, a count up and down of each of their references, for every
        // field an engine reads of every head.
        if fields != nil { return fields?[name] }
        return base?.value(forHTTPHeaderField: name)
    }

    /// The head changed: `base` no longer describes it, so its fields become this response's own.
    private mutating func detach() {
        guard let base else { return }
        if fields == nil { fields = HTTPHeaders(received: base.headerFields) }
        self.base = nil
    }
}

// The initialisers delegate to the memberwise one, in an extension so that the compiler still makes it: one that sets
// each stored property itself built the value in a temporary and copied it out (a retain and a release for every
// reference the response holds, for every response an engine returns).
extension EngineResponse {
    /// Creates an engine response from the head's own values.
    public init(
        status: Int, url: URL?, httpVersion: String? = nil, headers: HTTPHeaders, body: Data, fileLength: Int64? = nil
    ) {
        self.init(
            status: status, address: .url(url), httpVersion: httpVersion, body: body, fileLength: fileLength,
            fields: headers)
    }

    /// Creates an engine response to an address (an engine's, which may be the request's text).
    init(
        status: Int, address: URLAddress, httpVersion: String? = nil, headers: HTTPHeaders, body: Data,
        fileLength: Int64? = nil, setCookieFields: [String]? = nil
    ) {
        self.init(
            status: status, address: address, httpVersion: httpVersion, body: body, fileLength: fileLength,
            setCookieFields: setCookieFields, fields: headers)
    }

    /// Creates an engine response from a Foundation response; `headers`, when given, are the fields as they arrived
    /// (in order, repeated fields joined with `, `), else they are read from `response` when first asked for.
    public init(response: HTTPURLResponse, body: Data, fileLength: Int64? = nil, headers: HTTPHeaders? = nil) {
        self.init(
            status: response.statusCode, address: .url(response.url), httpVersion: nil, body: body,
            fileLength: fileLength, fields: headers, base: response)
    }
}

extension URLError {
    /// The error both engines give when nothing was sent or received for the idle timeout, `limit`.
    static func idleTimeout(_ limit: Duration, underlying: (any Error)? = nil) -> URLError {
        var info: [String: Any] = [
            NSLocalizedDescriptionKey:
                "nothing was sent or received for \(String(format: "%.3g s", limit.seconds)), the idle timeout"
        ]
        if let underlying { info[NSUnderlyingErrorKey] = underlying as NSError }
        return URLError(.timedOut, userInfo: info)
    }

    /// The error both engines give when the last response is an interim one (`1xx`): `101 Switching Protocols`, which
    /// no request of theirs asks for, ends an exchange without a final response.
    static func noFinalResponse(after status: Int) -> URLError {
        URLError(
            .badServerResponse,
            userInfo: [
                NSLocalizedDescriptionKey:
                    "the server answered \(StatusReason.described(status)), an "
                    + "interim response, and nothing final after it"
            ])
    }

    /// The error both engines give when libcurl stops reading a response head at a field longer than it reads (100 KB,
    /// `CURL_MAX_HTTP_HEADER`): libcurl's own words are only "Out of memory", which sent readers looking for a
    /// memory problem on their side. `detail` is libcurl's words.
    static func headFieldTooLong(_ detail: String, underlying: (any Error)? = nil) -> URLError {
        var info: [String: Any] = [
            NSLocalizedDescriptionKey:
                "the response head has a field longer than libcurl reads (100 KB), or libcurl ran out of memory "
                + "(\(detail))"
        ]
        if let underlying { info[NSUnderlyingErrorKey] = underlying as NSError }
        return URLError(.badServerResponse, userInfo: info)
    }

    /// What both engines say of an exchange that outlasted its total timeout (`limit`, when known).
    static func totalTimeoutMessage(_ limit: Duration?) -> String {
        let limit = limit.map { String(format: "%.3g s", $0.seconds) } ?? "its limit"
        return "the exchange did not complete within its total timeout of \(limit)"
    }
}

/// A response head as the helpers shared by the engines read it: Foundation's `HTTPURLResponse` (URLSessionEngine)
/// or an `EngineResponse` (CurlEngine, StubEngine), so that neither has to be converted into the other.
protocol ResponseHeadFields {
    var statusCode: Int { get }
    func value(forHTTPHeaderField name: String) -> String?
}

extension HTTPURLResponse: ResponseHeadFields {}

extension ResponseHeadFields {
    /// The error both engines give for a head whose `Content-Length` is not one whole number, `nil` for any other:
    /// fields (or members of one) that differ, text that is not digits (`5abc`, `5 6`, `+5`), a number too large for
    /// any body. Where the body ends is then unknown, and a client that picks a value reads a body the server may not
    /// have meant, and the connection's next response from the wrong byte (RFC 9112 section 6.3 makes it an
    /// unrecoverable error; browsers refuse differing values). Both engines took what libcurl made of it (the last
    /// value, the digits before any other character, a number too large as no length) and delivered that body. The
    /// same value repeated (`5, 5`) is that value, as RFC 9110 section 8.6 allows.
    var invalidLength: URLError? {
        guard let text = value(forHTTPHeaderField: "Content-Length") else { return nil }
        // The usual case, one plain number, without splitting.
        if isContentLength(text) { return nil }
        let members = text.split(separator: ",", omittingEmptySubsequences: false).map {
            HTTPHeaders.trimmingBlanks(String($0))
        }
        if let first = members.first, isContentLength(first), members.allSatisfy({ $0 == first }) { return nil }
        return URLError(
            .badServerResponse,
            userInfo: [
                NSLocalizedDescriptionKey:
                    "the response head's Content-Length is not one whole number (RFC 9112 section 6.3): where its "
                    + "body ends is unknown"
            ])
    }
}

extension ResponseHeadFields {
    /// Why both engines refuse a response head whole as not sound HTTP, the same error in the same order on each: a
    /// `Content-Length` that is not one number (`invalidLength`), then `Location` fields that differ on a redirect
    /// (`Redirects.conflictingLocations`); `nil` for a sound head. Nothing of a refused head is kept, its cookies
    /// neither.
    var headRefusal: URLError? {
        invalidLength ?? Redirects.conflictingLocations(in: self)
    }
}

/// Whether the text is a length as `Content-Length` gives one (`HTTPHeaders.contentLength` reads it) of at most 18
/// characters: a length `Int64` holds, whatever the digits; no body comes near it.
private func isContentLength(_ text: String) -> Bool {
    text.utf8.count <= 18 && HTTPHeaders.contentLength(text) != nil
}

extension EngineResponse: ResponseHeadFields {
    var statusCode: Int { status }
}

extension HTTPURLResponse {
    /// The header fields as strings (Foundation types them `[AnyHashable: Any]`).
    var headerFields: [String: String] {
        var fields: [String: String] = [:]
        for (name, value) in allHeaderFields {
            if let name = name as? String, let value = value as? String { fields[name] = value }
        }
        return fields
    }
}

/// How far a transfer has come, in bytes.
public struct TransferProgress: Sendable, Hashable {
    /// Which way the bytes move.
    public enum Direction: Sendable, Hashable {
        /// The request body going out.
        case upload
        /// The response body coming in.
        case download
    }

    /// Which way the bytes move.
    public var direction: Direction
    /// Bytes done so far.
    public var completed: Int64
    /// Bytes expected in all, when known.
    public var expected: Int64?

    /// Creates a progress report.
    public init(direction: Direction, completed: Int64, expected: Int64?) {
        self.direction = direction
        self.completed = completed
        self.expected = expected
    }

    /// The fraction done, from 0 to 1, when the total is known.
    public var fraction: Double? {
        guard let expected, expected > 0 else { return nil }
        return min(1, Double(completed) / Double(expected))
    }

    /// Whether every expected byte has moved.
    public var isComplete: Bool {
        expected.map { completed >= $0 } ?? false
    }
}

/// What an engine reports of an exchange as it happens, to `EngineRequest.onEvent`.
public enum EngineEvent: Sendable {
    /// A response head arrived (a redirect's too).
    case responseHead(status: Int, headers: HTTPHeaders)
    /// The engine follows a redirect.
    case redirected(status: Int, from: URL?, to: URL?)
}
