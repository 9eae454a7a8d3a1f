import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// What came back for a request: status, headers, body, and the body decoded by the response serializer.
///
/// ```swift
/// let response = try await center.send { $0.api = "users/1" }
/// response.status                     // 200
/// response.json?["name"]?.string      // "Ada"
/// let user = try response.decode(User.self)
/// ```
public struct Response: Sendable {
    /// The body as the response serializer decoded it.
    ///
    /// Values are equal when they hold equal bodies; a `.custom` value that is not `Hashable` equals no value.
    public enum Value: Sendable, Hashable {
        /// The body was empty (a `HEAD`, a `204`).
        case empty
        /// The raw bytes (`.raw`).
        case data(Data)
        /// Parsed JSON (`.json`), or a property list read as JSON (`.plist`).
        case json(JSON)
        /// Parsed XML (`.xml`).
        case xml(XML)
        /// Decoded text (`.string`).
        case string(String)
        /// What an app's serializer made (`ResponseSerializer.init(_:accept:decode:)`): read it with
        /// `Response.value(as:)`.
        indirect case custom(any Sendable)

        public static func == (lhs: Value, rhs: Value) -> Bool {
            switch (lhs, rhs) {
            case (.empty, .empty): true
            case (.data(let a), .data(let b)): a == b
            case (.json(let a), .json(let b)): a == b
            case (.xml(let a), .xml(let b)): a == b
            case (.string(let a), .string(let b)): a == b
            case (.custom(let a), .custom(let b)): Value.hashable(a).map { $0 == Value.hashable(b) } ?? false
            default: false
            }
        }

        public func hash(into hasher: inout Hasher) {
            switch self {
            case .empty: hasher.combine(0)
            case .data(let data): hasher.combine(data)
            case .json(let json): hasher.combine(json)
            case .xml(let xml): hasher.combine(xml)
            case .string(let text): hasher.combine(text)
            case .custom(let value): hasher.combine(Value.hashable(value))
            }
        }

        private static func hashable(_ value: any Sendable) -> AnyHashable? {
            (value as? any Hashable).map { AnyHashable($0) }
        }
    }

    /// The request as it was sent (merged with the configuration, after `onRequest`).
    public var request: Request {
        get { storage.value.request }
        set { storage.unique().value.request = newValue }
        _modify { yield &storage.unique().value.request }
    }
    /// The HTTP status code.
    public var status: Int {
        get { storage.value.status }
        set { storage.unique().value.status = newValue }
        _modify { yield &storage.unique().value.status }
    }
    /// The response header fields.
    public var headers: HTTPHeaders {
        get { storage.value.headers.fields }
        set { storage.unique().value.headers.fields = newValue }
        _modify { yield &storage.unique().value.headers.fields }
    }
    /// The URL that answered, after redirects. Made when read from the text the engine kept, when it kept one (see
    /// `EngineRequest.url`).
    public var url: URL? {
        get { storage.value.address.url }
        set { storage.unique().value.address = .url(newValue) }
    }
    /// The URL that answered, as Foundation's value or as text it takes unchanged.
    var address: URLAddress { storage.value.address }
    /// The body bytes, decoded from any `Content-Encoding`.
    public var data: Data {
        get { storage.value.data }
        set { unparsed().value.data = newValue }
        _modify { yield &unparsed().value.data }
    }
    /// The body decoded by the request's `responseSerializer`.
    public var value: Value {
        get { storage.value.value }
        set { unparsed().value.value = newValue }
        _modify { yield &unparsed().value.value }
    }

    /// This response's fields, to change `data` or `value`: the mark that `value` is `data` parsed is cleared first.
    private mutating func unparsed() -> CopyOnWrite<Fields>.Box {
        let fields = storage.unique()
        fields.value.valueIsParsedData = false
        return fields
    }

    /// Sets `value` to what Switchboard parsed from `data` as it is now. When it is `decodable` (it holds everything
    /// `JSONDecoder` would read in the bytes: see `JSON.parsed(_:of:)`), `decode` may then read from it instead of
    /// the bytes, until either is changed.
    mutating func setParsedValue(_ parsed: Value, decodable: Bool = true) {
        let fields = storage.unique()
        fields.value.value = parsed
        fields.value.valueIsParsedData = decodable
    }

