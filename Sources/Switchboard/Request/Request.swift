import Foundation

/// One HTTP request, described as a value and configured by a closure.
///
/// You rarely create a `Request` yourself: `Center.send` makes one, hands it to your closure, then merges it with
/// the center's configuration. Every property has a sensible default, so a request needs little more than an `api`:
///
/// ```swift
/// center.send { request in
///     request.api = "users"
///     request.method = .post
///     request.parameters = ["name": "Ada"]
///     request.requestSerializer = .json
/// }
/// ```
///
/// The URL is `url` when set; otherwise `server` (or the center's server, unless `useGeneralServer` is off) with
/// `api` resolved against it as a relative reference (RFC 3986).
public struct Request: Sendable {
    /// Its identifier, which cancels, looks up and retries it: a new one for every send (the center numbers a
    /// request as it sends it, so a request sent twice has two).
    public internal(set) var id: RequestID {
        get { fields.id }
        set { fields.id = newValue }
    }

    /// A complete URL. When set it wins over `server` and `api`; an empty one fails the request with `.invalidURL`.
    public var url: String? {
        get { fields.url }
        set { storage.unique().value.url = newValue }
        _modify { yield &storage.unique().value.url }
    }
    /// The base URL for `api`. When empty, the center's server is used (unless `useGeneralServer` is off).
    public var server: String? {
        get { fields.server }
        set { storage.unique().value.server = newValue }
        _modify { yield &storage.unique().value.server }
    }
    /// A named base URL for `api`, looked up in the center's `nodes` when `server` is empty (`.default` is the
    /// center's `server`).
    public var node: Node? {
        get { fields.node }
        set { storage.unique().value.node = newValue }
        _modify { yield &storage.unique().value.node }
    }
    /// The path of the endpoint, resolved against the server: `users/1`, `/v2/users`, or an absolute URL.
    public var api: String? {
        get { fields.api }
        set { storage.unique().value.api = newValue }
        _modify { yield &storage.unique().value.api }
    }
    /// The method. `GET` by default.
    public var method: HTTPMethod {
        get { fields.method }
        set { storage.unique().value.method = newValue }
        _modify { yield &storage.unique().value.method }
    }
    /// Parameters: in the query for `GET`, `HEAD` and `DELETE`, in the body otherwise (per `requestSerializer`); in
    /// the query beside an explicit `body`, and as text fields beside multipart `form` parts. `parameterPlacement`
    /// chooses otherwise; `setParameters(_:encoder:)` sets them from an `Encodable` value.
    ///
    /// Values must be JSON-compatible: strings, numbers, Booleans, arrays and dictionaries of those, or `JSON`.
    /// Anything else fails the request with an `.encoding` error that names the key.
    public var parameters: [String: any Sendable] {
        get {
            let fields = fields
            guard let general = fields.generalParameters else { return fields.parameters }
            return Self.overlaying(fields.parameters, on: general.values)
        }
        set {
            let box = storage.unique()
            box.value.parameters = newValue
            box.value.generalParameters = nil
        }
        _modify {
            let box = storage.unique()
            if let general = box.value.generalParameters {
                box.value.parameters = Self.overlaying(box.value.parameters, on: general.values)
                box.value.generalParameters = nil
            }
            yield &box.value.parameters
        }
    }
    /// Header fields; names compare case-insensitively. These win over the center's headers of the same name.
    public var headers: HTTPHeaders {
        get { fields.headers }
        set { storage.unique().value.headers = newValue }
        _modify { yield &storage.unique().value.headers }
    }
    /// Whether the center's server is used when `server` is empty. `true` by default.
    public var useGeneralServer: Bool {
        get { fields.useGeneralServer }
        set { storage.unique().value.useGeneralServer = newValue }
        _modify { yield &storage.unique().value.useGeneralServer }
    }
    /// Whether the center's headers are added (the request's own win on conflicts). `true` by default.
    public var useGeneralHeaders: Bool {
        get { fields.useGeneralHeaders }
        set { storage.unique().value.useGeneralHeaders = newValue }
        _modify { yield &storage.unique().value.useGeneralHeaders }
    }
    /// Whether the center's parameters are added (the request's own win on conflicts). `true` by default.
    public var useGeneralParameters: Bool {
        get { fields.useGeneralParameters }
        set { storage.unique().value.useGeneralParameters = newValue }
        _modify { yield &storage.unique().value.useGeneralParameters }
    }
    /// How parameters are encoded into the body; the center's (`.form` unless it sets another) when nil.
    public var requestSerializer: RequestSerializer? {
        get { fields.requestSerializer }
        set { storage.unique().value.requestSerializer = newValue }
        _modify { yield &storage.unique().value.requestSerializer }
    }
    /// How the response body is decoded into `Response.value`; the center's (`.json` unless it sets another) when
    /// nil.
    public var responseSerializer: ResponseSerializer? {
        get { fields.responseSerializer }
        set { storage.unique().value.responseSerializer = newValue }
        _modify { yield &storage.unique().value.responseSerializer }
    }
    /// An explicit body. When set, it is the body, and `parameters` (the center's too, unless
    /// `useGeneralParameters` is off) travel in the URL's query, whatever the method.
    public var body: Body? {
        get { fields.cold?.value.body }
        set { storage.unique().value.coldBox().value.body = newValue }
        _modify { yield &storage.unique().value.coldBox().value.body }
    }
    /// The longest the request may wait for the server without receiving anything; the center's `timeout` when nil.
    /// It must be longer than zero (a request with a zero or negative timeout fails with `.encoding`, unsent).
    public var timeout: Duration? {
        get { fields.timeout }
        set { storage.unique().value.timeout = newValue }
        _modify { yield &storage.unique().value.timeout }
    }
    /// The longest the whole exchange may take, however steadily data arrives; the center's `totalTimeout` when nil.
    /// It must be longer than zero, as `timeout` must.
    public var totalTimeout: Duration? {
        get { fields.totalTimeout }
        set { storage.unique().value.totalTimeout = newValue }
        _modify { yield &storage.unique().value.totalTimeout }
    }
    /// The most bytes per second the response body may arrive at, or `nil` for no limit. `CurlEngine` holds it
    /// exactly; `URLSessionEngine` paces the `Range` segments of a download into a file (approximate, and only when
    /// the server answers ranges) and refuses other requests with a limit (`.unsupported`), as does any engine that
    /// does not say it `honoursRateLimits`.
    public var maxBytesPerSecond: Int64? {
        get { fields.maxBytesPerSecond }
        set { storage.unique().value.maxBytesPerSecond = newValue }
        _modify { yield &storage.unique().value.maxBytesPerSecond }
    }
    /// The most bytes of response body the request takes into memory, after any `Content-Encoding` is decoded, or
    /// `nil` for the center's `maxResponseBytes` (64 MiB unless set; `Int64.max` for no limit). A longer body fails with
    /// `.responseTooLarge`: at once when its `Content-Length` says so, else as soon as the limit is passed, on both
    /// engines, so that a server that sends without end, or a small compressed body that inflates to gigabytes,
    /// cannot fill the app's memory. A body written to a file (`Destination`) and a stream's (`Center.stream`,
    /// bounded by `streamBufferSize`) are not counted. It must not be below zero (`.encoding`, unsent).
    public var maxResponseBytes: Int64? {
        get { fields.cold?.value.maxResponseBytes }
        set { storage.unique().value.coldBox().value.maxResponseBytes = newValue }
        _modify { yield &storage.unique().value.coldBox().value.maxResponseBytes }
    }
    /// How its parameters are written into a query or a form body, or `nil` for the center's `formStyle` (see
    /// `FormStyle`).
    public var formStyle: FormStyle? {
        get { fields.cold?.value.formStyle }
        set { storage.unique().value.coldBox().value.formStyle = newValue }
        _modify { yield &storage.unique().value.coldBox().value.formStyle }
    }
    /// Where its parameters go, or `nil` (the default) to decide by method: the query for `GET`, `HEAD` and
    /// `DELETE` and beside an explicit `body`, the body otherwise.
    public var parameterPlacement: ParameterPlacement? {
        get { fields.cold?.value.parameterPlacement }
        set { storage.unique().value.coldBox().value.parameterPlacement = newValue }
        _modify { yield &storage.unique().value.coldBox().value.parameterPlacement }
    }
    /// Where it stands among waiting requests when the center limits the requests in flight
    /// (`CenterConfiguration.maxRequestsInFlight`): `.normal` by default. See `RequestPriority`.
    public var priority: RequestPriority {
        get { fields.cold?.value.priority ?? .normal }
        set { storage.unique().value.coldBox().value.priority = newValue }
        _modify { yield &storage.unique().value.coldBox().value.priority }
    }
    /// Whether the request waits for a usable network path (`Center.connectivity`) before it is sent, at most its
    /// `totalTimeout` (else its `timeout`), instead of going at once and failing; `nil` for the center's
    /// `waitsForConnectivity`. A path that does not come in time fails it with `.cannotConnect`; a cancel ends the
    /// wait.
    public var waitsForConnectivity: Bool? {
        get { fields.cold?.value.waitsForConnectivity }
        set { storage.unique().value.coldBox().value.waitsForConnectivity = newValue }
        _modify { yield &storage.unique().value.coldBox().value.waitsForConnectivity }
    }
    /// Which redirects the request follows, or `nil` for the center's `redirectPolicy` (`.follow` unless set). See
    /// `RedirectPolicy`.
    public var redirectPolicy: RedirectPolicy? {
        get { fields.cold?.value.redirectPolicy }
        set { storage.unique().value.coldBox().value.redirectPolicy = newValue }
        _modify { yield &storage.unique().value.coldBox().value.redirectPolicy }
    }
    /// The most bytes per second the request body may be sent at, or `nil` for no limit. `CurlEngine` holds it
    /// exactly; `URLSessionEngine` cannot, and refuses such a request (`.unsupported`).
    public var maxUploadBytesPerSecond: Int64? {
        get { fields.maxUploadBytesPerSecond }
        set { storage.unique().value.maxUploadBytesPerSecond = newValue }
        _modify { yield &storage.unique().value.maxUploadBytesPerSecond }
    }
    /// For a stream (`Center.stream(_:)`): the most bytes of body held for a consumer that reads slower than they
    /// arrive. 8 MiB unless set. `CurlEngine` pauses the transfer when the buffer is full and goes on when the
    /// consumer has read half of it; `URLSessionEngine` cannot pause a transfer, and fails the stream with
    /// `.streamOverflow` instead.
    ///
    /// Also the longest line (`ResponseStream.lines`, `jsonLines(_:decoder:)`), and the most data of one event
    /// (`ResponseStream.events`, `Center.events(_:maxReconnections:)`), a stream reads: a longer one ends the
    /// iteration with `.streamOverflow`. It must be at least 1 (`.encoding`, unsent).
    public var streamBufferSize: Int {
        get { fields.streamBufferSize }
        set { storage.unique().value.streamBufferSize = newValue }
        _modify { yield &storage.unique().value.streamBufferSize }
    }
    /// Status codes that count as success; the center's `acceptableStatusCodes` when nil.
    public var acceptableStatusCodes: Set<Int>? {
        get { fields.acceptableStatusCodes }
        set { storage.unique().value.acceptableStatusCodes = newValue }
        _modify { yield &storage.unique().value.acceptableStatusCodes }
    }
    /// When and how to retry this request; the center's `retryPolicy` when nil.
    public var retry: RetryPolicy? {
        get { fields.cold?.value.retry }
        set { storage.unique().value.coldBox().value.retry = newValue }
        _modify { yield &storage.unique().value.coldBox().value.retry }
    }
    /// Shorthand for the number of retries after the first attempt, with the rest of the policy from `retry` or the
    /// center (XMNetworking's `retryCount`): `retryCount = 2` means three attempts in all.
    public var retryCount: Int? {
        get { fields.retryCount }
        set { storage.unique().value.retryCount = newValue }
        _modify { yield &storage.unique().value.retryCount }
    }
    /// What kind of exchange this is: `.data` (the default), `.upload` (multipart `form` parts, or a file `body`;
    /// `POST` unless you choose another method) or `.download` (the body goes to `destination`).
    public var kind: Kind {
        get { fields.kind }
        set { storage.unique().value.kind = newValue }
        _modify { yield &storage.unique().value.kind }
    }
    /// The parts of a multipart upload (`kind = .upload`); `parameters` are sent as text fields beside them.
    public var form: [FormPart] {
        get { fields.cold?.value.form ?? [] }
        set { storage.unique().value.coldBox().value.form = newValue }
        _modify { yield &storage.unique().value.coldBox().value.form }
    }
    /// Where a download goes (`kind = .download`): a file, or a directory where the server's or the URL's file name
    /// is used.
    public var destination: Destination? {
        get { fields.cold?.value.destination }
        set { storage.unique().value.coldBox().value.destination = newValue }
        _modify { yield &storage.unique().value.coldBox().value.destination }
    }
    /// Whether a download keeps its partial file when it fails or is cancelled, and continues from it next time
    /// (with `Range` and `If-Range`), even from a new process.
    ///
    /// The partial file lies beside the destination, named after it (or, into a directory, after the URL): while a
    /// resumable download runs, another into the same partial file, in this process or another, is refused with
    /// `.fileSystem` before anything is sent (other processes see it by `<destination>.switchboard-lock`, which it
    /// holds locked while it runs).
    public var resumable: Bool {
        get { fields.resumable }
        set { storage.unique().value.resumable = newValue }
        _modify { yield &storage.unique().value.resumable }
    }
    /// A checksum the downloaded file must match before it is moved into place.
    public var checksum: Checksum? {
        get { fields.cold?.value.checksum }
        set { storage.unique().value.coldBox().value.checksum = newValue }
        _modify { yield &storage.unique().value.coldBox().value.checksum }
    }
    /// Whether this request shares one transfer with identical requests in flight (same method, URL, headers and
    /// body); `nil` follows the center's `deduplicatesGETs` for `GET` and `HEAD`.
    public var deduplicate: Bool? {
        get { fields.deduplicate }
        set { storage.unique().value.deduplicate = newValue }
        _modify { yield &storage.unique().value.deduplicate }
    }
    /// Whether the center's `authenticator` applies to this request. Requests sent while the authenticator refreshes
    /// its credential skip it on their own, and so do requests to an origin that is none of the center's servers
    /// (see `Authenticator`).
    public var usesAuthenticator: Bool {
        get { fields.usesAuthenticator }
        set { storage.unique().value.usesAuthenticator = newValue }
        _modify { yield &storage.unique().value.usesAuthenticator }
    }
    /// How the center's response cache serves this request. `.networkOnly` by default.
    public var cachePolicy: CachePolicy {
        get { fields.cachePolicy }
        set { storage.unique().value.cachePolicy = newValue }
        _modify { yield &storage.unique().value.cachePolicy }
    }
    /// Whether a `POST` response may be cached (its body is part of the key). `false` by default.
    public var cachesPOST: Bool {
        get { fields.cachesPOST }
        set { storage.unique().value.cachesPOST = newValue }
        _modify { yield &storage.unique().value.cachesPOST }
    }
    /// Whether the response cache stores this request's response for, and serves it to, requests with any
    /// credential. `false` by default: a response to a request that carried a credential (`Authorization`,
    /// `Cookie`, `Proxy-Authorization` or a field with a secret name) is kept under a digest of it, so that another
    /// account, or none, never sees it. Set it for data every user shares.
    public var cachesAcrossCredentials: Bool {
        get { fields.cachesAcrossCredentials }
        set { storage.unique().value.cachesAcrossCredentials = newValue }
        _modify { yield &storage.unique().value.cachesAcrossCredentials }
    }
    /// Checks (or transforms) this request's response after the center's `onResponse`; throw to fail (an
    /// `HTTPError` as it is, anything else as `.business`).
    public var validate: (@Sendable (Response) throws -> Response)? {
        get { fields.cold?.value.validate }
        set { storage.unique().value.coldBox().value.validate = newValue }
        _modify { yield &storage.unique().value.coldBox().value.validate }
    }
    /// An endpoint's canned answer, served when the center's `usesEndpointStubs` is on.
    var endpointStub: StubReply? {
        get { fields.cold?.value.endpointStub }
        set { storage.unique().value.coldBox().value.endpointStub = newValue }
        _modify { yield &storage.unique().value.coldBox().value.endpointStub }
    }
    /// Your own values, for the hooks to read (a per-request API version, a flag to skip a token, ...).
    /// The center's `userInfo` is merged in under these (the request's own win).
    public var userInfo: [String: any Sendable] {
        get { fields.userInfo }
        set { storage.unique().value.userInfo = newValue }
        _modify { yield &storage.unique().value.userInfo }
    }
    /// Plugins for this request alone, run after the center's and the node's (see `Plugin`); an endpoint's `plugins`
    /// arrive here.
    public var plugins: [any Plugin] {
        get { fields.cold?.value.plugins ?? [] }
        set { storage.unique().value.coldBox().value.plugins = newValue }
        _modify { yield &storage.unique().value.coldBox().value.plugins }
    }
    /// Where this request's callbacks run; the center's `callbackQueue` when nil.
    public var callbackQueue: DispatchQueue? {
        get { scope.callbackQueue }
        set { scope.callbackQueue = newValue }
    }
    /// A label that `Center.cancel(tag:)` cancels by, with every other request and group that carries it.
    public var tag: String? {
        get { scope.tag }
        set { scope.tag = newValue }
    }
    /// The object this request belongs to, held weakly: when it is deallocated while the request runs, the request
    /// is cancelled (its callbacks then report `.cancelled`, once).
    ///
    /// ```swift
    /// center.send { request in
    ///     request.api = "feed"
    ///     request.owner = self          // a view controller: leaving the screen cancels the request
    /// } onSuccess: { response in ... }
    /// ```
    public var owner: AnyObject? {
        get { scope.owner?.object }
        set { scope.owner = newValue.map(WeakOwner.init) }
    }
    var scope: WorkScope {
        get { fields.cold?.value.scope ?? WorkScope() }
        set { storage.unique().value.coldBox().value.scope = newValue }
        _modify { yield &storage.unique().value.coldBox().value.scope }
    }

