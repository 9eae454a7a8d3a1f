import Foundation

/// A JSON value: what the `.json` response serializer produces, instead of `Any`.
///
/// `JSON` is `Sendable`, `Hashable` and `Codable`, and reads naturally through subscripts:
///
/// ```swift
/// let name = response.json?["user"]?["name"]?.string
/// let first = response.json?["items"]?[0]
/// ```
public enum JSON: Sendable, Hashable, Codable, CustomStringConvertible {
    /// `null`.
    case null
    /// `true` or `false`.
    case bool(Bool)
    /// A number, kept exactly: see `JSON.Number`.
    case number(Number)
    /// A string.
    case string(String)
    /// An array.
    case array([JSON])
    /// An object: its members in the order they were read or added (see `JSON.Object`).
    case object(Object)

    // MARK: - Reading

    /// The member named `key` of an object, or `nil`.
    public subscript(key: String) -> JSON? {
        if case .object(let members) = self { members[key] } else { nil }
    }

    /// The element at `index` of an array, or `nil` when out of range or not an array.
    public subscript(index: Int) -> JSON? {
        if case .array(let elements) = self, elements.indices.contains(index) { elements[index] } else { nil }
    }

    /// The string, if this is a string.
    public var string: String? {
        if case .string(let value) = self { value } else { nil }
    }

    /// The number, if this is a number.
    public var number: Number? {
        if case .number(let value) = self { value } else { nil }
    }

    /// The number as the nearest `Double`, if this is a number.
    public var double: Double? {
        number?.double
    }

    /// The number as an `Int`, if this is an integer that fits (exactly: `9007199254740993` stays itself).
    public var int: Int? {
        number?.int64.flatMap { Int(exactly: $0) }
    }

    /// The number as an `Int64`, if this is an integer in that range.
    public var int64: Int64? {
        number?.int64
    }

    /// The number as a `UInt64`, if this is an integer in that range.
    public var uint64: UInt64? {
        number?.uint64
    }

    /// The number as a `Decimal`, if this is a number `Decimal` can hold.
    public var decimal: Decimal? {
        number?.decimal
    }

    /// The Boolean, if this is `true` or `false`.
    public var bool: Bool? {
        if case .bool(let value) = self { value } else { nil }
    }

    /// The elements, if this is an array.
    public var array: [JSON]? {
        if case .array(let value) = self { value } else { nil }
    }

    /// The members, if this is an object.
    public var object: Object? {
        if case .object(let value) = self { value } else { nil }
    }

    /// Whether this is `null`.
    public var isNull: Bool { self == .null }

    // MARK: - Parsing and printing

    /// Parses JSON text (any top-level value, including fragments such as `42`).
    ///
    /// - Throws: `HTTPError` with code `.decoding` when the data is not JSON.
    public init(data: Data) throws(HTTPError) {
        self = try JSON.parsed(data).value
    }

    /// Parses JSON text as `init(data:)` does, and says whether the value holds everything `JSONDecoder` would read
    /// in the text (see `parsed(_:of:)`).
    static func parsed(_ data: Data) throws(HTTPError) -> (value: JSON, decodable: Bool) {
        let result = data.withUnsafeBytes { bytes in
            Result { () throws(HTTPError) in try JSON.parsed(bytes, of: data) }
        }
        return try result.get()
    }

    /// Parses JSON text read in place from `bytes`, which are `data`'s (for a caller that reads them already: each
    /// access to a `Data`'s bytes is checked for exclusive access at run time), and says whether the value holds
    /// everything `JSONDecoder` would read in the text (`decodable`), so that `JSONValueDecoder` may decode it
    /// instead: not when an object named a member twice (the value keeps the last, `JSONDecoder` reads the first),
    /// nor for text that is not UTF-8 (Foundation parsed it, and it may have dropped repeated names unseen).
    static func parsed(
        _ bytes: UnsafeRawBufferPointer, of data: Data
    ) throws(HTTPError) -> (value: JSON, decodable: Bool) {
        if !JSON.isUTF8(bytes) {
            // UTF-16 or UTF-32 text (RFC 8259 asks for UTF-8; older servers differ): Foundation reads those.
            do {
                let object = try JSONSerialization.jsonObject(with: data, options: [.fragmentsAllowed])
                return (try JSON(foundation: object), false)
            } catch let error as HTTPError {
                throw error
            } catch {
                throw HTTPError(.decoding, "the body is not valid JSON", underlying: error)
            }
        }
        do {
            let (value, repeatsAName) = try JSONParser.parse(bytes)
            return (value, !repeatsAName)
        } catch {
            throw HTTPError(.decoding, "the body is not valid JSON: \(error)", underlying: error)
        }
    }

    /// Whether JSON text is UTF-8 rather than UTF-16 or UTF-32: no byte order mark of those, and no zero byte among
    /// the first two (JSON text starts with an ASCII character).
    private static func isUTF8(_ bytes: UnsafeRawBufferPointer) -> Bool {
        guard bytes.count >= 2 else { return true }
        let first = bytes[0]
        let second = bytes[1]
        if (first == 0xFE && second == 0xFF) || (first == 0xFF && second == 0xFE) { return false }
        return first != 0 && second != 0
    }

