import Foundation

/// A parameter value checked to be JSON-compatible, keeping integers exact (no trip through `Double`).
///
/// Not `indirect`: the nested cases hold arrays, which are already references, and an indirect enum boxes every
/// value on the heap, a string or a number too.
enum ParameterValue: Sendable, Equatable {
    case string(String)
    case int(Int64)
    case uint(UInt64)
    case double(Double)
    /// A number from a `JSON` value, as it was written (beyond 64-bit integers, or with a fraction or exponent).
    case literal(String)
    case bool(Bool)
    case null
    case array([ParameterValue])
    case object([Member])

    /// A member of an object. A named type, not a tuple: an array of tuples is copied and destroyed by the runtime's
    /// generic code, member by member.
    struct Member: Sendable, Equatable {
        var key: String
        var value: ParameterValue

        init(_ key: String, _ value: ParameterValue) {
            (self.key, self.value) = (key, value)
        }
    }

    static func == (lhs: ParameterValue, rhs: ParameterValue) -> Bool {
        switch (lhs, rhs) {
        case let (.string(a), .string(b)): a == b
        case let (.int(a), .int(b)): a == b
        case let (.uint(a), .uint(b)): a == b
        case let (.double(a), .double(b)): a == b
        case let (.literal(a), .literal(b)): a == b
        case let (.bool(a), .bool(b)): a == b
        case (.null, .null): true
        case let (.array(a), .array(b)): a == b
        case let (.object(a), .object(b)): a == b
        default: false
        }
    }

    /// Checks a parameter dictionary, sorting keys so that every encoding is deterministic.
    ///
    /// - Throws: `.encoding`, naming the key path of the first value that is not JSON-compatible.
    static func object(from parameters: [String: any Sendable]) throws(HTTPError) -> [Member] {
        var members: [Member] = []
        members.reserveCapacity(parameters.count)
        for (key, value) in parameters {
            members.append(Member(key, try ParameterValue(value, path: key)))
        }
        // Sorted in place (one array, not a sorted copy of the keys besides): keys are unique, so the order is total.
        if members.count > 1 { members.sort { $0.key < $1.key } }
        return members
    }

    init(_ value: Any, path: String) throws(HTTPError) {
        if let scalar = ParameterValue.scalar(value) {
            self = scalar
            return
        }
        // An NSNumber (JSONSerialization's numbers, Objective-C style code) is read by what it holds: on Linux, one
        // holding 1 or 0 casts to `Bool` as readily as to `Int`, and the number 1 was sent as `true`.
        if type(of: value) is NSNumber.Type, let number = value as? NSNumber {
            self = ParameterValue(number: number)
            return
        }
        switch value {
        case let value as String: self = .string(value)
        case let value as Substring: self = .string(String(value))
        case let value as Bool: self = .bool(value)
        case let value as Int: self = .int(Int64(value))
        case let value as Int8: self = .int(Int64(value))
        case let value as Int16: self = .int(Int64(value))
        case let value as Int32: self = .int(Int64(value))
        case let value as Int64: self = .int(value)
        case let value as UInt: self = .uint(UInt64(value))
        case let value as UInt8: self = .uint(UInt64(value))
        case let value as UInt16: self = .uint(UInt64(value))
        case let value as UInt32: self = .uint(UInt64(value))
        case let value as UInt64: self = .uint(value)
        case let value as Double: self = .double(value)
        // A `Float` as its own shortest text (`0.1`): widened to `Double` first, 0.1 was sent as 0.10000000149011612.
        case let value as Float:
            self = value.isFinite ? .literal(ParameterValue.numberText(value)) : .double(Double(value))
        case let value as CGFloat: self = .double(Double(value))
        // Objective-C's null (JSONSerialization's), as JSON's.
        case is NSNull: self = .null
        case let value as Decimal: self = ParameterValue(decimal: value)
        case let value as JSON: self = ParameterValue(value)
        case let value as [String: any Sendable]:
            var members: [Member] = []
            for key in value.keys.sorted() {
                members.append(Member(key, try ParameterValue(value[key]!, path: "\(path).\(key)")))
            }
            self = .object(members)
        case let value as [any Sendable]:
            var elements: [ParameterValue] = []
            for (index, element) in value.enumerated() {
                elements.append(try ParameterValue(element, path: "\(path)[\(index)]"))
            }
            self = .array(elements)
        default:
            throw HTTPError(.encoding, ParameterValue.unsupported(value, path: path))
        }
    }

