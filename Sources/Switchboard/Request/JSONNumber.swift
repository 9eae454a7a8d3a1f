import Foundation

extension JSON {
    /// A JSON number, kept exactly: integers across the whole `Int64` and `UInt64` ranges as integers, any other
    /// number as the text it was written with (so `9007199254740993`, `0.1`, `-0.0` and `1e400` come back as they
    /// went in).
    ///
    /// ```swift
    /// let id = response.json?["id"]?.number?.int64       // 9007199254740993, exactly
    /// let price = response.json?["price"]?.decimal        // 19.99 as a Decimal, not 19.989999999999998
    /// ```
    ///
    /// Two numbers are equal when their values are: `1`, `1.0` and `1e0` are equal; `9007199254740993` and
    /// `9007199254740992` are not, although they are the same `Double`.
    public struct Number: Sendable, Hashable, CustomStringConvertible, ExpressibleByIntegerLiteral,
        ExpressibleByFloatLiteral
    {
        enum Storage: Sendable {
            case int(Int64)
            case uint(UInt64)
            /// Not an integer that fits 64 bits: its text (a `JSON` value stays as small as a string).
            case text(String)
        }

        let storage: Storage

        /// An integer.
        public init(_ value: Int64) { storage = .int(value) }
        /// An integer.
        public init(_ value: Int) { storage = .int(Int64(value)) }
        /// An integer above `Int64.max`, or any `UInt64`.
        public init(_ value: UInt64) { storage = Int64(exactly: value).map(Storage.int) ?? .uint(value) }
        /// A `Double`, written with the shortest text that reads back as the same value.
        public init(_ value: Double) {
            if value != 0 || value.sign == .plus, let exact = Int64(exactly: value), abs(exact) < 1 << 53 {
                storage = .int(exact)
            } else {
                storage = .text("\(value)")
            }
        }
        /// An integer literal.
        public init(integerLiteral value: Int64) { self.init(value) }
        /// A floating-point literal.
        public init(floatLiteral value: Double) { self.init(value) }

        /// A number from JSON number text (`-12`, `0.5`, `6.02e23`); `nil` when the text is not one.
        public init?(text: String) {
            guard JSONParser.isNumber(text) else { return nil }
            self.init(validText: text)
        }

        /// A number from text already checked to be a JSON number.
        init(validText text: String) {
            let isInteger = !text.utf8.contains {
                $0 == UInt8(ascii: ".") || $0 == UInt8(ascii: "e") || $0 == UInt8(ascii: "E")
            }
            if isInteger, text != "-0" {
                if let value = Int64(text) {
                    storage = .int(value)
                    return
                }
                if let value = UInt64(text) {
                    storage = .uint(value)
                    return
                }
            }
            storage = .text(text)
        }

        // MARK: - Reading

        /// The value as an `Int64`, when it is an integer in that range (`2.0` is; `2.5` is not).
        public var int64: Int64? {
            switch storage {
            case .int(let value): value
            case .uint: nil
            case .text: decimal.flatMap { Self.integer($0) }.flatMap { Int64(exactly: $0) }
            }
        }

        /// The value as a `UInt64`, when it is an integer in that range.
        public var uint64: UInt64? {
            switch storage {
            case .int(let value): UInt64(exactly: value)
            case .uint(let value): value
            case .text: decimal.flatMap { Self.integer($0) }.flatMap { UInt64(exactly: $0) }
            }
        }

        /// The nearest `Double` (infinite for a number beyond its range, such as `1e400`).
        public var double: Double {
            switch storage {
            case .int(let value): Double(value)
            case .uint(let value): Double(value)
            case .text(let text): Double(text) ?? .nan
            }
        }

        /// The value as a `Decimal`, when `Decimal` holds it exactly (38 significant digits, exponents -128 to 127);
        /// `nil` otherwise, never a rounded value.
        public var decimal: Decimal? {
            switch storage {
            case .int(let value): return Decimal(value)
            case .uint(let value): return Decimal(value)
            case .text(let text):
                // `Decimal(string:)` rounds a longer mantissa without saying so.
                guard Self.significantDigits(text) <= 38,
                    let value = Decimal(string: text, locale: Locale(identifier: "en_US_POSIX")), !value.isNaN
                else { return nil }
                return value
            }
        }

        /// The digits of a number's mantissa between its first and last non-zero digit.
        private static func significantDigits(_ text: String) -> Int {
            let mantissa = text.utf8.prefix { $0 != UInt8(ascii: "e") && $0 != UInt8(ascii: "E") }
            let digits = mantissa.filter { $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }
            guard let first = digits.firstIndex(where: { $0 != UInt8(ascii: "0") }),
                let last = digits.lastIndex(where: { $0 != UInt8(ascii: "0") })
            else { return 0 }
            return last - first + 1
        }

        /// The number as JSON text: integers in full, anything else as it was written.
        public var description: String {
            switch storage {
            case .int(let value): String(value)
            case .uint(let value): String(value)
            case .text(let text): text
            }
        }

        // MARK: - Equality

        public static func == (lhs: Number, rhs: Number) -> Bool {
            switch (lhs.storage, rhs.storage) {
            case (.int(let a), .int(let b)): return a == b
            case (.uint(let a), .uint(let b)): return a == b
            case (.int, .uint), (.uint, .int): return false  // `.int` holds every value that fits Int64
            default:
                return lhs.exactValue == rhs.exactValue
            }
        }

        /// The value as digits and a power of ten, with no leading or trailing zeros (`1.50e2` is 15 × 10^1; zero of
        /// either sign is no digits): equal numbers have equal forms, however they were written.
        private var exactValue: ExactValue {
            let text = description.utf8
            let negative = text.first == UInt8(ascii: "-")
            let mantissa = text.prefix { $0 != UInt8(ascii: "e") && $0 != UInt8(ascii: "E") }
            var exponent = Int(String(decoding: text.dropFirst(mantissa.count + 1), as: UTF8.self)) ?? 0
            var digits: [UInt8] = []
            var seenPoint = false
            for byte in mantissa {
                if byte == UInt8(ascii: ".") { seenPoint = true; continue }
                guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { continue }
                if digits.isEmpty, byte == UInt8(ascii: "0") {
                    if seenPoint { exponent -= 1 }
                    continue
                }
                digits.append(byte)
                if seenPoint { exponent -= 1 }
            }
            while digits.last == UInt8(ascii: "0") {
                digits.removeLast()
                exponent += 1
            }
            if digits.isEmpty { return ExactValue(negative: false, digits: [], exponent: 0) }
            return ExactValue(negative: negative, digits: digits, exponent: exponent)
        }

        private struct ExactValue: Equatable {
            var negative: Bool
            var digits: [UInt8]
            var exponent: Int
        }

        public func hash(into hasher: inout Hasher) {
            let value = double
            hasher.combine(value == 0 ? 0 : value)  // -0.0 and 0 hash alike, as they compare equal
        }

        /// The integer a decimal holds, if it has no fraction.
        private static func integer(_ value: Decimal) -> Decimal? {
            var value = value
            var rounded = Decimal()
            NSDecimalRound(&rounded, &value, 0, .plain)
            return rounded == value ? rounded : nil
        }
    }
}

extension Int64 {
    fileprivate init?(exactly value: Decimal) {
        guard let number = Int64(NSDecimalNumber(decimal: value).stringValue) else { return nil }
        self = number
    }
}

extension UInt64 {
    fileprivate init?(exactly value: Decimal) {
        guard let number = UInt64(NSDecimalNumber(decimal: value).stringValue) else { return nil }
        self = number
    }
}