    /// The stored properties, shared by copies of a request until one of them changes: a request is copied at
    /// every step of its way through the center, and a copy then costs one reference, not the whole value.
    struct Fields: Sendable {
        var id = RequestID.next()
        var url: String?
        var server: String?
        var node: Node?
        var api: String?
        var method: HTTPMethod = .get
        /// The request's own parameters; with `generalParameters`, the center's go under them (see `parameters`).
        var parameters = [String: any Sendable]()
        /// The center's parameters, set by merging: kept apart, and converted once for every request, instead of
        /// merged into a dictionary of the request's own that encoding then converted again.
        var generalParameters: GeneralParameters?
        var headers = HTTPHeaders()
        var requestSerializer: RequestSerializer?
        var responseSerializer: ResponseSerializer?
        var timeout: Duration?
        var totalTimeout: Duration?
        var maxBytesPerSecond: Int64?
        var maxUploadBytesPerSecond: Int64?
        var streamBufferSize = 8 << 20
        var acceptableStatusCodes: Set<Int>?
        var retryCount: Int?
        var kind: Kind = .data
        var deduplicate: Bool?
        var cachePolicy: CachePolicy = .networkOnly
        var userInfo = [String: any Sendable]()
        var useGeneralServer = true
        var useGeneralHeaders = true
        var useGeneralParameters = true
        var resumable = false
        var usesAuthenticator = true
        var cachesPOST = false
        var cachesAcrossCredentials = false
        /// The `Content-Type` the center's headers gave the request when it set none itself (see `merge(with:)`):
        /// the type of a body the center encodes replaces it.
        var centerContentType: String?
        /// Set when the request was merged and composed before it was registered (see `Pipeline.prepareEarly`).
        var early: EarlyPreparation?

