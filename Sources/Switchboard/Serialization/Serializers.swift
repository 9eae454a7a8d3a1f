import Foundation

/// How a response body is decoded into `Response.value`: one of the built-in serializers, or one an app makes.
///
/// ```swift
/// extension ResponseSerializer {
///     static let avatar = ResponseSerializer("avatar", accept: "image/png") { response in
///         .custom(try Avatar(png: response.data))
///     }
/// }
/// let response = try await center.send { $0.api = "me/avatar"; $0.responseSerializer = .avatar }
/// let avatar = response.value(as: Avatar.self)
/// ```
///
/// A serializer reads only a body that is not empty (an empty one is `.empty` whatever the serializer) of a response
/// whose status is acceptable. What it throws fails the request with `.decoding` (an `HTTPError` keeps its own code).
/// A center's `responseSerializer` is the default of its requests. In a target whose default isolation is the main
/// actor, declare a shared serializer `nonisolated static let`, so that an endpoint's `configure(_:)` can read it.
public struct ResponseSerializer: Sendable, Hashable {
    enum Kind: Sendable {
        case raw, json, plist, xml, string
        case custom(Custom)
    }

    /// An app's serializer: a name, an `Accept` field, and the function that reads a body. The function gives whether
    /// a `.json` value holds everything `JSONDecoder` would read (see `Response.setParsedValue(_:decodable:)`).
    final class Custom: Sendable {
        let name: String
        let accept: String?
        let decode: @Sendable (Response) throws(HTTPError) -> (value: Response.Value, decodable: Bool)

        init(
            _ name: String, accept: String?,
            decode: @escaping @Sendable (Response) throws(HTTPError) -> (value: Response.Value, decodable: Bool)
        ) {
            (self.name, self.accept, self.decode) = (name, accept, decode)
        }
    }

    let kind: Kind

    /// The bytes as they came: `.data`.
    public static var raw: ResponseSerializer { ResponseSerializer(kind: .raw) }
    /// JSON, parsed into a `JSON` value. The default.
    public static var json: ResponseSerializer { ResponseSerializer(kind: .json) }
    /// A property list (XML or binary), read into a `JSON` value (dates as ISO 8601 text, data as base 64).
    public static var plist: ResponseSerializer { ResponseSerializer(kind: .plist) }
    /// XML, parsed into an `XML` element tree.
    public static var xml: ResponseSerializer { ResponseSerializer(kind: .xml) }
    /// Text, decoded with the charset of `Content-Type` (UTF-8 when none is given): the WHATWG labels of UTF-8,
    /// UTF-16, the ISO-8859 and Windows code pages, KOI8-R, GBK, GB 18030, Big5, Shift_JIS and EUC-KR. A charset not
    /// known is read as UTF-8; a body that is not text in its charset fails with `.decoding`, naming it.
    public static var string: ResponseSerializer { ResponseSerializer(kind: .string) }

    init(kind: Kind) { self.kind = kind }

    /// A serializer of the app's own.
    ///
    /// - Parameters:
    ///   - name: Names it in errors; serializers with the same name are equal.
    ///   - accept: The `Accept` field its requests send unless they set their own; `nil` sends none.
    ///   - decode: Reads a body that is not empty into a value: usually `.custom(model)`, read back with
    ///     `Response.value(as:)`.
    public init(
        _ name: String, accept: String? = nil, decode: @escaping @Sendable (Response) throws -> Response.Value
    ) {
        kind = .custom(
            Custom(name, accept: accept) { response throws(HTTPError) in
                do {
                    return (try decode(response), false)
                } catch {
                    throw HTTPError.wrapping(error, as: .decoding, "the \(name) serializer failed")
                }
            })
    }

    /// Chooses a serializer by the media type of the response's `Content-Type`: an exact type (`image/png`), then its
    /// family (`image/*`), then `otherwise` (for any other type, or none). Types are matched in lower case.
    ///
    /// ```swift
    /// request.responseSerializer = .byMediaType(["image/*": .image, "application/json": .json])
    /// ```
    public static func byMediaType(
        _ serializers: [String: ResponseSerializer], otherwise: ResponseSerializer = .raw
    ) -> ResponseSerializer {
        let table = Dictionary(serializers.map { ($0.key.lowercased(), $0.value) }, uniquingKeysWith: { $1 })
        let entries = table.sorted { $0.key < $1.key }
        let name = "by media type (" + entries.map { "\($0.key): \($0.value.name)" }.joined(separator: ", ") + ")"
        let accept = (entries.map(\.key) + ["*/*;q=0.8"]).joined(separator: ", ")
        return ResponseSerializer(
            kind: .custom(
                Custom(name, accept: accept) { response throws(HTTPError) in
                    let type = ResponseDecoding.mediaType(of: response.headers["Content-Type"] ?? "")
                    let family = String(type.prefix { $0 != "/" }) + "/*"
                    return try (table[type] ?? table[family] ?? otherwise).decode(response)
                }))
    }

    /// Its name: `json`, `raw`, `plist`, `xml`, `string`, or the one an app gave.
    public var name: String {
        switch kind {
        case .raw: "raw"
        case .json: "json"
        case .plist: "plist"
        case .xml: "xml"
        case .string: "string"
        case .custom(let custom): custom.name
        }
    }

    /// The `Accept` field a request with this serializer sends unless it sets its own; `nil` sends none.
    public var accept: String? {
        switch kind {
        case .json: "application/json, */*;q=0.8"
        case .plist: "application/x-plist, */*;q=0.8"
        case .xml: "application/xml, text/xml, */*;q=0.8"
        case .raw, .string: nil
        case .custom(let custom): custom.accept
        }
    }