    /// Whether `decode` may read `value` instead of the bytes (see `setParsedValue(_:decodable:)`).
    var valueStandsForData: Bool { storage.value.valueIsParsedData }

    /// Where a response came from.
    public enum Source: Sendable, Hashable {
        /// The server.
        case network
        /// The response cache, without asking the server.
        case cache
        /// The response cache after the server confirmed the stored response with a `304 Not Modified`: the stored
        /// body, with the `304`'s header fields, the exchange's time and metrics, and the URL that answered.
        case revalidated
        /// A stub declared on the endpoint (`Endpoint.stub`).
        case stub
    }

    /// Where this response came from.
    public var source: Source {
        get { storage.value.source }
        set { storage.unique().value.source = newValue }
        _modify { yield &storage.unique().value.source }
    }
    /// Where a download was saved; `nil` for other requests.
    public var fileURL: URL? {
        get { storage.value.fileURL }
        set { storage.unique().value.fileURL = newValue }
        _modify { yield &storage.unique().value.fileURL }
    }
    /// How many times the request was sent to get this response (1 unless it was retried).
    public var attempts: Int {
        get { storage.value.attempts }
        set { storage.unique().value.attempts = newValue }
        _modify { yield &storage.unique().value.attempts }
    }
    /// How long the exchange took, from handing the request to the engine to having the whole body.
    public var duration: Duration {
        get { storage.value.duration }
        set { storage.unique().value.duration = newValue }
        _modify { yield &storage.unique().value.duration }
    }
    /// What the engine measured of the exchange (phases, bytes, connection); `nil` for a response the cache served
    /// without asking the server, for a stub, and from an engine that measures nothing. See `TransferMetrics`.
    public var metrics: TransferMetrics? {
        get { metricsBox?.value }
        set { metricsBox = newValue.map(MetricsBox.init) }
    }
    /// For a response whose body went to a stream's reader (`Center.stream`): how many bytes that was.
    var streamedBytes: Int? {
        get { storage.value.streamedBytes }
        set { storage.unique().value.streamedBytes = newValue }
    }
    /// `metrics`, by reference (see `MetricsBox`).
    var metricsBox: MetricsBox? {
        get { storage.value.metricsBox }
        set { storage.unique().value.metricsBox = newValue }
        _modify { yield &storage.unique().value.metricsBox }
    }

    /// The stored properties, shared by copies of a response until one of them changes: a response is passed and
    /// returned through every step after the engine, and a copy then costs one reference, not eleven fields.
    struct Fields: Sendable {
        var request: Request
        var status: Int
        var headers: ResponseHeaders
        var address: URLAddress
        var data: Data
        var value: Value
        /// Whether `value` is what Switchboard parsed from `data` as it is, holding everything a decoder reads there
        /// (see `setParsedValue`): not after a hook or the app changed either.
        var valueIsParsedData = false
        var source: Source = .network
        var fileURL: URL?
        var attempts: Int
        var duration: Duration
        var metricsBox: MetricsBox?
        /// For a response whose body went to a stream's reader: how many bytes it read.
        var streamedBytes: Int?
    }

    private var storage: CopyOnWrite<Fields>

    /// Creates a response; a `StubEngine` or an `onResponse` hook may want one.
    public init(
        request: Request = Request(),
        status: Int,
        headers: HTTPHeaders = [:],
        url: URL? = nil,
        data: Data = Data(),
        value: Value? = nil,
        attempts: Int = 1,
        duration: Duration = .zero
    ) {
        storage = CopyOnWrite(
            Fields(
                request: request, status: status, headers: .fields(headers), address: .url(url), data: data,
                value: value ?? (data.isEmpty ? .empty : .data(data)), attempts: attempts, duration: duration))
    }

    /// The body as JSON: the serializer's value for `.json` and `.plist`, otherwise the body parsed now, or `nil`
    /// when it is not JSON.
    public var json: JSON? {
        if case .json(let json) = value { return json }
        guard !data.isEmpty else { return nil }
        return (try? JSON(data: data)) ?? jsonInDeclaredCharset?.value
    }