        /// The fields the pipeline reads but does not change, in a box of their own: merging a request with its
        /// center changes the others, and the copy that makes then costs one reference for all of these. `nil`
        /// until the request sets one of them (most never do): a box of defaults shared by every request was
        /// counted up and down by every request at every copy, from every thread at once.
        var cold: CopyOnWrite<Cold>?

        /// The cold fields' box, made with the defaults when the request sets the first of them, and its own.
        mutating func coldBox() -> CopyOnWrite<Cold>.Box {
            if cold == nil { cold = CopyOnWrite(Cold()) }
            return cold!.unique()
        }
    }

    /// A request merged and composed before it was registered, for the identifier it was sent under (a saved copy
    /// sent again gets another identifier, and is prepared again); `urlIsPlain` is `nil` when the URL did not compose.
    struct EarlyPreparation: Sendable {
        let id: RequestID
        let urlIsPlain: Bool?
    }

    /// What `Fields.cold` holds.
    struct Cold: Sendable {
        var body: Body?
        var retry: RetryPolicy?
        var form: [FormPart] = []
        var destination: Destination?
        var checksum: Checksum?
        var validate: (@Sendable (Response) throws -> Response)?
        var endpointStub: StubReply?
        var plugins: [any Plugin] = []
        var scope = WorkScope()
        var maxResponseBytes: Int64?
        var redirectPolicy: RedirectPolicy?
        var formStyle: FormStyle?
        var priority = RequestPriority.normal
        var waitsForConnectivity: Bool?
        var parameterPlacement: ParameterPlacement?
        /// Why `setParameters(_:encoder:)` could not make parameters of its value: the request fails with it.
        var parameterFailure: HTTPError?
    }

