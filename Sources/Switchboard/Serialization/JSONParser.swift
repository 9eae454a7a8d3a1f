import Foundation

/// A strict RFC 8259 parser from UTF-8 bytes straight into `JSON`, without Foundation's object graph in between.
///
/// It rejects what the RFC does (trailing commas, comments, control characters in strings, leading zeros, bare
/// words, invalid UTF-8, content after the value) and nests at most `maximumDepth` deep, so that hostile input
/// fails with an error, never a crash.
struct JSONParser {
    struct Failure: Error, CustomStringConvertible {
        let message: String
        let offset: Int
        var description: String { "\(message) at byte \(offset)" }
    }

    static let maximumDepth = 512

    private let bytes: UnsafeRawBufferPointer
    private var index = 0
    private var depth = 0
    /// The bytes of a string with escapes, as they are unescaped: one buffer for the whole parse, emptied for each
    /// such string, not an array made for each.
    private var unescaped: [UInt8] = []
    /// Whether an object named a member twice. The value keeps the last (as `JSONSerialization` does); `JSONDecoder`
    /// reads the first, so such a value cannot stand in for the text when decoding.
    private var repeatsAName = false

    /// Parses one JSON value, with optional whitespace (and a UTF-8 byte order mark) around it, and says whether an
    /// object in it named a member twice.
    static func parse(_ bytes: UnsafeRawBufferPointer) throws(Failure) -> (value: JSON, repeatsAName: Bool) {
        var parser = JSONParser(bytes: bytes)
        let value = try parser.parseDocument()
        return (value, parser.repeatsAName)
    }

    /// Whether the text is one JSON number and nothing else.
    static func isNumber(_ text: String) -> Bool {
        return text.withUTF8Bytes { buffer in
            guard let first = buffer.first,
                first == UInt8(ascii: "-") || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(first)
            else { return false }
            var parser = JSONParser(bytes: UnsafeRawBufferPointer(buffer))
            return (try? parser.parseNumber()) != nil && parser.index == buffer.count
        }
    }

    /// Where, in valid JSON text, the value at a dotted path (`data`, `result.items.0`) is: the byte offsets of its
    /// text, as `JSON`'s `subscript(path:)` finds it (numbers index arrays, a repeated key's last value wins).
    static func range(ofPath path: String, in data: Data) -> Range<Int>? {
        let components = path.split(separator: ".", omittingEmptySubsequences: true).map(String.init)
        return data.withUnsafeBytes { buffer -> Range<Int>? in
            var parser = JSONParser(bytes: buffer)
            if buffer.count >= 3, buffer[0] == 0xEF, buffer[1] == 0xBB, buffer[2] == 0xBF { parser.index = 3 }
            parser.skipWhitespace()
            return try? parser.locate(components[...])
        }
    }