    /// The body read as JSON in the charset its `Content-Type` declares, when that is not Unicode and the body is not
    /// UTF-8 (see `ResponseDecoding.declaredText`), as the `.json` serializer reads it: for a body no serializer read
    /// (an error status's, a `.raw` one), so that an older server's error message in GBK reads as its success does.
    private var jsonInDeclaredCharset: (value: JSON, decodable: Bool)? {
        ResponseDecoding.declaredText(of: data, contentType: headers["Content-Type"]).flatMap {
            try? JSON.parsed(Data($0.utf8))
        }
    }

    /// The body as text: the serializer's value for `.string`, otherwise the body read in the charset its
    /// `Content-Type` names (UTF-8 when it names none), or `nil`.
    public var string: String? {
        if case .string(let text) = value { return text }
        return try? ResponseDecoding.text(of: data, contentType: headers["Content-Type"])
    }

    /// The body as an XML tree: the serializer's value for `.xml`, otherwise the body parsed now, or `nil`.
    public var xml: XML? {
        if case .xml(let xml) = value { return xml }
        return try? XML(data: data)
    }

    /// Decodes the body into a `Decodable` type, from JSON (or a property list for the `.plist` serializer).
    ///
    /// `EmptyBody` decodes from any response, with or without a body (`HEAD`, `204`, `205`).
    ///
    /// A JSON body that Switchboard parsed when it arrived (the `.json` serializer, the default), and that nothing has
    /// changed since (`data` or `value` set by a hook), is decoded from that value, not parsed a second time, when
    /// `decoder` is a `JSONDecoder` whose settings Switchboard follows: any `userInfo` (the types decoded find it), any
    /// key strategy (`.convertFromSnakeCase`, or `.custom`, whose closure is called with the paths `JSONDecoder`
    /// gives it), any date strategy and any data strategy (on Linux, `.formatted(_:)` is a `.custom` date strategy;
    /// on Apple platforms `.iso8601` and the `.custom` strategies from macOS 15 and iOS 18, and `.formatted(_:)` not),
    /// but every other setting at its default (JSON5, `assumesTopLevelDictionary`, non-conforming floats), and not a
    /// subclass. The values and errors are `JSONDecoder`'s,
    /// except that a number whose fraction is not zero never decodes as an integer, and `JSON` comes back exactly as
    /// parsed (every number as it was written). Any other decoder decodes the body's bytes itself, and so does every
    /// decoder for a body in which an object names a member twice (`json` keeps the last value, as
    /// `JSONSerialization` does; `JSONDecoder` reads the first), or two names of one object that the key strategy
    /// makes one, or, with `.convertFromSnakeCase`, a name that only `JSONDecoder` converts (an underscore between
    /// characters other than ASCII letters and digits).
    ///
    /// - Throws: `HTTPError` with code `.decoding`, naming the type and what did not match, or the status when the
    ///   body is empty.
    public func decode<T: Decodable>(_ type: T.Type = T.self, using decoder: JSONDecoder = JSONDecoder())
        throws(HTTPError) -> T
    {
        if let empty = EmptyBody() as? T { return empty }
        if case .custom(let made as T) = value { return made }
        // Empty, or (for JSON) only spaces and line breaks: an optional is `nil`, as a `null` body makes it.
        let isPropertyList = request.responseSerializer?.isPropertyList == true
        if data.isEmpty || (!isPropertyList && ResponseDecoding.isBlank(data)) {
            if let optional = T.self as? any AbsentDecodable.Type, let absent = optional.absent as? T { return absent }
            throw HTTPError(
                .decoding,
                "the body of the \(status) response \(data.isEmpty ? "is empty" : "holds only whitespace"), so it "
                    + "cannot be decoded as \(T.self); "
                    + "decode EmptyBody (or an optional) for responses without a body",
                request: request, response: self)
        }
        do {
            if isPropertyList {
                return try PropertyListDecoder().decode(T.self, from: data)
            }
            var parsed: JSON?
            if valueStandsForData, case .json(let json) = value {
                parsed = json
            } else if let declared = jsonInDeclaredCharset, declared.decodable {
                parsed = declared.value
            }
            let options = parsed.flatMap { _ in JSONValueDecoder.Options(decoder) }
            return try JSONValueDecoder.decode(T.self, parsed: parsed, options: options, else: decoder, from: data)
        } catch {
            throw HTTPError(
                .decoding, "the body cannot be decoded as \(T.self): \(Response.explain(error))",
                request: request, response: self, underlying: error)
        }
    }

