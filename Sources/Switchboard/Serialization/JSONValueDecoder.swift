import Foundation

/// Decodes `Decodable` values from a `JSON` value that Switchboard has parsed already, as `JSONDecoder` with its
/// default settings decodes them from the text: `Response.decode(_:using:)` uses it for a JSON body when the decoder
/// it is given is a plain `JSONDecoder` with every setting at its default (see `standsIn(for:)`), so that a typed
/// send parses its body once, not a second time in `JSONDecoder`.
///
/// The same values and the same errors as `JSONDecoder`'s, in kind and coding path: `Date` by its default strategy
/// (seconds since 2001, through `Date`'s own decoding), `Data` from Base64 text, `URL` from its text, `Decimal` from
/// the number's digits, integers and floating-point numbers as `JSONDecoder` reads them (an integer spelled `1.0` or
/// `1e2` is one, a number that does not fit the type is an error, not a rounded value), a `JSON` value exactly as
/// parsed. One difference, stricter: a number whose fraction is not zero never decodes as an integer (`JSONDecoder`
/// reads `1.0000000000000001` as 1, and cuts the fraction off numbers above 2⁵³, such as `12345678901234567.5`).
///
/// A parsed object keeps the last value of a name it holds twice, where `JSONDecoder` reads the first: a value parsed
/// from such text is never decoded here (`JSON.parsed(_:of:)` says so, and the callers decode the bytes instead).
struct JSONValueDecoder: Decoder {
    let value: JSON
    /// The path to the value's container; the value's own key apart, so that no path is made for a value that needs
    /// none (most are read without an error and without a container of their own).
    let parentPath: [any CodingKey]
    let key: (any CodingKey)?

    init(value: JSON, parentPath: [any CodingKey], key: (any CodingKey)?) {
        self.value = value
        self.parentPath = parentPath
        self.key = key
    }

    var codingPath: [any CodingKey] {
        if let key { parentPath + [key] } else { parentPath }
    }

    var userInfo: [CodingUserInfoKey: Any] { [:] }

    /// Whether `decoder` decodes as this type does: a `JSONDecoder` itself (not a subclass, which may decode its own
    /// way), with its key, date, data and non-conforming float strategies, its options and its `userInfo` at their
    /// defaults.
    static func standsIn(for decoder: JSONDecoder) -> Bool {
        guard type(of: decoder) == JSONDecoder.self, decoder.userInfo.isEmpty, !decoder.allowsJSON5,
            !decoder.assumesTopLevelDictionary
        else { return false }
        guard case .useDefaultKeys = decoder.keyDecodingStrategy,
            case .deferredToDate = decoder.dateDecodingStrategy,
            case .base64 = decoder.dataDecodingStrategy,
            case .throw = decoder.nonConformingFloatDecodingStrategy
        else { return false }
        return true
    }

    /// Decodes a value of `type` from `value`.
    static func decode<T: Decodable>(_ type: T.Type, from value: JSON) throws -> T {
        try JSONValueDecoder(value: value, parentPath: [], key: nil).unwrap(type)
    }