    /// The range of the value at `components` below the value that starts at `index`.
    private mutating func locate(_ components: ArraySlice<String>) throws(Failure) -> Range<Int>? {
        let start = index
        guard let component = components.first else {
            _ = try parseValue()
            return start..<index
        }
        guard index < bytes.count else { return nil }
        if bytes[index] == UInt8(ascii: "["), let wanted = Int(component) {
            index += 1
            var position = 0
            skipWhitespace()
            if index < bytes.count, bytes[index] == UInt8(ascii: "]") { return nil }
            while true {
                skipWhitespace()
                if position == wanted { return try locate(components.dropFirst()) }
                _ = try parseValue()
                skipWhitespace()
                guard index < bytes.count, bytes[index] == UInt8(ascii: ",") else { return nil }
                index += 1
                position += 1
            }
        }
        guard bytes[index] == UInt8(ascii: "{") else { return nil }
        index += 1
        var found: Int?
        while true {
            skipWhitespace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else { break }
            let key = try parseString()
            skipWhitespace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: ":") else { return nil }
            index += 1
            skipWhitespace()
            if key == component { found = index }
            _ = try parseValue()
            skipWhitespace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: ",") else { break }
            index += 1
        }
        guard let found else { return nil }
        index = found
        return try locate(components.dropFirst())
    }

    private init(bytes: UnsafeRawBufferPointer) {
        self.bytes = bytes
    }

    private mutating func parseDocument() throws(Failure) -> JSON {
        if bytes.count >= 3, bytes[0] == 0xEF, bytes[1] == 0xBB, bytes[2] == 0xBF { index = 3 }
        skipWhitespace()
        let value = try parseValue()
        skipWhitespace()
        guard index == bytes.count else { throw fail("unexpected content after the JSON value") }
        return value
    }

    private func fail(_ message: String) -> Failure {
        Failure(message: message, offset: index)
    }

    private mutating func skipWhitespace() {
        while index < bytes.count {
            switch bytes[index] {
            case 0x20, 0x09, 0x0A, 0x0D: index += 1
            default: return
            }
        }
    }

    private mutating func parseValue() throws(Failure) -> JSON {
        guard index < bytes.count else { throw fail("unexpected end of the JSON text") }
        switch bytes[index] {
        case UInt8(ascii: "{"): return try parseObject()
        case UInt8(ascii: "["): return try parseArray()
        case UInt8(ascii: "\""): return .string(try parseString())
        case UInt8(ascii: "t"): try expect("true"); return .bool(true)
        case UInt8(ascii: "f"): try expect("false"); return .bool(false)
        case UInt8(ascii: "n"): try expect("null"); return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return .number(try parseNumber())
        default: throw fail("unexpected character")
        }
    }

    private mutating func expect(_ word: StaticString) throws(Failure) {
        let count = word.utf8CodeUnitCount
        guard index + count <= bytes.count else { throw fail("unexpected end of the JSON text") }
        for offset in 0..<count where bytes[index + offset] != word.utf8Start[offset] {
            throw fail("unexpected character")
        }
        index += count
    }

    private mutating func enter() throws(Failure) {
        depth += 1
        guard depth <= Self.maximumDepth else { throw fail("JSON nested more than \(Self.maximumDepth) deep") }
    }

    private mutating func parseObject() throws(Failure) -> JSON {
        try enter()
        index += 1
        var members = JSON.Object()
        skipWhitespace()
        if index < bytes.count, bytes[index] == UInt8(ascii: "}") {
            index += 1
            depth -= 1
            return .object(members)
        }
        while true {
            skipWhitespace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else { throw fail("expected a member name") }
            let key = try parseString()
            skipWhitespace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: ":") else { throw fail("expected ':'") }
            index += 1
            skipWhitespace()
            if members.updateValue(try parseValue(), forKey: key) != nil { repeatsAName = true }
            skipWhitespace()
            guard index < bytes.count else { throw fail("unexpected end of the JSON text") }
            if bytes[index] == UInt8(ascii: ",") {
                index += 1
            } else if bytes[index] == UInt8(ascii: "}") {
                index += 1
                depth -= 1
                return .object(members)
            } else {
                throw fail("expected ',' or '}'")
            }
        }
    }

    private mutating func parseArray() throws(Failure) -> JSON {
        try enter()
        index += 1
        var elements: [JSON] = []
        skipWhitespace()
        if index < bytes.count, bytes[index] == UInt8(ascii: "]") {
            index += 1
            depth -= 1
            return .array(elements)
        }
        while true {
            skipWhitespace()
            elements.append(try parseValue())
            skipWhitespace()
            guard index < bytes.count else { throw fail("unexpected end of the JSON text") }
            if bytes[index] == UInt8(ascii: ",") {
                index += 1
            } else if bytes[index] == UInt8(ascii: "]") {
                index += 1
                depth -= 1
                return .array(elements)
            } else {
                throw fail("expected ',' or ']'")
            }
        }
    }

    /// ASCII bytes as a string. ASCII is UTF-8 as it is: a string of up to 15 bytes (a member name, most often)
    /// made by copying them checks them by their high bits alone, where `String(decoding:as:)` checks every byte
    /// first; a longer one costs more made that way.
    private func ascii(_ start: Int, _ end: Int) -> String {
        let source = UnsafeRawBufferPointer(rebasing: bytes[start..<end])
        guard source.count <= 15 else { return String(decoding: source, as: UTF8.self) }
        return String(unsafeUninitializedCapacity: source.count) { buffer in
            UnsafeMutableRawBufferPointer(buffer).copyMemory(from: source)
            return source.count
        }
    }

    /// A string, from its opening quote to past its closing one.
    private mutating func parseString() throws(Failure) -> String {
        index += 1
        let start = index
        // The common case: no escapes, so the bytes are the string; ASCII bytes need no check as UTF-8.
        var highBits: UInt8 = 0
        // Eight bytes at a time while none ends the string, starts an escape or is a control character; then on to
        // the first that does (the bytes are little-endian in the word: the lowest flag is the first such byte).
        while index + 8 <= bytes.count {
            let word = bytes.loadUnaligned(fromByteOffset: index, as: UInt64.self)
            let ends = Self.endsPlainRun(word)
            let plain = ends == 0 ? 8 : ends.trailingZeroBitCount >> 3
            if plain > 0, word & (UInt64.max >> (64 - 8 * plain)) & 0x8080_8080_8080_8080 != 0 { highBits = 0x80 }
            index += plain
            if ends != 0 { break }
        }
        while index < bytes.count {
            let byte = bytes[index]
            if byte == UInt8(ascii: "\"") {
                let text = highBits < 0x80 ? ascii(start, index) : try utf8(start, index)
                index += 1
                return text
            }
            if byte == UInt8(ascii: "\\") { break }
            guard byte >= 0x20 else { throw fail("control character in a string") }
            highBits |= byte
            index += 1
        }
        var scalars = unescaped
        unescaped = []
        scalars.removeAll(keepingCapacity: true)
        scalars.append(contentsOf: bytes[start..<index])
        defer { unescaped = scalars }
        while index < bytes.count {
            let byte = bytes[index]
            switch byte {
            case UInt8(ascii: "\""):
                index += 1
                return try utf8(of: scalars)
            case UInt8(ascii: "\\"):
                index += 1
                guard index < bytes.count else { throw fail("unexpected end of the JSON text") }
                let escape = bytes[index]
                index += 1
                switch escape {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): scalars.append(escape)
                case UInt8(ascii: "b"): scalars.append(0x08)
                case UInt8(ascii: "f"): scalars.append(0x0C)
                case UInt8(ascii: "n"): scalars.append(0x0A)
                case UInt8(ascii: "r"): scalars.append(0x0D)
                case UInt8(ascii: "t"): scalars.append(0x09)
                case UInt8(ascii: "u"): try parseUnicodeEscape(into: &scalars)
                default: throw fail("invalid escape in a string")
                }
            default:
                guard byte >= 0x20 else { throw fail("control character in a string") }
                scalars.append(byte)
                index += 1
            }
        }
        throw fail("unterminated string")
    }

    /// The high bit of each of a word's eight bytes that is `"`, `\\` or below 0x20 (bytes of 0x80 and above are
    /// none of those), else zero; a byte above the first such one may be flagged too, the first never wrongly.
    private static func endsPlainRun(_ word: UInt64) -> UInt64 {
        let ones: UInt64 = 0x0101_0101_0101_0101
        let highs: UInt64 = 0x8080_8080_8080_8080
        // A byte that is zero (after the exclusive or) or below 0x20 borrows into its high bit, where its own high
        // bit was clear; a borrow runs only upwards, so no byte below the first such one is flagged.
        let quote = word ^ (ones &* 0x22)
        let backslash = word ^ (ones &* 0x5C)
        let zeroed = ((quote &- ones) & ~quote) | ((backslash &- ones) & ~backslash)
        let control = (word &- ones &* 0x20) & ~word
        return (zeroed | control) & highs
    }

    /// Appends the scalar of `\uXXXX` (or a surrogate pair of them) as UTF-8; `index` is past the `u`.
    ///
    /// Encoded in place: a string and an array made for each escape cost more than the rest of the parse in text
    /// whose every letter is escaped (as servers that escape all non-ASCII text write Chinese).
    private mutating func parseUnicodeEscape(into scalars: inout [UInt8]) throws(Failure) {
        var value = try hex4()
        if (0xD800...0xDBFF).contains(value) {
            guard index + 1 < bytes.count, bytes[index] == UInt8(ascii: "\\"), bytes[index + 1] == UInt8(ascii: "u")
            else { throw fail("unpaired surrogate in a string") }
            index += 2
            let low = try hex4()
            guard (0xDC00...0xDFFF).contains(low) else { throw fail("unpaired surrogate in a string") }
            value = 0x10000 + ((value - 0xD800) << 10) + (low - 0xDC00)
        } else if (0xDC00...0xDFFF).contains(value) {
            throw fail("unpaired surrogate in a string")
        }
        guard let scalar = Unicode.Scalar(value) else { throw fail("invalid \\u escape") }
        UTF8.encode(scalar) { scalars.append($0) }
    }

    private mutating func hex4() throws(Failure) -> UInt32 {
        guard index + 4 <= bytes.count else { throw fail("unexpected end of the JSON text") }
        var value: UInt32 = 0
        for _ in 0..<4 {
            guard let digit = bytes[index].hexDigitValue else { throw fail("invalid \\u escape") }
            value = value &<< 4 | UInt32(digit)
            index += 1
        }
        return value
    }

    private func utf8(_ start: Int, _ end: Int) throws(Failure) -> String {
        guard let text = Self.validUTF8(UnsafeRawBufferPointer(rebasing: bytes[start..<end])) else {
            throw Failure(message: "invalid UTF-8 in a string", offset: start)
        }
        return text
    }

    private func utf8(of scalars: [UInt8]) throws(Failure) -> String {
        guard let text = scalars.withUnsafeBytes({ Self.validUTF8($0) }) else {
            throw fail("invalid UTF-8 in a string")
        }
        return text
    }

    /// The text of bytes that are valid UTF-8; `nil` when they are not.
    ///
    /// Decoded on the standard library's specialised path, which repairs what is invalid, then compared with the
    /// bytes: valid UTF-8 comes out as it went in, and anything repaired differs. (`String(validating:as:)` is
    /// generic over the encoding and, compiled so, looked its types up at run time for every non-ASCII string.)
    static func validUTF8(_ bytes: UnsafeRawBufferPointer) -> String? {
        var text = String(decoding: bytes, as: UTF8.self)
        let same = text.withUTF8 { decoded in
            decoded.count == bytes.count
                && (bytes.isEmpty || memcmp(decoded.baseAddress!, bytes.baseAddress!, bytes.count) == 0)
        }
        return same ? text : nil
    }

    /// A number, checked against the JSON grammar: `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?`.
    private mutating func parseNumber() throws(Failure) -> JSON.Number {
        let start = index
        if bytes[index] == UInt8(ascii: "-") { index += 1 }
        guard index < bytes.count, isDigit(bytes[index]) else { throw fail("invalid number") }
        if bytes[index] == UInt8(ascii: "0") {
            index += 1
            if index < bytes.count, isDigit(bytes[index]) { throw fail("leading zero in a number") }
        } else {
            skipDigits()
        }
        var isInteger = true
        if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
            isInteger = false
            index += 1
            guard index < bytes.count, isDigit(bytes[index]) else { throw fail("invalid number") }
            skipDigits()
        }
        if index < bytes.count, bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E") {
            isInteger = false
            index += 1
            if index < bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") {
                index += 1
            }
            guard index < bytes.count, isDigit(bytes[index]) else { throw fail("invalid number") }
            skipDigits()
        }
        // An integer of up to 18 digits fits an `Int64` whatever its digits: read from them, with no text made.
        // `-0` keeps its text, as every other number outside this case does.
        let negative = bytes[start] == UInt8(ascii: "-")
        let digitsStart = negative ? start + 1 : start
        if isInteger, index - digitsStart <= 18, !(negative && bytes[digitsStart] == UInt8(ascii: "0")) {
            var value: Int64 = 0
            for offset in digitsStart..<index { value = value &* 10 &+ Int64(bytes[offset] &- UInt8(ascii: "0")) }
            return JSON.Number(negative ? -value : value)
        }
        let text = String(decoding: UnsafeRawBufferPointer(rebasing: bytes[start..<index]), as: UTF8.self)
        return JSON.Number(validText: text)
    }

    private func isDigit(_ byte: UInt8) -> Bool {
        byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")
    }

    private mutating func skipDigits() {
        while index < bytes.count, isDigit(bytes[index]) { index += 1 }
    }
}
