import Foundation
import Synchronization
import Testing

@testable import Switchboard

/// The decoder over parsed JSON with a `JSONDecoder`'s `.custom` key and date strategies (on Linux, a date
/// formatter's strategy is a `.custom` one too), against `JSONDecoder` with the same strategies over the same text.
@Suite struct CustomStrategyTests {
    typealias Both = DecoderStrategyTests

    /// A name in the text as a key, as a key strategy's closure returns it.
    struct Name: CodingKey {
        let stringValue: String
        init(stringValue: String) { self.stringValue = stringValue }
        var intValue: Int? { nil }
        init?(intValue: Int) { nil }
    }

    /// Every path a key strategy's closure was called with, as text (each key's name and index).
    final class Calls: Sendable {
        private let paths = Mutex<[String]>([])

        func record(_ path: [any CodingKey]) {
            let text = path.map { "\($0.stringValue)#\($0.intValue.map(String.init) ?? "-")" }.joined(separator: "/")
            paths.withLock { $0.append(text) }
        }

        var sorted: [String] { paths.withLock { $0.sorted() } }
    }

    /// A decoder whose names in the text are in Pascal case (`UserId`), found by the camel-case keys (`userId`); it
    /// records each path it converts a name at.
    static func pascalCase(_ calls: Calls? = nil) -> JSONDecoder {
        let decoder = JSONDecoder()
        decoder.keyDecodingStrategy = .custom { path in
            calls?.record(path)
            let name = path.last!.stringValue
            return Name(stringValue: name.prefix(1).lowercased() + name.dropFirst())
        }
        return decoder
    }

    struct Order: Decodable, Equatable {
        struct Line: Decodable, Equatable {
            let itemName: String
            let quantity: Int
        }
        let orderId: Int64
        let lines: [Line]
        let groups: [[Line]]
        let totals: [String: Double]
        let byNumber: [Int: String]
        let note: String?
    }

