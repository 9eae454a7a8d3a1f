import Foundation

/// Decodes `Decodable` values from a `JSON` value that Switchboard has parsed already, as `JSONDecoder` decodes them
/// from the text: `Response.decode(_:using:)` uses it for a JSON body when the decoder it is given is a plain
/// `JSONDecoder` whose settings it follows (see `Options.init?(_:)`), so that a typed send parses its body once, not a
/// second time in `JSONDecoder`.
///
/// The same values and the same errors as `JSONDecoder`'s, in kind and coding path: names converted by the decoder's
/// key strategy (see `SnakeCase` and `CustomNames`), `Date` and `Data` by the decoder's strategies (by default a date
/// in seconds since 2001, through `Date`'s own decoding, and data from Base64 text; a `.custom` closure is called with
/// this decoder at the value; a `null` is a missing `Date` or `Data` under each), `URL` from its text, `Decimal` from
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
    let options: Options

    init(value: JSON, parentPath: [any CodingKey], key: (any CodingKey)?, options: Options = Options()) {
        self.value = value
        self.parentPath = parentPath
        self.key = key
        self.options = options
    }

    /// The settings of the `JSONDecoder` this decoder stands in for: its strategies and `userInfo`, held in one
    /// object that every decoder and container of a decoding shares (each is made with a copy of these options, so
    /// that a copy is one reference, not one for each strategy's closure), and the names converted in a decoding.
    struct Options {
        private var settings: Settings
        /// The names converted so far in a decoding (`decode` makes one for each, when names are converted).
        var names: (any NameConversion)?

        /// How an object's names become the names its keys are looked up by: as they are, converted from snake case
        /// (`user_id` is found as `userId`), or by the decoder's own closure. `[String: T]` dictionaries keep their
        /// names whatever the strategy, as `JSONDecoder` keeps them.
        var keys: Keys { settings.keys }
        var dates: Dates { settings.dates }
        var data: DataStrategy { settings.data }
        /// The decoder's `userInfo`, which the types decoded read as they would read `JSONDecoder`'s.
        var userInfo: [CodingUserInfoKey: Any] {
            settings.userInfo.isEmpty ? [:] : settings.userInfo.mapValues { $0 as Any }
        }
        /// Whether an object's names are looked up as they are in the text.
        var keepsNames: Bool { settings.keepsNames }

        enum Keys: Sendable {
            case useDefaultKeys, convertFromSnakeCase
            /// The decoder's `.custom` closure, called with the path of each name (its container's path, then the
            /// name), as `JSONDecoder` calls it.
            case custom(@Sendable ([any CodingKey]) -> any CodingKey)
        }

        enum Dates: Sendable {
            case deferredToDate, secondsSince1970, millisecondsSince1970, iso8601
            /// The decoder's `.custom` closure (on Linux, `.formatted(_:)` is one too), called with a decoder at the
            /// date's value, as `JSONDecoder` calls it.
            case custom(@Sendable (any Decoder) throws -> Date)
        }

        enum DataStrategy: Sendable {
            case base64, deferredToData
            /// The decoder's `.custom` closure, called with a decoder at the value, as `JSONDecoder` calls it.
            case custom(@Sendable (any Decoder) throws -> Data)
        }

        /// The strategies and `userInfo`, set once.
        private final class Settings: Sendable {
            let keys: Keys
            let dates: Dates
            let data: DataStrategy
            let userInfo: [CodingUserInfoKey: any Sendable]
            /// Apart from `keys` (which may hold a closure, copied at each read): read for every value decoded.
            let keepsNames: Bool

            init(keys: Keys, dates: Dates, data: DataStrategy, userInfo: [CodingUserInfoKey: any Sendable]) {
                self.keys = keys
                self.dates = dates
                self.data = data
                self.userInfo = userInfo
                if case .useDefaultKeys = keys { keepsNames = true } else { keepsNames = false }
            }

            /// A `JSONDecoder`'s defaults.
            static let defaults = Settings(keys: .useDefaultKeys, dates: .deferredToDate, data: .base64, userInfo: [:])
        }

        /// A `JSONDecoder`'s defaults.
        init() {
            settings = .defaults
        }

        /// The options of `decoder`, or `nil` when this decoder cannot stand in for it: when it is a subclass (which
        /// may decode its own way), has JSON5 or a top-level dictionary assumed, or a non-conforming float strategy
        /// of its own (`JSONDecoder` compares such a string's text as written, escapes and all, which a parsed value
        /// no longer has). Its `userInfo`, and every key, date and data strategy, are followed, but on Apple platforms
        /// `.iso8601` and the `.custom` strategies only from macOS 15 and iOS 18 (where `JSONDecoder` is Swift's
        /// own, the one tested here), and `.formatted(_:)` not at all.
        init?(_ decoder: JSONDecoder) {
            guard type(of: decoder) == JSONDecoder.self, !decoder.allowsJSON5, !decoder.assumesTopLevelDictionary,
                case .throw = decoder.nonConformingFloatDecodingStrategy
            else { return nil }
            let data: DataStrategy
            switch decoder.dataDecodingStrategy {
            case .base64: data = .base64
            case .deferredToData: data = .deferredToData
            case .custom(let read):
                guard Self.followsNewerRules else { return nil }
                data = .custom(read)
            @unknown default: return nil
            }
            let keys: Keys
            switch decoder.keyDecodingStrategy {
            case .useDefaultKeys: keys = .useDefaultKeys
            case .convertFromSnakeCase: keys = .convertFromSnakeCase
            case .custom(let convert):
                guard Self.followsNewerRules else { return nil }
                keys = .custom(convert)
            @unknown default: return nil
            }
            let dates: Dates
            switch decoder.dateDecodingStrategy {
            case .deferredToDate: dates = .deferredToDate
            case .secondsSince1970: dates = .secondsSince1970
            case .millisecondsSince1970: dates = .millisecondsSince1970
            case .iso8601:
                guard Self.followsNewerRules else { return nil }
                dates = .iso8601
            case .custom(let read):
                guard Self.followsNewerRules else { return nil }
                dates = .custom(read)
            #if canImport(Darwin)
            default: return nil  // `.formatted(_:)`, a case of its own there
            #endif
            }
            settings = Settings(keys: keys, dates: dates, data: data, userInfo: decoder.userInfo)
        }

        /// Whether the system's `JSONDecoder` is Swift's own (always on Linux), whose rules for ISO 8601 dates and
        /// custom closures (the path each is called with) are the ones followed and tested here; older Apple systems
        /// have another implementation, which may differ.
        private static var followsNewerRules: Bool {
            #if canImport(Darwin)
            guard #available(macOS 15, iOS 18, tvOS 18, watchOS 11, *) else { return false }
            #endif
            return true
        }
    }

    /// Why a value cannot be decoded here as `JSONDecoder` would decode its text (see `SnakeCase`): the caller decodes
    /// the bytes instead.
    struct Unsupported: Error {}

    var codingPath: [any CodingKey] {
        if let key { parentPath + [key] } else { parentPath }
    }

    var userInfo: [CodingUserInfoKey: Any] { options.userInfo }

    /// Decodes `type` from `parsed`, the value Switchboard parsed from `data`, when there is one and `options` (those
    /// of `decoder`, when this stands in for it) are given; otherwise, or when the value is `Unsupported`, `decoder`
    /// decodes `data`.
    static func decode<T: Decodable>(
        _ type: T.Type, parsed: JSON?, options: Options?, else decoder: JSONDecoder, from data: Data
    ) throws -> T {
        if let parsed, let options {
            do {
                return try decode(type, from: parsed, options: options)
            } catch is Unsupported {
                // Names that the key strategy converts in a way only the text can settle: the bytes, below.
            }
        }
        return try decoder.decode(type, from: data)
    }

    /// Decodes a value of `type` from `value`, as a `JSONDecoder` with `options` would from its text.
    ///
    /// - Throws: `Unsupported` when a name is one the key strategy converts in a way only the text settles (see
    ///   `SnakeCase`), whatever else happened; else `JSONDecoder`'s errors.
    static func decode<T: Decodable>(_ type: T.Type, from value: JSON, options: Options = Options()) throws -> T {
        var options = options
        let names: (any NameConversion)? =
            switch options.keys {
            case .useDefaultKeys: nil
            case .convertFromSnakeCase: SnakeCase()
            case .custom(let convert): CustomNames(convert)
            }
        options.names = names
        do {
            let decoded = try JSONValueDecoder(value: value, parentPath: [], key: nil, options: options).unwrap(type)
            if names?.refused == true { throw Unsupported() }
            return decoded
        } catch {
            // Refused even if the type's own decoding caught the error and went on: its outcome may differ.
            if names?.refused == true { throw Unsupported() }
            throw error
        }
    }

    // MARK: - Decoder

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        guard case .object(let members) = value else {
            throw mismatch([String: Any].self, value, at: codingPath)
        }
        var names = members
        if let converter = options.names {
            guard let converted = converter.converted(members, at: codingPath) else { throw Unsupported() }
            names = converted
        }
        return KeyedDecodingContainer(
            KeyedContainer<Key>(members: names, parentPath: parentPath, key: key, options: options))
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        guard case .array(let elements) = value else { throw mismatch([Any].self, value, at: codingPath) }
        return UnkeyedContainer(elements: elements, codingPath: codingPath, options: options)
    }

    func singleValueContainer() throws -> any SingleValueDecodingContainer {
        self
    }

    // MARK: - Values

    /// `value` as `type`: the types `JSONDecoder` treats apart first, then the type's own decoding.
    func unwrap<T: Decodable>(_ type: T.Type) throws -> T {
        if T.self == JSON.self { return value as! T }
        if T.self == Date.self { return try date() as! T }
        if !options.keepsNames, let dictionary = T.self as? any NamesKept.Type {
            return try dictionary.init(keepingNames: self) as! T
        }
        if T.self == Data.self { return try data() as! T }
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

    /// A date by the strategy in `options` (by default `Date`'s own decoding, seconds since 2001), as `JSONDecoder`
    /// reads it.
    func date() throws -> Date {
        // A missing date is named as one, not as the number or text it would have been read from.
        if value == .null { throw mismatch(Date.self, value, at: codingPath) }
        switch options.dates {
        case .deferredToDate:
            return try Date(from: self)
        case .secondsSince1970:
            return Date(timeIntervalSince1970: try floatingPoint(Double.self))
        case .millisecondsSince1970:
            return Date(timeIntervalSince1970: try floatingPoint(Double.self) / 1000.0)
        case .iso8601:
            let text = try string()
            guard let date = try? Date.ISO8601FormatStyle().parse(text) else {
                // At the path of the value's container, as `JSONDecoder` names it (without the value's own key).
                throw Self.corrupted("Expected date string to be ISO8601-formatted.", at: parentPath)
            }
            return date
        case .custom(let read):
            // At the value, with its whole path: what the closure reads, and what it throws, are its own.
            return try read(self)
        }
    }

    /// `Data` by the strategy in `options`, as `JSONDecoder` reads it.
    func data() throws -> Data {
        // A missing value is named as `Data`, not as the text or array it would have been read from.
        if value == .null { throw mismatch(Data.self, value, at: codingPath) }
        switch options.data {
        case .base64:
            guard let data = Data(base64Encoded: try string()) else {
                throw corrupted("Encountered Data is not valid Base64.")
            }
            return data
        case .deferredToData:
            return try Data(from: self)
        case .custom(let read):
            return try read(self)
        }
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

    @inline(__always)
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
    func decode<T: Decodable>(_ type: T.Type) throws -> T {
        // Read as the value itself, not as a member of its container: `JSONDecoder` names a date that is not ISO 8601
        // at the path of the decoder it reads from, which here is the whole path.
        guard key != nil else { return try unwrap(type) }
        return try JSONValueDecoder(value: value, parentPath: codingPath, key: nil, options: options).unwrap(type)
    }
}

/// An object's members, by key.
private struct KeyedContainer<Key: CodingKey>: KeyedDecodingContainerProtocol {
    let members: JSON.Object
    /// The path of the object's decoder, in two parts as the decoder holds it: made whole only when a member needs a
    /// decoder of its own or an error names it, not for every object (most have members that are read in place).
    let parentPath: [any CodingKey]
    let key: (any CodingKey)?
    let options: JSONValueDecoder.Options

    var codingPath: [any CodingKey] {
        if let key { parentPath + [key] } else { parentPath }
    }

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
        JSONValueDecoder(value: try value(key), parentPath: codingPath, key: key, options: options)
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

    @inline(__always)
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
            value: members[IndexKey.super.stringValue] ?? .null, parentPath: codingPath, key: IndexKey.super,
            options: options)
    }

    func superDecoder(forKey key: Key) throws -> any Decoder {
        JSONValueDecoder(value: members[key.stringValue] ?? .null, parentPath: codingPath, key: key, options: options)
    }
}