    // MARK: - Decoder

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        guard case .object(let members) = value else {
            throw mismatch([String: Any].self, value, at: codingPath)
        }
        return KeyedDecodingContainer(KeyedContainer<Key>(members: members, codingPath: codingPath))
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        guard case .array(let elements) = value else { throw mismatch([Any].self, value, at: codingPath) }
        return UnkeyedContainer(elements: elements, codingPath: codingPath)
    }

    func singleValueContainer() throws -> any SingleValueDecodingContainer {
        self
    }

    // MARK: - Values

    /// `value` as `type`: the types `JSONDecoder` treats apart first, then the type's own decoding.
    func unwrap<T: Decodable>(_ type: T.Type) throws -> T {
        if T.self == JSON.self { return value as! T }
        if T.self == Data.self {
            let text = try string()
            guard let data = Data(base64Encoded: text) else {
                throw corrupted("Encountered Data is not valid Base64.")
            }
            return data as! T
        }
        if T.self == URL.self {
            let text = try string()
            guard let url = URL(string: text) else { throw corrupted("Invalid URL string.") }
            return url as! T
        }
        if T.self == Decimal.self { return try decimal() as! T }
        return try T(from: self)
    }

    func string() throws -> String { try Self.string(value, at: codingPath) }
    func bool() throws -> Bool { try Self.bool(value, at: codingPath) }
    func integer<T: FixedWidthInteger>(_ type: T.Type) throws -> T { try Self.integer(T.self, value, at: codingPath) }
    func floatingPoint<T: BinaryFloatingPoint & LosslessStringConvertible>(_ type: T.Type) throws -> T {
        try Self.floatingPoint(T.self, value, at: codingPath)
    }

    func decimal() throws -> Decimal {
        let number = try Self.number(Decimal.self, value, at: codingPath)
        guard let decimal = number.decimal else {
            throw Self.corrupted("Parsed JSON number <\(number)> does not fit in Decimal.", at: codingPath)
        }
        return decimal
    }

    // The conversions, for a value with or without a decoder of its own: its path is made only for an error.

    static func string(_ value: JSON, at path: @autoclosure () -> [any CodingKey]) throws -> String {
        guard case .string(let text) = value else { throw mismatch(String.self, value, at: path()) }
        return text
    }

    static func bool(_ value: JSON, at path: @autoclosure () -> [any CodingKey]) throws -> Bool {
        guard case .bool(let flag) = value else { throw mismatch(Bool.self, value, at: path()) }
        return flag
    }

    static func number<T>(
        _ type: T.Type, _ value: JSON, at path: @autoclosure () -> [any CodingKey]
    ) throws -> JSON.Number {
        guard case .number(let number) = value else { throw mismatch(T.self, value, at: path()) }
        return number
    }

    static func integer<T: FixedWidthInteger>(
        _ type: T.Type, _ value: JSON, at path: @autoclosure () -> [any CodingKey]
    ) throws -> T {
        let number = try number(T.self, value, at: path())
        // `JSON.Number`'s own integer readings: exact, whatever the spelling (`1.0`, `1e2`), `nil` for a fraction.
        guard let exact = number.int64.flatMap({ T(exactly: $0) }) ?? number.uint64.flatMap({ T(exactly: $0) }) else {
            throw corrupted("Parsed JSON number <\(number)> does not fit in \(T.self).", at: path())
        }
        return exact
    }

    static func floatingPoint<T: BinaryFloatingPoint & LosslessStringConvertible>(
        _ type: T.Type, _ value: JSON, at path: @autoclosure () -> [any CodingKey]
    ) throws -> T {
        let number = try number(T.self, value, at: path())
        let result: T? =
            switch number.storage {
            case .int(let int): T(int)
            case .uint(let uint): T(uint)
            case .text(let text):
                // As `JSONDecoder` reads it: the nearest value, unless that is infinite, or zero for digits that are
                // not all zeros.
                T(text).flatMap { $0.isFinite && ($0 != 0 || isZero(text)) ? $0 : nil }
            }
        guard let result else {
            throw corrupted("Parsed JSON number <\(number)> does not fit in \(T.self).", at: path())
        }
        return result
    }

    /// Whether number text has no digit but zeros before its exponent.
    static func isZero(_ text: String) -> Bool {
        for byte in text.utf8 {
            if byte == UInt8(ascii: "e") || byte == UInt8(ascii: "E") { break }
            if byte >= UInt8(ascii: "1") && byte <= UInt8(ascii: "9") { return false }
        }
        return true
    }

    // MARK: - Errors

    func corrupted(_ description: String) -> DecodingError {
        Self.corrupted(description, at: codingPath)
    }

    static func corrupted(_ description: String, at path: [any CodingKey]) -> DecodingError {
        .dataCorrupted(DecodingError.Context(codingPath: path, debugDescription: description))
    }
}

/// The error for a value of the wrong kind, as `JSONDecoder` gives it: a missing value for `null`.
private func mismatch(_ type: Any.Type, _ value: JSON, at path: [any CodingKey]) -> DecodingError {
    let kind: String
    switch value {
    case .null:
        return .valueNotFound(
            type, DecodingError.Context(codingPath: path, debugDescription: "Expected \(type) but found null instead."))
    case .bool: kind = "bool"
    case .number: kind = "number"
    case .string: kind = "a string"
    case .array: kind = "an array"
    case .object: kind = "a dictionary"
    }
    return .typeMismatch(
        type,
        DecodingError.Context(
            codingPath: path, debugDescription: "Expected to decode \(type) but found \(kind) instead."))
}

/// A key of an array's element, or `super`: an index alone (`nil` for `super`), so that it is stored in an
/// existential without a box of its own.
private struct IndexKey: CodingKey {
    let intValue: Int?

    init(index: Int) {
        intValue = index
    }

    init?(stringValue: String) {
        guard stringValue == "super" else { return nil }
        intValue = nil
    }

    init(intValue: Int) {
        self.init(index: intValue)
    }

    var stringValue: String { intValue.map { "Index \($0)" } ?? "super" }

    static let `super` = IndexKey(stringValue: "super")!
}