    /// The fields, shared by copies of the request until one of them changes (a request is copied at every step).
    private var storage = CopyOnWrite(Fields())

    var fields: Fields {
        get { storage.value }
        set { storage.unique().value = newValue }
        _modify { yield &storage.unique().value }
    }

    /// Creates a request with every property at its default.
    public init() {}

    /// Creates a request configured by a closure.
    public init(_ configure: (inout Request) -> Void) {
        configure(&self)
    }
}

// MARK: - Kinds, destinations and form parts

extension Request {
    /// What kind of exchange a request is.
    public enum Kind: Sendable, Hashable {
        /// A request whose response body is kept in memory.
        case data
        /// An upload: multipart `form` parts (streamed from disk), or a file or data `body`.
        case upload
        /// A download: the response body is streamed to `destination`.
        case download
    }

    /// Where a download goes.
    public enum Destination: Sendable, Hashable {
        /// This file; it is replaced atomically when the download completes.
        case file(URL)
        /// This existing directory, under the name the server gives in `Content-Disposition`, or else the last
        /// component of the URL, cleaned so that it cannot leave the directory. A file already there is never
        /// replaced: the name then gets a number (`report (1).txt`); the response's `fileURL` says which.
        case directory(URL)
    }

    /// A checksum a download must match.
    public enum Checksum: Sendable, Hashable {
        /// SHA-256, as hex (either case).
        case sha256(String)
    }