    static let orderText = #"""
        {"OrderId": 9007199254740993, "Lines": [{"ItemName": "lamp", "Quantity": 2}, {"ItemName": "cord", "Quantity": 1}],
         "Groups": [[], [{"ItemName": "bulb", "Quantity": 4}]],
         "Totals": {"Net": 10.5, "gross": 12.6}, "ByNumber": {"1": "one"}, "Note": null}
        """#

    /// A model with names to convert at every level: the values are `JSONDecoder`'s, and the closure is called with
    /// the same paths (the same number of times, each path with the same names and indices), in whatever order.
    @Test func customKeysDecodeAsJSONDecoderDecodesThem() throws {
        let (foundationCalls, switchboardCalls) = (Calls(), Calls())
        let data = Data(Self.orderText.utf8)
        let expected = try Self.pascalCase(foundationCalls).decode(Order.self, from: data)
        let options = try #require(JSONValueDecoder.Options(Self.pascalCase(switchboardCalls)))
        let decoded = try JSONValueDecoder.decode(Order.self, from: try JSON(data: data), options: options)
        #expect(decoded == expected)
        #expect(switchboardCalls.sorted == foundationCalls.sorted)
        // What the strategy did: names converted at every level, a `[String: T]` dictionary's names kept, and a path
        // through an array's index.
        #expect(expected.orderId == 9_007_199_254_740_993)
        #expect(expected.groups[1][0].itemName == "bulb")
        #expect(expected.totals == ["Net": 10.5, "gross": 12.6])
        #expect(expected.byNumber == [1: "one"])
        #expect(foundationCalls.sorted.contains("groups#-/Index 1#1/Index 0#0/ItemName#-"))
    }

    @Test(arguments: [
        ("missing", #"{"OrderId": 1}"#),
        ("wrong kind", #"{"OrderId": "1", "Lines": []}"#),
        ("in an array", #"{"OrderId": 1, "Lines": [{"ItemName": "a", "Quantity": "2"}]}"#),
        ("dictionary value", #"{"OrderId": 1, "Lines": [], "Groups": [], "Totals": {"Net": "x"}}"#),
    ])
    func customKeyFailuresHaveTheSameKindAndPath(name: String, text: String) throws {
        try Both.expectAlike(Order.self, text, Self.pascalCase())
    }

    /// Two names of one object that the closure makes one: `JSONDecoder` keeps the first in the text, which a parsed
    /// object no longer knows, so the value is refused here and a response decodes the bytes.
    @Test func customNamesThatBecomeOneAreLeftToJSONDecoder() async throws {
        struct Item: Decodable, Equatable { let id: Int }
        let lowercased = JSONDecoder()
        lowercased.keyDecodingStrategy = .custom { Name(stringValue: $0.last!.stringValue.lowercased()) }
        let options = try #require(JSONValueDecoder.Options(lowercased))
        for (text, expected) in [(#"{"ID": 1, "id": 2}"#, 1), (#"{"id": 2, "Id": 3}"#, 2)] {
            #expect(throws: JSONValueDecoder.Unsupported.self) {
                try JSONValueDecoder.decode(Item.self, from: try JSON(data: Data(text.utf8)), options: options)
            }
            let stub = StubEngine()
            stub.on(nil, "*", reply: .data(Data(text.utf8), headers: ["Content-Type": "application/json"]))
            let response = try await stubCenter(stub).0.send { $0.api = "item" }
            #expect(try response.decode(Item.self, using: lowercased) == Item(id: expected))
        }
    }

    // MARK: - Dates

    static func formatted(_ format: String) -> JSONDecoder {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "Asia/Shanghai")
        formatter.dateFormat = format
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .formatted(formatter)
        return decoder
    }

    @Test(arguments: [
        "\"2024-02-29 12:34:56\"", "\"2024-02-29\"", "\"2024-02-30 00:00:00\"", "\"\"", "\"not a date\"", "0", "null",
        "true",
    ])
    func formattedDatesDecodeAsJSONDecoderDecodesThem(literal: String) throws {
        let decoder = Self.formatted("yyyy-MM-dd HH:mm:ss")
        let valid = "\"2024-01-01 08:00:00\""
        // At the top, in an object, in an array and through a single-value container: each names its own path.
        try Both.expectAlike(Date.self, literal, decoder)
        try Both.expectAlike(
            Both.Stamp.self, #"{"at": \#(literal), "list": [\#(valid)], "single": \#(valid)}"#, decoder)
        try Both.expectAlike(
            Both.Stamp.self, #"{"at": \#(valid), "list": [\#(valid), \#(literal)], "single": \#(valid)}"#, decoder)
        try Both.expectAlike(Both.Stamp.self, #"{"at": \#(valid), "list": [], "single": \#(literal)}"#, decoder)
    }

    /// What a date's own closure reads and throws is its own: here a number or one of two formats, and an error of
    /// the closure's own type for anything else.
    @Test func customDateClosuresDecodeAsJSONDecoderDecodesThem() throws {
        struct Unreadable: Error, Equatable { let path: [String] }
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .custom { decoder in
            let container = try decoder.singleValueContainer()
            if let seconds = try? container.decode(Double.self) { return Date(timeIntervalSince1970: seconds) }
            let text = try container.decode(String.self)
            for format in ["yyyy-MM-dd'T'HH:mm:ssZ", "yyyy/MM/dd"] {
                let formatter = DateFormatter()
                formatter.locale = Locale(identifier: "en_US_POSIX")
                formatter.timeZone = TimeZone(identifier: "UTC")
                formatter.dateFormat = format
                if let date = formatter.date(from: text) { return date }
            }
            throw Unreadable(path: decoder.codingPath.map(\.stringValue))
        }
        let texts = [
            #"{"at": 1700000000.5, "list": ["2024/02/29", "2024-02-29T12:00:00+0800"], "single": 0}"#,
            #"{"at": "2024/02/29", "list": [], "single": "2024/13/45"}"#,
            #"{"at": "tomorrow", "list": [], "single": 0}"#,
            #"{"at": 0, "list": [0, ["x"]], "single": 0}"#,
            #"{"at": null, "list": [], "single": 0}"#,
        ]
        for text in texts {
            let (foundation, switchboard) = try Both.both(Both.Stamp.self, text, decoder)
            switch (foundation, switchboard) {
            case (.success(let a), .success(let b)):
                #expect(a == b, "\(text)")
            case (.failure(let a as Unreadable), .failure(let b as Unreadable)):
                #expect(a == b, "\(text)")
            case (.failure(let a), .failure(let b)):
                #expect(Both.shape(a) == Both.shape(b), "\(text): \(a) from JSONDecoder, \(b) here")
            default:
                Issue.record("\(text): \(foundation) from JSONDecoder, \(switchboard) here")
            }
        }
        // Not all failures: the closure read each of its forms.
        #expect(try decoder.decode(Both.Stamp.self, from: Data(texts[0].utf8)).list.count == 2)
        #expect(throws: Unreadable(path: ["at"])) { try decoder.decode(Both.Stamp.self, from: Data(texts[2].utf8)) }
    }

    /// Through the center: a typed send with both custom strategies decodes the parsed body, and gives
    /// `JSONDecoder`'s values.
    @Test func aTypedSendWithCustomStrategiesGivesJSONDecodersValues() async throws {
        struct Event: Decodable, Equatable {
            let eventName: String
            let startsAt: Date
        }
        let text = #"{"EventName": "launch", "StartsAt": "2024-02-29 12:34:56"}"#
        let stub = StubEngine()
        stub.on(nil, "*", reply: .data(Data(text.utf8), headers: ["Content-Type": "application/json"]))
        let center = stubCenter(stub).0
        @Sendable func decoder() -> JSONDecoder {
            let decoder = Self.formatted("yyyy-MM-dd HH:mm:ss")
            decoder.keyDecodingStrategy = Self.pascalCase().keyDecodingStrategy
            return decoder
        }
        #expect(JSONValueDecoder.Options(decoder()) != nil)
        let event = try await center.send(Event.self, decoder: decoder) { $0.api = "event" }
        #expect(event == (try decoder().decode(Event.self, from: Data(text.utf8))))
        #expect(event.startsAt == Date(timeIntervalSince1970: 1_709_181_296))
    }

    // MARK: - Data and userInfo

    struct Blob: Decodable, Equatable {
        let blob: Data
        let list: [Data]
    }

    @Test(arguments: [
        #"{"blob": [1, 2, 255], "list": [[], [0]]}"#, #"{"blob": [256], "list": []}"#,
        #"{"blob": [1, -1], "list": []}"#, #"{"blob": "AQI=", "list": []}"#, #"{"blob": null, "list": []}"#,
        #"{"blob": [], "list": [[1], null]}"#, #"{"blob": [1.5], "list": []}"#, #"{"blob": {}, "list": []}"#,
    ])
    func dataAsItsOwnDecodingDecodesAsJSONDecoderDecodesIt(text: String) throws {
        let decoder = JSONDecoder()
        decoder.dataDecodingStrategy = .deferredToData
        // A byte that does not fit has no path from `JSONDecoder`: only the kind is compared (see `shape`).
        try Both.expectAlike(Blob.self, text, decoder, corruptedPath: false)
    }

    /// Base64 (the default) and a closure of the decoder's own (here hexadecimal digits), valid and not, a missing
    /// value named as `Data` under both.
    @Test(arguments: [
        #"{"blob": "AQI=", "list": ["", "/w=="]}"#, #"{"blob": "not base64", "list": []}"#,
        #"{"blob": "0102ff", "list": ["", "00"]}"#, #"{"blob": "01x", "list": []}"#, #"{"blob": 1, "list": []}"#,
        #"{"blob": null, "list": []}"#, #"{"blob": "", "list": [null]}"#,
    ])
    func dataByBase64OrAClosureDecodesAsJSONDecoderDecodesIt(text: String) throws {
        struct NotHex: Error {}
        let hex = JSONDecoder()
        hex.dataDecodingStrategy = .custom { decoder in
            let text = Array(try decoder.singleValueContainer().decode(String.self).utf8)
            guard text.count.isMultiple(of: 2) else {
                throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: "odd"))
            }
            return Data(
                try stride(from: 0, to: text.count, by: 2).map { index in
                    guard let byte = UInt8(String(decoding: text[index..<index + 2], as: UTF8.self), radix: 16) else {
                        throw DecodingError.dataCorrupted(
                            .init(codingPath: decoder.codingPath, debugDescription: "not hexadecimal"))
                    }
                    return byte
                })
        }
        try Both.expectAlike(Blob.self, text, JSONDecoder())
        try Both.expectAlike(Blob.self, text, hex)
        // Not only failures: the closure read hexadecimal digits.
        #expect(
            try hex.decode(Blob.self, from: Data(#"{"blob": "0102ff", "list": []}"#.utf8)).blob == Data([1, 2, 255]))
    }

    /// A missing `Data` is named as `Data`, as `JSONDecoder` names it, under every data strategy (not as the text or
    /// array it would have been read from).
    @Test func aNullDataIsAMissingData() throws {
        let strategies: [JSONDecoder.DataDecodingStrategy] = [.base64, .deferredToData, .custom { _ in Data() }]
        for strategy in strategies {
            let decoder = JSONDecoder()
            decoder.dataDecodingStrategy = strategy
            Both.expectMissing(
                Data.self, at: ["blob"], try Both.both(Blob.self, #"{"blob": null, "list": []}"#, decoder))
        }
    }

    /// A type that reads the decoder's `userInfo` finds the same entries as it finds in `JSONDecoder`'s, at every
    /// level, and a typed send with such a decoder decodes the parsed body.
    @Test func userInfoReachesTheTypesDecoded() async throws {
        struct Price: Decodable, Equatable {
            static let currency = CodingUserInfoKey(rawValue: "currency")!
            let text: String
            init(text: String) { self.text = text }
            init(from decoder: any Decoder) throws {
                let cents = try decoder.singleValueContainer().decode(Int.self)
                let currency = decoder.userInfo[Self.currency] as? String ?? "none"
                text = "\(cents / 100).\(cents % 100) \(currency)"
            }
        }
        struct Cart: Decodable, Equatable {
            let total: Price
            let lines: [Price]
        }
        @Sendable func decoder() -> JSONDecoder {
            let decoder = JSONDecoder()
            decoder.userInfo[Price.currency] = "CNY"
            return decoder
        }
        let text = #"{"total": 1250, "lines": [1000, 250]}"#
        let options = try #require(JSONValueDecoder.Options(decoder()))
        let expected = try decoder().decode(Cart.self, from: Data(text.utf8))
        #expect(expected.lines == [Price(text: "10.0 CNY"), Price(text: "2.50 CNY")])
        #expect(
            try JSONValueDecoder.decode(Cart.self, from: try JSON(data: Data(text.utf8)), options: options) == expected)
        let stub = StubEngine()
        stub.on(nil, "*", reply: .data(Data(text.utf8), headers: ["Content-Type": "application/json"]))
        let cart = try await stubCenter(stub).0.send(Cart.self, decoder: decoder) { $0.api = "cart" }
        #expect(cart == expected)
    }
}