    /// A Foundation number as what it holds (`NSNumber.held`): a Boolean, an integer (signed or not), a double, or a
    /// decimal with every digit.
    private init(number: NSNumber) {
        switch number.held {
        case .boolean(let value): self = .bool(value)
        case .decimal(let value): self = ParameterValue(decimal: value)
        case .floatingPoint(let value): self = .double(value)
        case .unsigned(let value): self = .uint(value)
        case .signed(let value): self = .int(value)
        }
    }

    /// A decimal with every digit, as written (`Decimal.description` is the same in every locale): through `Double`,
    /// 19.99 was sent as 19.990000000000002. Not a number fails JSON as a `Double` NaN does.
    private init(decimal: Decimal) {
        self = decimal.isNaN ? .double(.nan) : .literal(decimal.description)
    }

    /// The usual parameter types, told apart by their type alone: opening the value costs one comparison a type,
    /// where each failed `as?` in the list below is a run-time cast. `nil` for every other type.
    private static func scalar<Value>(_ value: Value) -> ParameterValue? {
        if Value.self == String.self { return .string(unsafeBitCast(value, to: String.self)) }
        if Value.self == Int.self { return .int(Int64(unsafeBitCast(value, to: Int.self))) }
        if Value.self == Bool.self { return .bool(unsafeBitCast(value, to: Bool.self)) }
        if Value.self == Double.self { return .double(unsafeBitCast(value, to: Double.self)) }
        if Value.self == Int64.self { return .int(unsafeBitCast(value, to: Int64.self)) }
        return nil
    }

    init(_ json: JSON) {
        switch json {
        case .null: self = .null
        case .bool(let value): self = .bool(value)
        case .number(let value):
            switch value.storage {
            case .int(let exact): self = .int(exact)
            case .uint(let exact): self = .uint(exact)
            case .text(let text): self = .literal(text)
            }
        case .string(let value): self = .string(value)
        case .array(let value): self = .array(value.map(ParameterValue.init))
        case .object(let value): self = .object(value.keys.sorted().map { Member($0, ParameterValue(value[$0]!)) })
        }
    }

    private static func unsupported(_ value: Any, path: String) -> String {
        let type = type(of: value)
        if value is Date {
            return "parameter \"\(path)\" is a Date, which has no JSON form: send it as a string (ISO 8601) or a number"
        }
        if let optional = value as? OptionalProtocol, optional.isNone {
            return "parameter \"\(path)\" is nil: leave the key out instead"
        }
        return "parameter \"\(path)\" is of type \(type), which is not a string, number, Boolean, array or dictionary"
    }
}

/// Lets the encoder recognise `Optional.none` hidden in an `Any`.
private protocol OptionalProtocol {
    var isNone: Bool { get }
}

extension Optional: OptionalProtocol {
    var isNone: Bool { self == nil }
}

// MARK: - Text forms

extension ParameterValue {
    /// The value as form or query text: integers without a fraction, Booleans as `true` / `false`.
    func formText(_ style: FormStyle) -> String {
        switch self {
        case .string(let value): value
        case .int(let value): String(value)
        case .uint(let value): String(value)
        case .double(let value): ParameterValue.numberText(value)
        case .literal(let text): text
        case .bool(let value): style.booleans == .numbers ? (value ? "1" : "0") : (value ? "true" : "false")
        case .null: ""
        case .array, .object: ""
        }
    }

    static func numberText<Value: BinaryFloatingPoint & LosslessStringConvertible>(_ value: Value) -> String {
        // An integral value without a fraction, but -0.0 keeps its sign (`Int64(exactly:)` makes it 0).
        if let exact = Int64(exactly: value), exact != 0 || value.sign == .plus { return String(exact) }
        return "\(value)"
    }

