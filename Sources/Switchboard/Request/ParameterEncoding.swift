import Foundation

/// How parameters are written into a query or a form body (`application/x-www-form-urlencoded`, and a multipart
/// form's text fields): arrays and Booleans. A JSON or property-list body has types of its own for both.
///
/// ```swift
/// center.setup { $0.formStyle = FormStyle(arrays: .repeatedKeys, booleans: .numbers) }
/// center.send { $0.api = "search"; $0.parameters = ["tag": ["a", "b"], "exact": true] }
/// // GET /search?exact=1&tag=a&tag=b
/// ```
public struct FormStyle: Sendable, Hashable {
    /// How an array is written.
    public enum Arrays: Sendable, Hashable {
        /// `tag[]=a&tag[]=b` (PHP's and Rails' form): the default.
        case brackets
        /// `tag=a&tag=b`.
        case repeatedKeys
        /// `tag[0]=a&tag[1]=b`.
        case indexed
    }

    /// How a Boolean is written.
    public enum Booleans: Sendable, Hashable {
        /// `true` and `false`: the default.
        case literals
        /// `1` and `0`.
        case numbers
    }

    /// How arrays are written.
    public var arrays: Arrays
    /// How Booleans are written.
    public var booleans: Booleans

    /// A style; the defaults are `tag[]=a` and `true`.
    public init(arrays: Arrays = .brackets, booleans: Booleans = .literals) {
        (self.arrays, self.booleans) = (arrays, booleans)
    }
}

/// Where a request's parameters go.
public enum ParameterPlacement: Sendable, Hashable {
    /// In the URL's query, whatever the method.
    case query
    /// In the body, as the request serializer writes it (a `GET` or `HEAD` cannot have one: `.encoding`, unsent).
    case body
}

extension Request {
    /// Sets `parameters` to the members of an `Encodable` value, as `encoder` writes it in JSON: its date, key and
    /// data strategies apply, and every number keeps every digit (a `Decimal` too). They then go where any
    /// parameters go (`parameterPlacement`), merged with the center's as any are.
    ///
    /// ```swift
    /// struct Search: Encodable { var query: String; var page: Int; var since: Date }
    /// let encoder = JSONEncoder()
    /// encoder.dateEncodingStrategy = .iso8601
    /// encoder.keyEncodingStrategy = .convertToSnakeCase
    /// center.send { request in
    ///     request.api = "search"
    ///     request.setParameters(Search(query: "swift", page: 2, since: lastVisit), encoder: encoder)
    /// }
    /// ```
    ///
    /// A value that cannot be encoded, or is not written as a JSON object (a number, an array), fails the request
    /// with `.encoding` when it is sent, naming why; nothing is sent. Setting parameters from another value replaces
    /// them, and the failure with them.
    public mutating func setParameters(_ value: some Encodable, encoder: JSONEncoder = JSONEncoder()) {
        var failure: HTTPError?
        do {
            let json = try JSON(data: try encoder.encode(value))
            if case .object(let members) = json {
                parameters = Dictionary(uniqueKeysWithValues: members.map { ($0.key, $0.value as any Sendable) })
            } else {
                parameters = [:]
                let kind =
                    switch json {
                    case .array: "an array"
                    case .string: "a string"
                    case .bool: "a Boolean"
                    case .null: "null"
                    default: "a number"
                    }
                failure = HTTPError(
                    .encoding, "parameters from \(type(of: value)) must be written as a JSON object, not as \(kind)")
            }
        } catch {
            parameters = [:]
            failure = HTTPError.wrapping(error, as: .encoding, "parameters could not be made from \(type(of: value))")
        }
        if failure != nil || fields.cold?.value.parameterFailure != nil {
            fields.coldBox().value.parameterFailure = failure
        }
    }
}
