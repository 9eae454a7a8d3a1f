import Foundation

/// Business envelopes (`{"code": 0, "message": "ok", "data": {...}}`): check the code, fail with the server's code
/// and message, or unwrap the payload so that `decode(_:)` reads it.
///
/// ```swift
/// center.setup { config in
///     config.onResponse = { request, response in try response.unwrapping(code: "code", ok: 0, data: "data") }
/// }
/// let user = try await center.send(User.self) { $0.api = "me" }    // decodes what was under "data"
/// ```
///
/// Key paths are dotted (`result.status`), with numbers for array elements (`items.0.id`).
extension Response {
    /// Checks the code at `code` against `ok`, then returns a response whose body is the payload at `data` (or the
    /// whole body when `data` is `nil`).
    ///
    /// - Throws: `HTTPError` with code `.business`, the server's code in `serverCode` and its message (at
    ///   `message`) as the error's message, when the code is not OK; `.decoding` when the body is not JSON or the
    ///   code is missing.
    public func unwrapping(
        code codePath: String = "code", ok: JSON = 0, message messagePath: String = "message",
        data dataPath: String? = "data"
    ) throws(HTTPError) -> Response {
        guard let body = json else {
            throw HTTPError(.decoding, "the body is not a JSON envelope", request: request, response: self)
        }
        guard let code = body[path: codePath] else {
            throw HTTPError(.decoding, "the envelope has no \"\(codePath)\"", request: request, response: self)
        }
        guard Response.sameCode(code, ok) else {
            var error = HTTPError(
                .business, body[path: messagePath]?.string ?? "the server answered code \(code)",
                request: request, response: self)
            error.serverCode = code
            throw error
        }
        guard let dataPath else { return self }
        let payload = body[path: dataPath] ?? .null
        // The payload stands in for its bytes when the body's value did for the body's.
        let decodable = valueStandsForData
        var unwrapped = self
        // `decode` reads the payload's own bytes, as the server sent them (numbers, escapes and all); a payload
        // that is missing is `null`. A body that is not UTF-8 JSON text was read through Foundation: write it anew.
        if let range = JSONParser.range(ofPath: dataPath, in: data) {
            unwrapped.data = data.subdata(
                in: (data.startIndex + range.lowerBound)..<(data.startIndex + range.upperBound))
        } else {
            unwrapped.data = Data(payload.description.utf8)
        }
        unwrapped.setParsedValue(.json(payload), decodable: decodable)
        return unwrapped
    }

    /// Codes compare as values, with a number and its text equal (`0` and `"0"`), as envelopes mix them.
    static func sameCode(_ code: JSON, _ ok: JSON) -> Bool {
        if code == ok { return true }
        func number(_ value: JSON) -> Double? { value.double ?? value.string.flatMap(Double.init) }
        if let left = number(code), let right = number(ok) { return left == right }
        return false
    }

    /// Checks that the JSON body has a shape (YTKNetwork's `jsonValidator`); returns the response unchanged.
    ///
    /// ```swift
    /// try response.validating(["id": .number, "name": .string, "tags": .array(.string), "bio": .optional(.string)])
    /// ```
    ///
    /// - Throws: `HTTPError` with code `.decoding` naming the first path that does not match.
    @discardableResult
    public func validating(_ shape: JSONShape) throws(HTTPError) -> Response {
        guard let body = json else {
            throw HTTPError(.decoding, "the body is not JSON", request: request, response: self)
        }
        if let mismatch = shape.mismatch(in: body, at: "$") {
            throw HTTPError(.decoding, mismatch, request: request, response: self)
        }
        return self
    }
}

/// The expected shape of a JSON value, for `Response.validating(_:)`.
public indirect enum JSONShape: Sendable, Hashable, ExpressibleByDictionaryLiteral {
    /// Anything, `null` included.
    case any
    /// A string.
    case string
    /// A number.
    case number
    /// `true` or `false`.
    case bool
    /// An array whose every element has this shape.
    case array(JSONShape)
    /// An object with at least these members, each of its shape (use `.optional` for members that may be absent).
    case object([String: JSONShape])
    /// This shape, or `null`, or absent.
    case optional(JSONShape)

    /// An object shape.
    public init(dictionaryLiteral elements: (String, JSONShape)...) {
        self = .object(Dictionary(elements, uniquingKeysWith: { _, last in last }))
    }

    /// A sentence naming the first place where `value` does not match, or `nil`.
    func mismatch(in value: JSON?, at path: String) -> String? {
        switch (self, value) {
        case (.any, _): return nil
        case (.optional, nil), (.optional, .null?): return nil
        case (.optional(let shape), let value): return shape.mismatch(in: value, at: path)
        case (_, nil): return "\(path) is missing; expected \(name)"
        case (.string, .string?), (.number, .number?), (.bool, .bool?): return nil
        case (.array(let element), .array(let elements)?):
            for (index, item) in elements.enumerated() {
                if let mismatch = element.mismatch(in: item, at: "\(path)[\(index)]") { return mismatch }
            }
            return nil
        case (.object(let members), .object(let object)?):
            for key in members.keys.sorted() {
                if let mismatch = members[key]!.mismatch(in: object[key], at: "\(path).\(key)") { return mismatch }
            }
            return nil
        case (_, let value?):
            return "\(path) should be \(name), found \(JSONShape.describe(value))"
        }
    }

    private var name: String {
        switch self {
        case .any: "anything"
        case .string: "a string"
        case .number: "a number"
        case .bool: "a Boolean"
        case .array: "an array"
        case .object: "an object"
        case .optional(let shape): "\(shape.name) or null"
        }
    }

    private static func describe(_ value: JSON) -> String {
        switch value {
        case .null: "null"
        case .bool: "a Boolean"
        case .number: "a number"
        case .string: "a string"
        case .array: "an array"
        case .object: "an object"
        }
    }
}

extension JSON {
    /// The value at a dotted key path (`data.items.0.id`), or `nil`.
    public subscript(path path: String) -> JSON? {
        var current: JSON? = self
        for component in path.split(separator: ".", omittingEmptySubsequences: true) {
            if let index = Int(component), case .array = current {
                current = current?[index]
            } else {
                current = current?[String(component)]
            }
        }
        return current
    }
}