    /// One part of a multipart upload.
    public struct FormPart: Sendable, Hashable {
        /// Where a part's bytes come from.
        public enum Content: Sendable, Hashable {
            /// Bytes in memory.
            case data(Data)
            /// A file, streamed from disk.
            case file(URL)
        }

        /// The form field name.
        public var name: String
        /// The file name sent for the part; a file's own name when `nil` for a file, none for data.
        public var fileName: String?
        /// The MIME type; inferred from the file name's extension when `nil`.
        public var mimeType: String?
        /// The bytes.
        public var content: Content

        /// Creates a part.
        public init(name: String, fileName: String? = nil, mimeType: String? = nil, content: Content) {
            self.name = name
            self.fileName = fileName
            self.mimeType = mimeType
            self.content = content
        }
    }

    /// Adds a multipart part with bytes in memory (XMNetworking's `addFormDataWithName:fileData:`).
    public mutating func addFormData(name: String, data: Data, fileName: String? = nil, mimeType: String? = nil) {
        form.append(FormPart(name: name, fileName: fileName, mimeType: mimeType, content: .data(data)))
    }

    /// Adds a multipart part streamed from a file (XMNetworking's `addFormDataWithName:fileURL:`): a regular file,
    /// as for `Body.file(_:contentType:)`.
    public mutating func addFormData(name: String, fileURL: URL, fileName: String? = nil, mimeType: String? = nil) {
        form.append(FormPart(name: name, fileName: fileName, mimeType: mimeType, content: .file(fileURL)))
    }
}