/// An array's elements, in order.
private struct UnkeyedContainer: UnkeyedDecodingContainer {
    let elements: [JSON]
    let codingPath: [any CodingKey]
    let options: JSONValueDecoder.Options
    private(set) var currentIndex = 0

    init(elements: [JSON], codingPath: [any CodingKey], options: JSONValueDecoder.Options) {
        self.elements = elements
        self.codingPath = codingPath
        self.options = options
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
        return JSONValueDecoder(
            value: try next(type), parentPath: codingPath, key: IndexKey(index: index), options: options)
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

/// A `[String: T]` dictionary, which `JSONDecoder` decodes with its names as they are whatever its key strategy: the
/// member names are not converted, and each value's path ends with its name.
private protocol NamesKept {
    init(keepingNames decoder: JSONValueDecoder) throws
}

extension Dictionary: NamesKept where Key == String, Value: Decodable {
    init(keepingNames decoder: JSONValueDecoder) throws {
        guard case .object(let members) = decoder.value else {
            throw mismatch([String: Any].self, decoder.value, at: decoder.codingPath)
        }
        let path = decoder.codingPath
        self.init(minimumCapacity: members.count)
        for (name, member) in members {
            self[name] = try JSONValueDecoder(
                value: member, parentPath: path, key: NameKey(stringValue: name), options: decoder.options
            ).unwrap(Value.self)
        }
    }
}

/// A member's name as a key.
private struct NameKey: CodingKey {
    let stringValue: String
    var intValue: Int? { nil }

    init(stringValue: String) {
        self.stringValue = stringValue
    }

    init?(intValue: Int) { nil }
}

/// A key strategy's conversion of an object's names, for one decoding.
protocol NameConversion: AnyObject {
    /// Whether a name or an object was refused during this decoding: its outcome is then `Unsupported`, even when the
    /// type's own decoding caught the error.
    var refused: Bool { get }

    /// The members of the object at `path` under their converted names, or `nil` (and `refused` set) when they
    /// cannot be converted as `JSONDecoder` converts them.
    func converted(_ members: JSON.Object, at path: @autoclosure () -> [any CodingKey]) -> JSON.Object?
}

/// `JSONDecoder`'s `.custom` key strategy: every name of every object is given to the closure, with its container's
/// path and then itself as a key (`JSONDecoder`'s path, which its closures may read), and the object's members are
/// looked up by the names it returns. Two names of one object that become one are refused (`JSONDecoder` keeps the
/// first in the text; that case is left to it).
final class CustomNames: NameConversion {
    private let convert: @Sendable ([any CodingKey]) -> any CodingKey
    private(set) var refused = false

    init(_ convert: @escaping @Sendable ([any CodingKey]) -> any CodingKey) {
        self.convert = convert
    }

    func converted(_ members: JSON.Object, at path: @autoclosure () -> [any CodingKey]) -> JSON.Object? {
        var result = JSON.Object()
        var keyPath = path()
        keyPath.append(NameKey(stringValue: ""))
        for (name, value) in members {
            keyPath[keyPath.count - 1] = NameKey(stringValue: name)
            if result.updateValue(value, forKey: convert(keyPath).stringValue) != nil {
                refused = true
                return nil
            }
        }
        return result
    }
}

/// `JSONDecoder`'s `.convertFromSnakeCase` for the names it can convert exactly as `JSONDecoder` does, for one
/// decoding: it remembers the names it converted (the objects of an array repeat theirs), and whether it refused one.
///
/// `JSONDecoder` keeps any underscores at either end and, when underscores are left between words, lowercases the
/// first word and capitalizes the others (`Foundation`'s `capitalized`: a letter after a letter in lower case, any
/// other letter in upper case), then joins them. That is done here for names of ASCII letters, digits and
/// underscores; a name that needs no change (no underscore between two other characters) is kept whatever it holds.
/// Any other name, or two names of one object that become the same (`JSONDecoder` keeps the first in the text; that
/// case is left to it), is refused: the decoding then ends as `Unsupported`, even when the type's
/// own decoding caught the error.
final class SnakeCase: NameConversion {
    /// Converted names, by the name in the text (only names that change).
    private var names: [String: String] = [:]
    /// Whether a name or an object was refused during this decoding.
    private(set) var refused = false

    /// What becomes of a name.
    enum Conversion: Equatable {
        case same
        case changed(String)
        case refused
    }

    /// What `JSONDecoder` makes of `name`, when it is converted here.
    static func conversion(_ name: String) -> Conversion {
        return name.withUTF8Bytes { bytes -> Conversion in
            let underscore = UInt8(ascii: "_")
            guard let first = bytes.firstIndex(where: { $0 != underscore }) else { return .same }
            let last = bytes.lastIndex(where: { $0 != underscore })!
            guard bytes[first...last].contains(underscore) else { return .same }
            var result: [UInt8] = []
            result.reserveCapacity(bytes.count)
            result.append(contentsOf: bytes[..<first])
            var word = 0
            var afterLetter = false
            var inWord = false
            for byte in bytes[first...last] {
                let isUpper = byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z")
                let isLower = byte >= UInt8(ascii: "a") && byte <= UInt8(ascii: "z")
                let isDigit = byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")
                if byte == underscore {
                    if inWord { word += 1 }
                    inWord = false
                    afterLetter = false
                    continue
                }
                guard isUpper || isLower || isDigit else { return .refused }
                inWord = true
                if isDigit {
                    result.append(byte)
                    afterLetter = false
                } else if word == 0 || afterLetter {
                    // The first word in lower case; in the others, a letter after a letter.
                    result.append(byte | 0x20)
                    afterLetter = true
                } else {
                    result.append(byte & ~0x20)
                    afterLetter = true
                }
            }
            result.append(contentsOf: bytes[(last + 1)...])
            return .changed(String(decoding: result, as: UTF8.self))
        }
    }

    /// The name `name` becomes, or `nil` (and `refused` set) when it is not converted here.
    private func converted(_ name: String) -> String? {
        if let known = names[name] { return known }
        switch Self.conversion(name) {
        case .same:
            return name
        case .changed(let converted):
            names[name] = converted
            return converted
        case .refused:
            refused = true
            return nil
        }
    }

    /// An object's members under their converted names, or `nil` (and `refused` set) when a name is refused or two
    /// become one.
    func converted(_ members: JSON.Object, at path: @autoclosure () -> [any CodingKey]) -> JSON.Object? {
        var result: JSON.Object?
        for (name, value) in members {
            guard let converted = converted(name) else { return nil }
            if result == nil {
                guard converted != name else { continue }
                // The first name that changes: the names before it stay as they are.
                result = JSON.Object()
                for (earlier, earlierValue) in members {
                    if earlier == name { break }
                    result![earlier] = earlierValue
                }
            }
            if result!.updateValue(value, forKey: converted) != nil {
                // Two names that become one: which `JSONDecoder` keeps depends on their order in the text.
                refused = true
                return nil
            }
        }
        return result ?? members
    }
}