extension JSONValueDecoder: SingleValueDecodingContainer {
    func decodeNil() -> Bool { value == .null }
    func decode(_ type: Bool.Type) throws -> Bool { try bool() }
    func decode(_ type: String.Type) throws -> String { try string() }
    func decode(_ type: Double.Type) throws -> Double { try floatingPoint(Double.self) }
    func decode(_ type: Float.Type) throws -> Float { try floatingPoint(Float.self) }
    func decode(_ type: Int.Type) throws -> Int { try integer(Int.self) }
    func decode(_ type: Int8.Type) throws -> Int8 { try integer(Int8.self) }
    func decode(_ type: Int16.Type) throws -> Int16 { try integer(Int16.self) }
    func decode(_ type: Int32.Type) throws -> Int32 { try integer(Int32.self) }
    func decode(_ type: Int64.Type) throws -> Int64 { try integer(Int64.self) }
    func decode(_ type: UInt.Type) throws -> UInt { try integer(UInt.self) }
    func decode(_ type: UInt8.Type) throws -> UInt8 { try integer(UInt8.self) }
    func decode(_ type: UInt16.Type) throws -> UInt16 { try integer(UInt16.self) }
    func decode(_ type: UInt32.Type) throws -> UInt32 { try integer(UInt32.self) }
    func decode(_ type: UInt64.Type) throws -> UInt64 { try integer(UInt64.self) }
    func decode<T: Decodable>(_ type: T.Type) throws -> T { try unwrap(type) }
}

/// An object's members, by key.
private struct KeyedContainer<Key: CodingKey>: KeyedDecodingContainerProtocol {
    let members: [String: JSON]
    let codingPath: [any CodingKey]

    var allKeys: [Key] { members.keys.compactMap { Key(stringValue: $0) } }

    func contains(_ key: Key) -> Bool { members[key.stringValue] != nil }

    /// The member at `key`; a missing key is an error.
    func value(_ key: Key) throws -> JSON {
        guard let value = members[key.stringValue] else {
            throw DecodingError.keyNotFound(
                key,
                DecodingError.Context(
                    codingPath: codingPath,
                    debugDescription: "No value associated with key \(key) (\"\(key.stringValue)\")."))
        }
        return value
    }

    func member(_ key: Key) throws -> JSONValueDecoder {
        JSONValueDecoder(value: try value(key), parentPath: codingPath, key: key)
    }

    func decodeNil(forKey key: Key) throws -> Bool { try value(key) == .null }
    func decode(_ type: Bool.Type, forKey key: Key) throws -> Bool {
        try JSONValueDecoder.bool(value(key), at: codingPath + [key])
    }
    func decode(_ type: String.Type, forKey key: Key) throws -> String {
        try JSONValueDecoder.string(value(key), at: codingPath + [key])
    }
    func decode(_ type: Double.Type, forKey key: Key) throws -> Double { try floatingPoint(type, key) }
    func decode(_ type: Float.Type, forKey key: Key) throws -> Float { try floatingPoint(type, key) }
    func decode(_ type: Int.Type, forKey key: Key) throws -> Int { try integer(type, key) }
    func decode(_ type: Int8.Type, forKey key: Key) throws -> Int8 { try integer(type, key) }
    func decode(_ type: Int16.Type, forKey key: Key) throws -> Int16 { try integer(type, key) }
    func decode(_ type: Int32.Type, forKey key: Key) throws -> Int32 { try integer(type, key) }
    func decode(_ type: Int64.Type, forKey key: Key) throws -> Int64 { try integer(type, key) }
    func decode(_ type: UInt.Type, forKey key: Key) throws -> UInt { try integer(type, key) }
    func decode(_ type: UInt8.Type, forKey key: Key) throws -> UInt8 { try integer(type, key) }
    func decode(_ type: UInt16.Type, forKey key: Key) throws -> UInt16 { try integer(type, key) }
    func decode(_ type: UInt32.Type, forKey key: Key) throws -> UInt32 { try integer(type, key) }
    func decode(_ type: UInt64.Type, forKey key: Key) throws -> UInt64 { try integer(type, key) }
    func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T { try member(key).unwrap(type) }

    func integer<T: FixedWidthInteger>(_ type: T.Type, _ key: Key) throws -> T {
        try JSONValueDecoder.integer(type, value(key), at: codingPath + [key])
    }

    func floatingPoint<T: BinaryFloatingPoint & LosslessStringConvertible>(_ type: T.Type, _ key: Key) throws -> T {
        try JSONValueDecoder.floatingPoint(type, value(key), at: codingPath + [key])
    }