// MARK: - Body

extension Request {
    /// An explicit request body: bytes, text, or an `Encodable` value sent as JSON.
    ///
    /// ```swift
    /// request.body = .json(NewUser(name: "Ada"))
    /// request.body = .data(png, contentType: "image/png")
    /// ```
    public struct Body: Sendable {
        let contentType: String?
        let make: @Sendable () throws -> Data
        /// A file to stream instead of bytes made in memory.
        var file: URL?
        /// A stream to send instead of bytes made in memory.
        var stream: Request.BodyStream?
        /// Whether `contentType` is only the fallback (`application/octet-stream`, none having been given): a
        /// `Content-Type` from the center's headers then describes the body better.
        var typeIsFallback = false

        /// A file, streamed from disk with a `Content-Length` (a presigned `PUT`, say); `application/octet-stream`
        /// unless a content type is given (or the center's headers have one). It must be a regular file (symbolic links are followed): a directory, a
        /// FIFO or a device fails with `.fileSystem` before anything is sent.
        public static func file(_ url: URL, contentType: String? = nil) -> Body {
            Body(
                contentType: contentType ?? "application/octet-stream", make: { Data() }, file: url,
                typeIsFallback: contentType == nil)
        }

        /// A stream, made afresh by `open` for every send (a retry, a `307`/`308` redirect), so that each send starts
        /// from the first byte; `application/octet-stream` unless a content type is given (or the center's headers
        /// have one).
        ///
        /// With a known `length`, `CurlEngine`, and `URLSessionEngine` on Linux, send a `Content-Length` and fail
        /// the request with `.encoding` if the stream yields a different number of bytes; on Apple platforms
        /// `URLSessionEngine` sends a stream chunked, so use `.file` there for servers that refuse chunked bodies.
        /// The stream is read on an engine's thread, a little ahead of the network, never all at once.
        ///
        /// ```swift
        /// request.body = .stream(length: nil, contentType: "text/csv") { InputStream(url: exportFile)! }
        /// ```
        public static func stream(
            length: Int64? = nil, contentType: String? = nil, open: @escaping @Sendable () throws -> InputStream
        ) -> Body {
            Body(
                contentType: contentType ?? "application/octet-stream", make: { Data() },
                stream: Request.BodyStream(length: length, open: open), typeIsFallback: contentType == nil)
        }