    /// Whether two decimal number texts (JSON's form, or a `Double`'s `description`) denote the same number, digit
    /// for digit: `19.99` and `1.999e1` do, `12345678901234567890.12` and `1.2345678901234567e+19` do not.
    static func sameNumber(_ first: String, _ second: String) -> Bool {
        let (a, b) = (decimalParts(first), decimalParts(second))
        // Zero is zero, whatever its sign.
        if a.digits.isEmpty || b.digits.isEmpty { return a.digits.isEmpty && b.digits.isEmpty }
        return a == b
    }

    /// A number's sign, its significant digits (no leading or trailing zeros), and the power of ten of the first.
    private static func decimalParts(_ text: String) -> DecimalParts {
        let bytes = Array(text.utf8)
        var index = 0
        var negative = false
        if index < bytes.count, bytes[index] == UInt8(ascii: "-") || bytes[index] == UInt8(ascii: "+") {
            negative = bytes[index] == UInt8(ascii: "-")
            index += 1
        }
        var digits: [UInt8] = []
        // The power of ten of the first digit kept, counted from the digits before the point.
        var integerDigits = 0
        var seenPoint = false
        var leadingZeros = 0
        while index < bytes.count, bytes[index] != UInt8(ascii: "e"), bytes[index] != UInt8(ascii: "E") {
            let byte = bytes[index]
            index += 1
            if byte == UInt8(ascii: ".") {
                seenPoint = true
                continue
            }
            if !seenPoint { integerDigits += 1 }
            if digits.isEmpty && byte == UInt8(ascii: "0") {
                leadingZeros += 1
                continue
            }
            digits.append(byte)
        }
        var exponent = 0
        if index < bytes.count {
            exponent = Int(String(decoding: bytes[(index + 1)...], as: UTF8.self)) ?? 0
        }
        while digits.last == UInt8(ascii: "0") { digits.removeLast() }
        return DecimalParts(negative: negative, digits: digits, power: integerDigits - leadingZeros - 1 + exponent)
    }

    private struct DecimalParts: Equatable {
        var negative: Bool
        var digits: [UInt8]
        var power: Int
    }

    /// Appends the value as JSON text; non-finite numbers fail, naming the path.
    func writeJSON(to out: inout String, path: String) throws(HTTPError) {
        switch self {
        case .string(let value): ParameterValue.writeJSONString(value, to: &out)
        case .int(let value): out += String(value)
        case .uint(let value): out += String(value)
        case .double(let value):
            guard value.isFinite else {
                throw HTTPError(.encoding, "parameter \"\(path)\" is \(value), which JSON cannot represent")
            }
            out += ParameterValue.numberText(value)
        case .literal(let text): out += text
        case .bool(let value): out += value ? "true" : "false"
        case .null: out += "null"
        case .array(let elements):
            out += "["
            for (index, element) in elements.enumerated() {
                if index > 0 { out += "," }
                try element.writeJSON(to: &out, path: "\(path)[\(index)]")
            }
            out += "]"
        case .object(let members):
            out += "{"
            for (index, member) in members.enumerated() {
                if index > 0 { out += "," }
                ParameterValue.writeJSONString(member.key, to: &out)
                out += ":"
                try member.value.writeJSON(to: &out, path: path.isEmpty ? member.key : "\(path).\(member.key)")
            }
            out += "}"
        }
    }