    /// Converts a Foundation object graph (as `JSONSerialization` or `PropertyListSerialization` returns).
    ///
    /// Dates become ISO 8601 strings and `Data` becomes base-64 text, so property lists read as JSON too.
    init(foundation object: Any) throws(HTTPError) {
        switch object {
        case is NSNull:
            self = .null
        case let string as String:
            self = .string(string)
        case let number as NSNumber:
            self = JSON(number: number)
        case let array as [Any]:
            var elements: [JSON] = []
            elements.reserveCapacity(array.count)
            for element in array { elements.append(try JSON(foundation: element)) }
            self = .array(elements)
        case let dictionary as [String: Any]:
            // In name order: a Foundation dictionary does not keep the order of its text.
            var members = Object()
            for key in dictionary.keys.sorted() {
                members.updateValue(try JSON(foundation: dictionary[key]!), forKey: key)
            }
            self = .object(members)
        case let date as Date:
            self = .string(date.formatted(.iso8601))
        case let data as Data:
            self = .string(data.base64EncodedString())
        default:
            throw HTTPError(.decoding, "unsupported value of type \(type(of: object))")
        }
    }

    private init(number: NSNumber) {
        switch number.held {
        case .boolean(let value): self = .bool(value)
        case .decimal(let value): self = .number(Number(validText: value.description))
        case .floatingPoint(let value): self = .number(Number(value))
        case .unsigned(let value): self = .number(Number(value))
        case .signed(let value): self = .number(Number(value))
        }
    }

    /// The value as compact JSON text with sorted keys; numbers are written exactly (see `JSON.Number`).
    public var description: String {
        var text = ""
        write(to: &text)
        return text
    }

    private func write(to out: inout String) {
        switch self {
        case .null: out += "null"
        case .bool(let value): out += value ? "true" : "false"
        case .number(let value): out += value.description
        case .string(let value): ParameterValue.writeJSONString(value, to: &out)
        case .array(let elements):
            out += "["
            for (index, element) in elements.enumerated() {
                if index > 0 { out += "," }
                element.write(to: &out)
            }
            out += "]"
        case .object(let members):
            out += "{"
            for (index, key) in members.keys.sorted().enumerated() {
                if index > 0 { out += "," }
                ParameterValue.writeJSONString(key, to: &out)
                out += ":"
                members[key]!.write(to: &out)
            }
            out += "}"
        }
    }

    // MARK: - Codable

    /// Decodes any JSON value.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let value = try? container.decode(Bool.self) {
            self = .bool(value)
        } else if let value = try? container.decode(Int64.self) {
            self = .number(Number(value))
        } else if let value = try? container.decode(UInt64.self) {
            self = .number(Number(value))
        } else if let value = try? container.decode(Double.self) {
            self = .number(Number(value))
        } else if let value = try? container.decode(String.self) {
            self = .string(value)
        } else if let value = try? container.decode([JSON].self) {
            self = .array(value)
        } else {
            self = .object(try container.decode(Object.self))
        }
    }

    /// Encodes the value.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .null: try container.encodeNil()
        case .bool(let value): try container.encode(value)
        case .number(let value):
            switch value.storage {
            case .int(let exact): try container.encode(exact)
            case .uint(let exact): try container.encode(exact)
            case .text:
                // An encoder takes a number as a Swift value: a `Decimal` when it holds this one exactly, else the
                // nearest `Double`.
                if let decimal = value.decimal {
                    try container.encode(decimal)
                } else {
                    try container.encode(value.double)
                }
            }
        case .string(let value): try container.encode(value)
        case .array(let value): try container.encode(value)
        case .object(let value): try container.encode(value)
        }
    }
}

// MARK: - Literals

extension JSON: ExpressibleByNilLiteral, ExpressibleByBooleanLiteral, ExpressibleByIntegerLiteral,
    ExpressibleByFloatLiteral, ExpressibleByStringLiteral, ExpressibleByArrayLiteral, ExpressibleByDictionaryLiteral
{
    /// `null`.
    public init(nilLiteral: ()) { self = .null }
    /// A Boolean.
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    /// An integer.
    public init(integerLiteral value: Int) { self = .number(Number(value)) }
    /// A floating-point number.
    public init(floatLiteral value: Double) { self = .number(Number(value)) }
    /// A string.
    public init(stringLiteral value: String) { self = .string(value) }
    /// An array.
    public init(arrayLiteral elements: JSON...) { self = .array(elements) }
    /// An object, in the literal's order; a later duplicate key's value wins.
    public init(dictionaryLiteral elements: (String, JSON)...) {
        var members = Object()
        for (key, value) in elements { members.updateValue(value, forKey: key) }
        self = .object(members)
    }
}

extension NSNumber {
    /// What a Foundation number holds (from JSONSerialization, a property list, Objective-C style code).
    enum Held {
        /// `true` or `false`, not the integer 1 or 0 it also reads as.
        case boolean(Bool)
        /// An `NSDecimalNumber`'s value, every digit.
        case decimal(Decimal)
        case floatingPoint(Double)
        case unsigned(UInt64)
        case signed(Int64)
    }

    /// What this number holds, told by its type: the one reading both `JSON` and parameters use.
    var held: Held {
        #if canImport(Darwin)
        let isBoolean = CFGetTypeID(self) == CFBooleanGetTypeID()
        #else
        // swift-corelibs-foundation reports Booleans (and only those, from JSON and property lists) as `char`.
        let isBoolean = String(cString: objCType) == "c"
        #endif
        if isBoolean { return .boolean(boolValue) }
        if let decimal = self as? NSDecimalNumber { return .decimal(decimal.decimalValue) }
        switch String(cString: objCType) {
        case "f", "d": return .floatingPoint(doubleValue)
        case "Q", "L", "I", "S", "C": return .unsigned(uint64Value)
        default: return .signed(int64Value)
        }
    }
}