        /// Raw bytes, sent as they are; `application/octet-stream` unless a content type is given (or the center's
        /// headers have one).
        public static func data(_ data: Data, contentType: String? = nil) -> Body {
            Body(
                contentType: contentType ?? "application/octet-stream", make: { data },
                typeIsFallback: contentType == nil)
        }

        /// Text, encoded as UTF-8.
        public static func string(_ text: String, contentType: String = "text/plain; charset=utf-8") -> Body {
            Body(contentType: contentType) { Data(text.utf8) }
        }

        /// An `Encodable` value, encoded as JSON when the request is sent. An encoding failure fails the request with
        /// an `.encoding` error.
        public static func json<Value: Encodable & Sendable>(
            _ value: Value,
            encoder: @escaping @Sendable () -> JSONEncoder = { JSONEncoder() }
        ) -> Body {
            Body(contentType: "application/json") { try encoder().encode(value) }
        }
    }
}

// MARK: - Merged parameters

extension Request {
    /// The center's entries with the request's own over them. Built at its final size: merging into a copy of the
    /// center's dictionary made that copy, then grew it (hashing every key again) as soon as the request added a key.
    /// Made by `Dictionary(_:uniquingKeysWith:)`, which is compiled here for these types (`minimumCapacity:` is not,
    /// and looked its storage's type up in the runtime's table at every call).
    static func overlaying(
        _ own: [String: any Sendable], on general: [String: any Sendable]
    ) -> [String: any Sendable] {
        guard !own.isEmpty else { return general }
        return [String: any Sendable](BothEntries(first: general, then: own), uniquingKeysWith: { _, own in own })
    }

    /// Every entry of one dictionary, then every entry of another: as many elements as both hold (a key in both
    /// comes twice, the second dictionary's last).
    private struct BothEntries: Sequence {
        let first: [String: any Sendable]
        let then: [String: any Sendable]

        var underestimatedCount: Int { first.count + then.count }

        func makeIterator() -> Iterator {
            Iterator(first: first.makeIterator(), then: then.makeIterator())
        }

        struct Iterator: IteratorProtocol {
            var first: [String: any Sendable].Iterator
            var then: [String: any Sendable].Iterator

            mutating func next() -> (String, any Sendable)? {
                if let entry = first.next() ?? then.next() { (entry.key, entry.value) } else { nil }
            }
        }
    }
}
