import Foundation
import Testing

@testable import Switchboard

/// The decoder over parsed JSON against `JSONDecoder` with its default settings: the same values, and failures of the
/// same kind at the same coding path, over the same text.
@Suite struct JSONValueDecoderTests {
    // MARK: - Models

    enum Role: String, Codable, Equatable { case admin, member }
    enum Level: Int, Codable, Equatable { case low = 1, high = 2 }
    enum Shape: Codable, Equatable {
        case circle(radius: Double)
        case box(width: Int, height: Int)
        case none
    }

    struct Address: Codable, Equatable {
        let city: String
        let zip: String?
        let lines: [String]
    }

    struct User: Codable, Equatable {
        let id: Int64
        let name: String
        let role: Role
        let level: Level
        let active: Bool
        let score: Double
        let ratio: Float
        let small: Int8
        let port: UInt16
        let balance: Decimal
        let joined: Date
        let avatar: Data
        let site: URL
        let nickname: String?
        let missing: Int?
        let address: Address
        let tags: [String]
        let counts: [String: Int]
        let byID: [Int: String]
        let matrix: [[Int?]]
        let shapes: [Shape]
        let raw: JSON
    }

    static let userText = #"""
        {"id": 9007199254740993, "name": "Ada \u00e9", "role": "admin", "level": 2, "active": true,
         "score": 0.1, "ratio": 16777217, "small": -128, "port": 65535, "balance": 19.99, "joined": 1.5e8,
         "avatar": "aGVsbG8=", "site": "https://example.com/a?b=c", "nickname": null,
         "address": {"city": "London", "zip": null, "lines": ["1 Main St", ""]},
         "tags": [], "counts": {"a": 1, "b": -2}, "byID": {"1": "one", "-5": "minus five"},
         "matrix": [[1, null], [], [3]],
         "shapes": [{"circle": {"radius": 2.5}}, {"box": {"width": 3, "height": 4}}, {"none": {}}],
         "raw": {"n": 123456789012345678901234567890, "list": [1.0, "x", null, true]}}
        """#

    /// A class decoding through `superDecoder()` and a keyed container read by hand (`allKeys`, `contains`).
    class Base: Decodable, @unchecked Sendable {
        // Safety: set once in the initialiser, never changed.
        let base: Int
        required init(from decoder: any Decoder) throws {
            base = try decoder.container(keyedBy: AnyKey.self).decode(Int.self, forKey: AnyKey("base"))
        }
    }

    final class Derived: Base, @unchecked Sendable {
        // Safety: set once in the initialiser, never changed.
        let keys: [String]
        let hasExtra: Bool
        let firstOfList: String?
        let listCount: Int?
        let superFromKey: Int?

        required init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: AnyKey.self)
            keys = container.allKeys.map(\.stringValue).sorted()
            hasExtra = container.contains(AnyKey("extra"))
            var list = try container.nestedUnkeyedContainer(forKey: AnyKey("list"))
            listCount = list.count
            _ = try list.decodeNil()
            firstOfList = try list.decodeIfPresent(String.self)
            superFromKey = try Int?(from: try container.superDecoder(forKey: AnyKey("absent")))
            try super.init(from: try container.superDecoder())
        }
    }

    struct AnyKey: CodingKey {
        let stringValue: String
        var intValue: Int? { nil }
        init(_ text: String) { stringValue = text }
        init(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }

    // MARK: - Helpers

    /// Decodes `text` both ways.
    static func both<T: Decodable>(_ type: T.Type, _ text: String) throws -> (
        foundation: Result<T, any Error>, switchboard: Result<T, any Error>
    ) {
        let data = Data(text.utf8)
        let parsed = try JSON(data: data)
        return (
            Result { try JSONDecoder().decode(T.self, from: data) },
            Result { try JSONValueDecoder.decode(T.self, from: parsed) }
        )
    }

    /// A failure's kind and coding path, to compare (a corrupted value's kind alone: `JSONDecoder` gives a number that
    /// does not fit with no path at all, where this decoder names the value).
    static func shape(_ error: any Error) -> String {
        DecoderStrategyTests.shape(error, corruptedPath: false)
    }

    /// The same value (by `same`), or failures of the same shape.
    static func expectAlike<T: Decodable>(
        _ type: T.Type, _ text: String, same: (T, T) -> Bool, sourceLocation: SourceLocation = #_sourceLocation
    ) throws {
        let (foundation, switchboard) = try both(type, text)
        switch (foundation, switchboard) {
        case (.success(let a), .success(let b)):
            #expect(
                same(a, b), "\(T.self) from \(text): \(a) from JSONDecoder, \(b) here", sourceLocation: sourceLocation)
        case (.failure(let a), .failure(let b)):
            #expect(
                shape(a) == shape(b), "\(T.self) from \(text): \(a) from JSONDecoder, \(b) here",
                sourceLocation: sourceLocation)
        default:
            Issue.record(
                "\(T.self) from \(text): \(foundation) from JSONDecoder, \(switchboard) here",
                sourceLocation: sourceLocation)
        }
    }

    // MARK: - Values

    @Test func aRichModelDecodesAsJSONDecoderDecodesIt() throws {
        let (foundation, switchboard) = try Self.both(User.self, Self.userText)
        let expected = try foundation.get()
        let user = try switchboard.get()
        // `raw` is the one field that differs by design: exact here, a `Double` in `JSONDecoder`'s.
        #expect(user.raw["n"]?.description == "123456789012345678901234567890")
        #expect(user.raw == (try JSON(data: Data(Self.userText.utf8))["raw"]))
        let withoutRaw = { (user: User) in
            User(
                id: user.id, name: user.name, role: user.role, level: user.level, active: user.active,
                score: user.score, ratio: user.ratio, small: user.small, port: user.port, balance: user.balance,
                joined: user.joined, avatar: user.avatar, site: user.site, nickname: user.nickname,
                missing: user.missing, address: user.address, tags: user.tags, counts: user.counts, byID: user.byID,
                matrix: user.matrix, shapes: user.shapes, raw: .null)
        }
        #expect(withoutRaw(user) == withoutRaw(expected))
        #expect(user.id == 9_007_199_254_740_993)
        #expect(user.ratio == 16_777_216)
        #expect(user.avatar == Data("hello".utf8))
    }

    @Test func handWrittenDecodingSeesTheSameContainers() throws {
        let text = #"{"base": 7, "extra": 1, "list": [null, "first", 2], "super": {"base": 9}}"#
        let (foundation, switchboard) = try Self.both(Derived.self, text)
        let a = try foundation.get()
        let b = try switchboard.get()
        #expect(a.base == 9 && b.base == 9)
        #expect(a.keys == b.keys && a.hasExtra == b.hasExtra && a.firstOfList == b.firstOfList)
        #expect(a.listCount == b.listCount && a.superFromKey == b.superFromKey && b.superFromKey == nil)
    }

    static let numbers =
        [
            "0", "-0", "1", "-1", "127", "128", "-129", "255", "256", "32767", "65535", "65536", "2147483648",
            "4294967296", "9007199254740993", "9223372036854775807", "9223372036854775808", "-9223372036854775808",
            "-9223372036854775809", "18446744073709551615", "18446744073709551616", "123456789012345678901234567890",
            "1.0", "1.5", "-2.0", "1e2", "1E+2", "2.5e1", "1e-2", "100e-2", "0.0", "-0.0", "0e10", "0.1", "19.99",
            "6.02214076e23", "1e38", "3.4028235e38", "3.5e38", "1e308", "1e309", "1e400", "1e-45", "1e-46", "1e-400",
            "4.9e-324", "16777217", "9007199254740993.0", "1.7976931348623157e308",
        ] + fractions

    @Test(arguments: numbers)
    func everyNumberDecodesAsJSONDecoderDecodesIt(literal: String) throws {
        let text = "[\(literal)]"
        try Self.expectAlike([Double].self, text) { $0.map(\.bitPattern) == $1.map(\.bitPattern) }
        try Self.expectAlike([Float].self, text) { $0.map(\.bitPattern) == $1.map(\.bitPattern) }
        try Self.expectAlike([Decimal].self, text, same: ==)
        try Self.expectAlike([Date].self, text, same: ==)
        guard !Self.fractions.contains(literal) else { return }
        try Self.expectAlike([Int].self, text, same: ==)
        try Self.expectAlike([Int8].self, text, same: ==)
        try Self.expectAlike([Int16].self, text, same: ==)
        try Self.expectAlike([Int32].self, text, same: ==)
        try Self.expectAlike([Int64].self, text, same: ==)
        try Self.expectAlike([UInt].self, text, same: ==)
        try Self.expectAlike([UInt8].self, text, same: ==)
        try Self.expectAlike([UInt16].self, text, same: ==)
        try Self.expectAlike([UInt32].self, text, same: ==)
        try Self.expectAlike([UInt64].self, text, same: ==)
    }

    /// Numbers whose fraction is not zero, which `JSONDecoder` reads as integers all the same.
    static let fractions = ["1.0000000000000001", "12345678901234567.5", "1e-400"]

    /// The one difference: a fraction that is not zero never becomes an integer here; and the error names the value.
    @Test(arguments: fractions)
    func aFractionNeverBecomesAnInteger(literal: String) throws {
        let (foundation, switchboard) = try Self.both([Int64].self, "[\(literal)]")
        #expect((try? foundation.get()) != nil)  // JSONDecoder reads it as an integer, changed
        #expect(throws: DecodingError.self) { try switchboard.get() }
        guard case .failure(DecodingError.dataCorrupted(let context)) = switchboard else {
            Issue.record("\(switchboard)")
            return
        }
        #expect(context.codingPath.map(\.intValue) == [0])
        #expect(context.debugDescription == "Parsed JSON number <\(literal)> does not fit in Int64.")
    }

    // MARK: - Failures

    static let failures: [(String, String)] = [
        ("missing key", #"{"id": 1}"#),
        ("null for a value", #"{"city": null, "lines": []}"#),
        ("a number for a string", #"{"city": 5, "lines": []}"#),
        ("a string for an array", #"{"city": "x", "lines": "y"}"#),
        ("null in an array", #"{"city": "x", "lines": ["a", null]}"#),
        ("an array for an object", "[]"),
        ("a string at the top", #""x""#),
        ("null at the top", "null"),
    ]

    @Test(arguments: failures)
    func failuresHaveTheSameKindAndPath(name: String, text: String) throws {
        try Self.expectAlike(Address.self, text, same: ==)
    }

    @Test func otherFailuresHaveTheSameKindAndPath() throws {
        try Self.expectAlike([String: Data].self, #"{"a": "not base64!"}"#, same: ==)
        try Self.expectAlike([String: Data].self, #"{"a": 5}"#, same: ==)
        try Self.expectAlike([URL].self, #"["https://example.com", ""]"#, same: ==)
        try Self.expectAlike([URL].self, #"["http://[::1"]"#, same: ==)
        try Self.expectAlike([Bool].self, "[1]", same: ==)
        try Self.expectAlike([Bool].self, #"["true"]"#, same: ==)
        try Self.expectAlike([Int].self, #"["1"]"#, same: ==)
        try Self.expectAlike([Decimal].self, #"["1"]"#, same: ==)
        try Self.expectAlike([Role].self, #"["owner"]"#, same: ==)
        try Self.expectAlike([Level].self, "[3]", same: ==)
        try Self.expectAlike([Int: String].self, #"{"x": "y"}"#, same: ==)
        try Self.expectAlike([Shape].self, #"[{"circle": {}}]"#, same: ==)
        try Self.expectAlike([Shape].self, #"[{"square": {}}]"#, same: ==)
        try Self.expectAlike([Date].self, #"["2024-01-01"]"#, same: ==)
        try Self.expectAlike(Pair.self, "[1]", same: ==)
        try Self.expectAlike(Pair.self, #"{"a": 1}"#, same: ==)
    }

    /// Two integers from an array of two.
    struct Pair: Decodable, Equatable {
        let a: Int
        let b: Int
        init(from decoder: any Decoder) throws {
            var container = try decoder.unkeyedContainer()
            a = try container.decode(Int.self)
            b = try container.decode(Int.self)
        }
    }

    // MARK: - When it is used

    @Test func onlyAPlainJSONDecoderWithSettingsItFollowsIsStoodInFor() {
        final class Custom: JSONDecoder, @unchecked Sendable {}
        #expect(JSONValueDecoder.Options(JSONDecoder()) != nil)
        #expect(JSONValueDecoder.Options(Custom()) == nil)
        let followed: [(JSONDecoder) -> Void] = [
            { $0.keyDecodingStrategy = .convertFromSnakeCase },
            { $0.dateDecodingStrategy = .secondsSince1970 },
            { $0.dateDecodingStrategy = .millisecondsSince1970 },
            { $0.dateDecodingStrategy = .iso8601 },
            { $0.keyDecodingStrategy = .custom { $0.last! } },
            { $0.dateDecodingStrategy = .custom { _ in Date() } },
            { $0.dataDecodingStrategy = .deferredToData },
            { $0.dataDecodingStrategy = .custom { _ in Data() } },
            { $0.userInfo[CodingUserInfoKey(rawValue: "k")!] = 1 },
        ]
        for change in followed {
            let decoder = JSONDecoder()
            change(decoder)
            #expect(JSONValueDecoder.Options(decoder) != nil)
        }
        // A date formatter's strategy: on Linux a `.custom` one, followed; on Apple platforms a case of its own, not.
        let formatted = JSONDecoder()
        formatted.dateDecodingStrategy = .formatted(DateFormatter())
        #if canImport(Darwin)
        #expect(JSONValueDecoder.Options(formatted) == nil)
        #else
        #expect(JSONValueDecoder.Options(formatted) != nil)
        #endif
        let changes: [(JSONDecoder) -> Void] = [
            {
                $0.nonConformingFloatDecodingStrategy = .convertFromString(
                    positiveInfinity: "+", negativeInfinity: "-", nan: "n")
            },
            { $0.allowsJSON5 = true },
            { $0.assumesTopLevelDictionary = true },
        ]
        for change in changes {
            let decoder = JSONDecoder()
            change(decoder)
            #expect(JSONValueDecoder.Options(decoder) == nil)
        }
    }

    @Test func aResponseDecodesWithTheDecoderItIsGivenWhenThatHasSettings() async throws {
        struct Item: Decodable, Equatable {
            let itemName: String
            let created: Date
        }
        let stub = StubEngine()
        stub.on(
            nil, "*",
            reply: .data(
                Data(#"{"item_name": "lamp", "created": 86400, "itemName": "plain", "n": 9007199254740993}"#.utf8),
                headers: ["Content-Type": "application/json"]))
        let (center, _) = stubCenter(stub)
        let response = try await center.send { $0.api = "item" }
        let custom = JSONDecoder()
        custom.keyDecodingStrategy = .convertFromSnakeCase
        custom.dateDecodingStrategy = .secondsSince1970
        #expect(
            try response.decode(Item.self, using: custom)
                == Item(itemName: "lamp", created: Date(timeIntervalSince1970: 86400)))
        // With the defaults, from the parsed body: the plain key, seconds since 2001, and `JSON` exactly as sent.
        #expect(
            try response.decode(Item.self)
                == Item(itemName: "plain", created: Date(timeIntervalSinceReferenceDate: 86400)))
        #expect(try response.decode(JSON.self)["n"]?.int64 == 9_007_199_254_740_993)
    }

    struct Named: Decodable, Equatable {
        let name: String
    }

    /// The parsed body is used only while it is what the body says: a hook that changes the bytes has them decoded.
    @Test func aBodyChangedByAHookIsDecodedAsChanged() async throws {
        let stub = StubEngine()
        stub.on(
            nil, "*",
            reply: .data(
                Data(#"{"name": "server", "big": 123456789012345678901234567890}"#.utf8),
                headers: ["Content-Type": "application/json"]))
        let (plain, _) = stubCenter(stub)
        // Untouched: decoded from the parsed body (a number past 64 bits stays exact, which `JSONDecoder` would not
        // keep).
        let untouched = try await plain.send { $0.api = "a" }
        #expect(try untouched.decode(JSON.self)["big"]?.description == "123456789012345678901234567890")
        let (rewriting, _) = stubCenter(stub) { config in
            config.onResponse = { _, response in
                var changed = response
                changed.data = Data(#"{"name": "hook", "big": 123456789012345678901234567890}"#.utf8)
                return changed
            }
        }
        #expect(try await rewriting.send(Named.self) { $0.api = "b" } == Named(name: "hook"))
        let rewritten = try await rewriting.send { $0.api = "c" }
        // Read from the new bytes by `JSONDecoder`, which makes a `Double` of the long number.
        #expect(try rewritten.decode(JSON.self)["big"]?.description != "123456789012345678901234567890")
        var edited = untouched
        edited.value = .json(["name": "edited"])
        #expect(try edited.decode(Named.self) == Named(name: "server"))
    }
}

/// A JSON object that names a member twice: `response.json` keeps the last value (as `JSONSerialization` does), and
/// typed decoding reads the first, as `JSONDecoder` does, on every path that decodes a parsed body.
@Suite struct RepeatedNameTests {
    struct Item: Decodable, Equatable {
        let id: Int
        let inner: Inner?
    }

    struct Inner: Decodable, Equatable {
        let name: String
    }

    static let texts = [
        #"{"id": 1, "id": 2}"#,
        #"{"id": 1, "inner": {"name": "first", "name": "second"}}"#,
        #"[{"id": 1}, {"id": 2, "id": 3}]"#,
    ]

    static func center(_ body: String) -> Center {
        let stub = StubEngine()
        stub.on(nil, "*", reply: .data(Data(body.utf8), headers: ["Content-Type": "application/json"]))
        return stubCenter(stub).0
    }

    @Test(arguments: texts)
    func typedDecodingReadsTheFirstValueAsJSONDecoderDoes(text: String) async throws {
        let center = Self.center(text)
        let response = try await center.send { $0.api = "a" }
        if text.hasPrefix("[") {
            let expected = try JSONDecoder().decode([Item].self, from: Data(text.utf8))
            #expect(expected == [Item(id: 1, inner: nil), Item(id: 2, inner: nil)])
            #expect(try response.decode([Item].self) == expected)
            #expect(try await center.send([Item].self) { $0.api = "b" } == expected)
        } else {
            let expected = try JSONDecoder().decode(Item.self, from: Data(text.utf8))
            #expect(expected.id == 1)
            #expect(expected.inner == nil || expected.inner == Inner(name: "first"))
            #expect(try response.decode(Item.self) == expected)
            #expect(try await center.send(Item.self) { $0.api = "b" } == expected)
        }
        // The parsed value itself keeps the last, as Foundation's JSONSerialization does.
        let foundation = try JSONSerialization.jsonObject(with: Data(text.utf8))
        #expect(response.json == (try JSON(foundation: foundation)))
    }

    @Test func anEnvelopeWhosePayloadRepeatsANameDecodesTheFirst() async throws {
        let center = Self.center(#"{"code": 0, "data": {"id": 1, "id": 2}}"#)
        let response = try await center.send { $0.api = "a" }
        let payload = try response.unwrapping(code: "code", ok: 0, data: "data")
        #expect(try payload.decode(Item.self) == Item(id: 1, inner: nil))
        #expect(payload.json?["id"] == 2)
    }

    @Test func jsonLinesDecodeTheFirst() async throws {
        let center = Self.center("{\"id\": 1, \"id\": 2}\n{\"id\": 3}\n")
        var ids: [Int] = []
        for try await item in try await center.stream({ $0.api = "lines" }).jsonLines(Item.self) { ids.append(item.id) }
        #expect(ids == [1, 3])
    }
}
