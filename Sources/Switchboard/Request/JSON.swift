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
    /// A number. Integers up to 2^53 round-trip exactly.
    case number(Double)
    /// A string.
    case string(String)
    /// An array.
    case array([JSON])
    /// An object.
    case object([String: JSON])

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
    public var double: Double? {
        if case .number(let value) = self { value } else { nil }
    }

    /// The number as an `Int`, if this is a number with no fractional part that fits.
    public var int: Int? {
        guard case .number(let value) = self, value.rounded() == value, let exact = Int(exactly: value) else {
            return nil
        }
        return exact
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
    public var object: [String: JSON]? {
        if case .object(let value) = self { value } else { nil }
    }

    /// Whether this is `null`.
    public var isNull: Bool { self == .null }

    // MARK: - Parsing and printing

    /// Parses JSON text (any top-level value, including fragments such as `42`).
    ///
    /// - Throws: `HTTPError` with code `.decoding` when the data is not JSON.
    public init(data: Data) throws(HTTPError) {
        if !JSON.isUTF8(data) {
            // UTF-16 or UTF-32 text (RFC 8259 asks for UTF-8; older servers differ): Foundation reads those.
            do {
                let object = try JSONSerialization.jsonObject(with: data, options: [.fragmentsAllowed])
                self = try JSON(foundation: object)
            } catch let error as HTTPError {
                throw error
            } catch {
                throw HTTPError(.decoding, "the body is not valid JSON", underlying: error)
            }
            return
        }
        do {
            self = try JSONParser.parse(data)
        } catch {
            throw HTTPError(.decoding, "the body is not valid JSON: \(error)", underlying: error)
        }
    }

    /// Whether JSON text is UTF-8 rather than UTF-16 or UTF-32: no byte order mark of those, and no zero byte among
    /// the first two (JSON text starts with an ASCII character).
    private static func isUTF8(_ data: Data) -> Bool {
        guard data.count >= 2 else { return true }
        let first = data[data.startIndex], second = data[data.startIndex + 1]
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
            var members: [String: JSON] = [:]
            members.reserveCapacity(dictionary.count)
            for (key, value) in dictionary { members[key] = try JSON(foundation: value) }
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
        #if canImport(Darwin)
        let isBoolean = CFGetTypeID(number) == CFBooleanGetTypeID()
        #else
        // swift-corelibs-foundation reports Booleans (and only those, from JSON and property lists) as `char`.
        let isBoolean = String(cString: number.objCType) == "c"
        #endif
        self = isBoolean ? .bool(number.boolValue) : .number(number.doubleValue)
    }

    /// The value as compact JSON text with sorted keys.
    public var description: String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        guard let data = try? encoder.encode(self) else { return "null" }
        return String(decoding: data, as: UTF8.self)
    }

    // MARK: - Codable

    /// Decodes any JSON value.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let value = try? container.decode(Bool.self) {
            self = .bool(value)
        } else if let value = try? container.decode(Double.self) {
            self = .number(value)
        } else if let value = try? container.decode(String.self) {
            self = .string(value)
        } else if let value = try? container.decode([JSON].self) {
            self = .array(value)
        } else {
            self = .object(try container.decode([String: JSON].self))
        }
    }

    /// Encodes the value.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .null: try container.encodeNil()
        case .bool(let value): try container.encode(value)
        case .number(let value):
            if let exact = Int64(exactly: value) { try container.encode(exact) } else { try container.encode(value) }
        case .string(let value): try container.encode(value)
        case .array(let value): try container.encode(value)
        case .object(let value): try container.encode(value)
        }
    }
}

// MARK: - Literals

extension JSON: ExpressibleByNilLiteral, ExpressibleByBooleanLiteral, ExpressibleByIntegerLiteral,
    ExpressibleByFloatLiteral, ExpressibleByStringLiteral, ExpressibleByArrayLiteral, ExpressibleByDictionaryLiteral {
    /// `null`.
    public init(nilLiteral: ()) { self = .null }
    /// A Boolean.
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    /// An integer.
    public init(integerLiteral value: Int) { self = .number(Double(value)) }
    /// A floating-point number.
    public init(floatLiteral value: Double) { self = .number(value) }
    /// A string.
    public init(stringLiteral value: String) { self = .string(value) }
    /// An array.
    public init(arrayLiteral elements: JSON...) { self = .array(elements) }
    /// An object; a later duplicate key wins.
    public init(dictionaryLiteral elements: (String, JSON)...) {
        self = .object(Dictionary(elements, uniquingKeysWith: { _, last in last }))
    }
}