    /// The body, which is not empty, as this serializer reads it, and whether a `.json` value holds everything
    /// `JSONDecoder` would read (see `JSON.parsed(_:of:)`).
    func decode(_ response: Response) throws(HTTPError) -> (value: Response.Value, decodable: Bool) {
        let data = response.data
        switch kind {
        case .raw:
            return (.data(data), true)
        case .json:
            return try ResponseDecoding.json(response)
        case .plist:
            let object: Any
            do {
                object = try PropertyListSerialization.propertyList(from: data, options: [], format: nil)
            } catch {
                throw HTTPError(.decoding, "the body is not a property list", underlying: error)
            }
            return (.json(try JSON(foundation: object)), true)
        case .xml:
            return (.xml(try XML(data: data)), true)
        case .string:
            return (.string(try ResponseDecoding.text(of: data, contentType: response.headers["Content-Type"])), true)
        case .custom(let custom):
            return try custom.decode(response)
        }
    }

    /// Serializers with the same name are equal (the built-in ones are told apart without comparing text).
    public static func == (lhs: ResponseSerializer, rhs: ResponseSerializer) -> Bool {
        switch (lhs.kind, rhs.kind) {
        case (.raw, .raw), (.json, .json), (.plist, .plist), (.xml, .xml), (.string, .string): true
        case (.custom, _), (_, .custom): lhs.name == rhs.name
        default: false
        }
    }

    /// Whether this is `.plist`, whose blank body is not JSON's "no content".
    var isPropertyList: Bool {
        if case .plist = kind { true } else { false }
    }

    public func hash(into hasher: inout Hasher) { hasher.combine(name) }
}

/// How `parameters` are encoded into a request body: one of the built-in serializers, or one an app makes.
///
/// ```swift
/// extension RequestSerializer {
///     static let lines = RequestSerializer("lines", contentType: "text/plain; charset=utf-8") { parameters in
///         Data(parameters.sorted { $0.key < $1.key }.map { "\($0.key): \($0.value)" }.joined(separator: "\n").utf8)
///     }
/// }
/// ```
///
/// A center's `requestSerializer` is the default of its requests.
public struct RequestSerializer: Sendable, Hashable {
    enum Kind: Sendable {
        case form, json, plist
        case custom(Custom)
    }

    /// An app's serializer: a name, the `Content-Type` of what it makes, and the function that makes it.
    final class Custom: Sendable {
        let name: String
        let contentType: String
        let encode: @Sendable ([String: any Sendable]) throws -> Data

        init(_ name: String, contentType: String, encode: @escaping @Sendable ([String: any Sendable]) throws -> Data) {
            (self.name, self.contentType, self.encode) = (name, contentType, encode)
        }
    }

    let kind: Kind

    /// `application/x-www-form-urlencoded`: `a=1&b[]=x&c[d]=y`. The default.
    public static var form: RequestSerializer { RequestSerializer(kind: .form) }
    /// `application/json`.
    public static var json: RequestSerializer { RequestSerializer(kind: .json) }
    /// An XML property list, `application/x-plist`.
    public static var plist: RequestSerializer { RequestSerializer(kind: .plist) }

    init(kind: Kind) { self.kind = kind }

    /// A serializer of the app's own.
    ///
    /// - Parameters:
    ///   - name: Names it in errors; serializers with the same name are equal.
    ///   - contentType: The `Content-Type` of the body it makes (a request's own field wins).
    ///   - encode: Makes the body from the parameters, the center's merged under the request's own. What it throws
    ///     fails the request with `.encoding` before anything is sent.
    public init(
        _ name: String, contentType: String, encode: @escaping @Sendable ([String: any Sendable]) throws -> Data
    ) {
        kind = .custom(Custom(name, contentType: contentType, encode: encode))
    }

    /// Its name: `form`, `json`, `plist`, or the one an app gave.
    public var name: String {
        switch kind {
        case .form: "form"
        case .json: "json"
        case .plist: "plist"
        case .custom(let custom): custom.name
        }
    }

    /// The body for these parameters (the request's, already checked and converted as `members`), and its type.
    func encode(
        _ members: [ParameterValue.Member], of request: Request
    ) throws(HTTPError) -> (body: Data, contentType: String) {
        switch kind {
        case .form:
            let text = FormEncoding.encode(members, style: request.formStyle ?? FormStyle())
            return (Data(text.utf8), "application/x-www-form-urlencoded; charset=utf-8")
        case .json:
            var text = ""
            try ParameterValue.object(members).writeJSON(to: &text, path: "")
            return (Data(text.utf8), "application/json")
        case .plist:
            return (try ParameterValue.propertyList(members), "application/x-plist")
        case .custom(let custom):
            do {
                return (try custom.encode(request.parameters), custom.contentType)
            } catch {
                throw HTTPError.wrapping(error, as: .encoding, "the \(custom.name) serializer failed")
            }
        }
    }

    /// Serializers with the same name are equal (the built-in ones are told apart without comparing text).
    public static func == (lhs: RequestSerializer, rhs: RequestSerializer) -> Bool {
        switch (lhs.kind, rhs.kind) {
        case (.form, .form), (.json, .json), (.plist, .plist): true
        case (.custom, _), (_, .custom): lhs.name == rhs.name
        default: false
        }
    }

    public func hash(into hasher: inout Hasher) { hasher.combine(name) }
}