    static func writeJSONString(_ string: String, to out: inout String) {
        out += "\""
        for scalar in string.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case _ where scalar.value < 0x20:
                out +=
                    "\\u" + String(repeating: "0", count: 4 - String(scalar.value, radix: 16).count)
                    + String(scalar.value, radix: 16)
            default: out.unicodeScalars.append(scalar)
            }
        }
        out += "\""
    }

    /// The members as an XML property list (Apple's format: a `dict` at the top, tab-indented), written here
    /// rather than by `PropertyListSerialization`, which changed values on the way: a double went with 17 digits
    /// (`19.99` as `19.989999999999998`, which a server reading decimals keeps as such), `-0.0` as `0.0`, a carriage
    /// return as it is (an XML parser reads it as a line feed), and a control character as it is (which no XML
    /// parser reads at all).
    ///
    /// - Throws: `.encoding`, naming the parameter: `null` (a property list has no such value), a number a double
    ///   cannot hold exactly, a character XML cannot hold (a control character other than tab, line feed and
    ///   carriage return; U+FFFE; U+FFFF).
    static func propertyList(_ members: [Member]) throws(HTTPError) -> Data {
        var out = """
            <?xml version="1.0" encoding="UTF-8"?>
            <!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
            <plist version="1.0">

            """
        try ParameterValue.object(members).writePropertyList(to: &out, path: "", depth: 0)
        out += "</plist>\n"
        return Data(out.utf8)
    }

    /// Writes the value as a property-list element at `depth` tabs, and a line break.
    private func writePropertyList(to out: inout String, path: String, depth: Int) throws(HTTPError) {
        out += String(repeating: "\t", count: depth)
        switch self {
        case .string(let value):
            out += "<string>"
            try ParameterValue.writeXMLText(value, to: &out, path: path)
            out += "</string>\n"
        case .int(let value): out += "<integer>\(value)</integer>\n"
        case .uint(let value): out += "<integer>\(value)</integer>\n"
        case .double(let value):
            // Apple's spellings of the values that are not finite.
            let text =
                if value.isNaN {
                    "nan"
                } else if value.isInfinite {
                    value < 0 ? "-infinity" : "+infinity"
                } else {
                    ParameterValue.numberText(value)
                }
            out += "<real>\(text)</real>\n"
        case .literal(let text):
            // A property list's numbers are 64-bit integers and doubles: a number with more digits than a double
            // holds (a `Decimal` such as 12345678901234567890.12, an integer beyond 64 bits from a `JSON` value) was
            // sent rounded, as 1.2345678901234567e+19, without a word. One a double holds goes with its own digits.
            guard let value = Double(text), value.isFinite, ParameterValue.sameNumber(text, "\(value)") else {
                throw HTTPError(
                    .encoding,
                    "parameter \"\(path)\" is \(text), which a property list cannot hold exactly (its numbers are "
                        + "64-bit integers and doubles); send it as a string, or with the JSON serializer")
            }
            out += "<real>\(text)</real>\n"
        case .bool(let value): out += value ? "<true/>\n" : "<false/>\n"
        case .null: throw HTTPError(.encoding, "parameter \"\(path)\" is null, which a property list cannot hold")
        case .array(let elements):
            guard !elements.isEmpty else {
                out += "<array/>\n"
                return
            }
            out += "<array>\n"
            for (index, element) in elements.enumerated() {
                try element.writePropertyList(to: &out, path: "\(path)[\(index)]", depth: depth + 1)
            }
            out += String(repeating: "\t", count: depth) + "</array>\n"
        case .object(let members):
            guard !members.isEmpty else {
                out += "<dict/>\n"
                return
            }
            out += "<dict>\n"
            for member in members {
                let memberPath = path.isEmpty ? member.key : "\(path).\(member.key)"
                out += String(repeating: "\t", count: depth + 1) + "<key>"
                try ParameterValue.writeXMLText(member.key, to: &out, path: memberPath)
                out += "</key>\n"
                try member.value.writePropertyList(to: &out, path: memberPath, depth: depth + 1)
            }
            out += String(repeating: "\t", count: depth) + "</dict>\n"
        }
    }

    /// Writes text as XML character data: `&`, `<` and `>` as entities, a carriage return as a character reference
    /// (kept, where an XML parser reads a literal one as a line feed).
    ///
    /// - Throws: `.encoding` for a character XML 1.0 cannot hold, even as a reference.
    private static func writeXMLText(_ text: String, to out: inout String, path: String) throws(HTTPError) {
        for scalar in text.unicodeScalars {
            switch scalar {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\r": out += "&#13;"
            case "\t", "\n": out.unicodeScalars.append(scalar)
            case _ where scalar.value < 0x20 || scalar.value == 0xFFFE || scalar.value == 0xFFFF:
                let code = String(scalar.value, radix: 16, uppercase: true)
                throw HTTPError(
                    .encoding,
                    "parameter \"\(path)\" holds U+\(String(repeating: "0", count: max(0, 4 - code.count)) + code), "
                        + "which an XML property list cannot hold; send it with the JSON serializer")
            default: out.unicodeScalars.append(scalar)
            }
        }
    }
}