    func nestedContainer<NestedKey: CodingKey>(
        keyedBy type: NestedKey.Type, forKey key: Key
    ) throws -> KeyedDecodingContainer<NestedKey> {
        try member(key).container(keyedBy: type)
    }

    func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
        try member(key).unkeyedContainer()
    }

    func superDecoder() throws -> any Decoder {
        JSONValueDecoder(
            value: members[IndexKey.super.stringValue] ?? .null, parentPath: codingPath, key: IndexKey.super)
    }

    func superDecoder(forKey key: Key) throws -> any Decoder {
        JSONValueDecoder(value: members[key.stringValue] ?? .null, parentPath: codingPath, key: key)
    }
}

/// An array's elements, in order.
private struct UnkeyedContainer: UnkeyedDecodingContainer {
    let elements: [JSON]
    let codingPath: [any CodingKey]
    private(set) var currentIndex = 0

    init(elements: [JSON], codingPath: [any CodingKey]) {
        self.elements = elements
        self.codingPath = codingPath
    }

    var count: Int? { elements.count }
    var isAtEnd: Bool { currentIndex >= elements.count }

    /// The next element, which is then passed; past the end is an error.
    mutating func next<T>(_ type: T.Type) throws -> JSON {
        guard !isAtEnd else {
            throw DecodingError.valueNotFound(
                type,
                DecodingError.Context(
                    codingPath: codingPath + [IndexKey(index: currentIndex)],
                    debugDescription: "Unkeyed container is at end."))
        }
        defer { currentIndex += 1 }
        return elements[currentIndex]
    }

    /// The decoder of the next element, which is then passed.
    mutating func nextDecoder<T>(_ type: T.Type) throws -> JSONValueDecoder {
        let index = currentIndex
        return JSONValueDecoder(value: try next(type), parentPath: codingPath, key: IndexKey(index: index))
    }

    /// The path of the element just passed, for an error.
    var passedPath: [any CodingKey] { codingPath + [IndexKey(index: currentIndex - 1)] }

    mutating func decodeNil() throws -> Bool {
        guard !isAtEnd else { _ = try next(Any?.self); return false }
        guard elements[currentIndex] == .null else { return false }
        currentIndex += 1
        return true
    }

    mutating func decode(_ type: Bool.Type) throws -> Bool {
        let value = try next(type)
        return try JSONValueDecoder.bool(value, at: passedPath)
    }
    mutating func decode(_ type: String.Type) throws -> String {
        let value = try next(type)
        return try JSONValueDecoder.string(value, at: passedPath)
    }
    mutating func decode(_ type: Double.Type) throws -> Double { try floatingPoint(type) }
    mutating func decode(_ type: Float.Type) throws -> Float { try floatingPoint(type) }
    mutating func decode(_ type: Int.Type) throws -> Int { try integer(type) }
    mutating func decode(_ type: Int8.Type) throws -> Int8 { try integer(type) }
    mutating func decode(_ type: Int16.Type) throws -> Int16 { try integer(type) }
    mutating func decode(_ type: Int32.Type) throws -> Int32 { try integer(type) }
    mutating func decode(_ type: Int64.Type) throws -> Int64 { try integer(type) }
    mutating func decode(_ type: UInt.Type) throws -> UInt { try integer(type) }
    mutating func decode(_ type: UInt8.Type) throws -> UInt8 { try integer(type) }
    mutating func decode(_ type: UInt16.Type) throws -> UInt16 { try integer(type) }
    mutating func decode(_ type: UInt32.Type) throws -> UInt32 { try integer(type) }
    mutating func decode(_ type: UInt64.Type) throws -> UInt64 { try integer(type) }
    mutating func decode<T: Decodable>(_ type: T.Type) throws -> T { try nextDecoder(type).unwrap(type) }

    mutating func integer<T: FixedWidthInteger>(_ type: T.Type) throws -> T {
        let value = try next(type)
        return try JSONValueDecoder.integer(type, value, at: passedPath)
    }

    mutating func floatingPoint<T: BinaryFloatingPoint & LosslessStringConvertible>(_ type: T.Type) throws -> T {
        let value = try next(type)
        return try JSONValueDecoder.floatingPoint(type, value, at: passedPath)
    }

    mutating func nestedContainer<NestedKey: CodingKey>(
        keyedBy type: NestedKey.Type
    ) throws -> KeyedDecodingContainer<NestedKey> {
        try nextDecoder([String: Any].self).container(keyedBy: type)
    }

    mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer {
        try nextDecoder([Any].self).unkeyedContainer()
    }

    mutating func superDecoder() throws -> any Decoder {
        try nextDecoder(Any.self)
    }
}