    /// The value the response serializer made, when it is a `T`: an app's model or image (`.custom`), or a built-in
    /// serializer's `JSON`, `XML`, `String` or `Data`.
    ///
    /// ```swift
    /// let avatar = response.value(as: Avatar.self)
    /// ```
    public func value<T>(as type: T.Type = T.self) -> T? {
        switch value {
        case .empty: nil
        case .data(let data): data as? T
        case .json(let json): json as? T
        case .xml(let xml): xml as? T
        case .string(let text): text as? T
        case .custom(let value): value as? T
        }
    }

    /// Whether the status is in 200...299.
    public var isSuccessful: Bool { (200...299).contains(status) }

    /// A short description of a `DecodingError`: what was wrong, and where.
    static func explain(_ error: any Error) -> String {
        guard let error = error as? DecodingError else { return String(describing: error) }
        func path(_ context: DecodingError.Context) -> String {
            let path = context.codingPath.map { $0.intValue.map { "[\($0)]" } ?? ".\($0.stringValue)" }.joined()
            return path.isEmpty ? "at the top level" : "at \(path)"
        }
        switch error {
        case .typeMismatch(let type, let context): return "expected \(type) \(path(context))"
        case .valueNotFound(let type, let context): return "missing \(type) value \(path(context))"
        case .keyNotFound(let key, let context): return "missing key \"\(key.stringValue)\" \(path(context))"
        case .dataCorrupted(let context): return "\(context.debugDescription) \(path(context))"
        @unknown default: return String(describing: error)
        }
    }
}

extension Response {
    /// A response as it came from the network, before decoding, from the parts an engine returned (taken as they
    /// are: the public initialiser would convert the headers and copy each field).
    init(
        request: consuming Request, status: Int, headers: consuming ResponseHeaders, address: consuming URLAddress,
        data: Data, duration: Duration, metrics: MetricsBox?
    ) {
        storage = CopyOnWrite(
            Fields(
                request: request, status: status, headers: headers, address: address, data: data,
                value: data.isEmpty ? .empty : .data(data), attempts: 1, duration: duration, metricsBox: metrics))
    }
}

/// A response's header fields: as parsed, or still in the Foundation response they came in. Converting Foundation's
/// fields costs more than the rest of a small exchange's bookkeeping through the center, and most responses never
/// have theirs read; they are converted once, by whichever read comes first.
enum ResponseHeaders: Sendable {
    case fields(HTTPHeaders)
    /// The Foundation response, or its fields once read (shared by copies of the response, hence the lock).
    case pending(Locked<Pending>)

    enum Pending {
        case response(HTTPURLResponse)
        case read(HTTPHeaders)
    }

    static func unread(_ response: HTTPURLResponse) -> ResponseHeaders {
        .pending(Locked(.response(response)))
    }

    /// The fields, read from the Foundation response on first use; changing them makes them this value's own.
    var fields: HTTPHeaders {
        get {
            switch self {
            case .fields(let fields):
                return fields
            case .pending(let pending):
                return pending.withLock { state in
                    switch state {
                    case .read(let fields):
                        return fields
                    case .response(let response):
                        let fields = HTTPHeaders(received: response.headerFields)
                        state = .read(fields)
                        return fields
                    }
                }
            }
        }
        _modify {
            var fields = self.fields
            // The enum lets go of its copy first, so that the fields are changed in place, not copied.
            self = .fields(HTTPHeaders())
            defer { self = .fields(fields) }
            yield &fields
        }
    }
}

/// A type with a value for "no body": `Optional`, whose `nil` is what an empty body decodes to.
private protocol AbsentDecodable {
    static var absent: Self { get }
}

extension Optional: AbsentDecodable {
    fileprivate static var absent: Self { nil }
}
