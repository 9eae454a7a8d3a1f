import Foundation
import Testing

@testable import Switchboard

/// The decoder over parsed JSON with the `JSONDecoder` settings it follows (`.convertFromSnakeCase`, and dates as
/// seconds or milliseconds since 1970 or ISO 8601), against `JSONDecoder` with the same settings over the same text.
@Suite struct DecoderStrategyTests {
    /// Any name, as a key.
    struct Name: CodingKey {
        let stringValue: String
        init(stringValue: String) { self.stringValue = stringValue }
        var intValue: Int? { nil }
        init?(intValue: Int) { nil }
    }

    /// The names an object's container offers: what a key strategy made of the names in the text.
    struct Names: Decodable {
        let names: Set<String>
        init(from decoder: any Decoder) throws {
            names = Set(try decoder.container(keyedBy: Name.self).allKeys.map(\.stringValue))
        }
    }

    static func decoder(
        snakeCase: Bool = false, dates: JSONDecoder.DateDecodingStrategy = .deferredToDate
    ) -> JSONDecoder {
        let decoder = JSONDecoder()
        if snakeCase { decoder.keyDecodingStrategy = .convertFromSnakeCase }
        decoder.dateDecodingStrategy = dates
        return decoder
    }

    /// Decodes `text` with `decoder` and with this decoder under the same settings.
    static func both<T: Decodable>(
        _ type: T.Type, _ text: String, _ decoder: JSONDecoder
    ) throws -> (foundation: Result<T, any Error>, switchboard: Result<T, any Error>) {
        let data = Data(text.utf8)
        let options = try #require(JSONValueDecoder.Options(decoder))
        let parsed = try JSON(data: data)
        return (
            Result { try decoder.decode(T.self, from: data) },
            Result { try JSONValueDecoder.decode(T.self, from: parsed, options: options) }
        )
    }

    /// A failure's kind and full coding path (a corrupted value's too, unless `corruptedPath` is off: `JSONDecoder`
    /// gives none for a number that does not fit its type, where this decoder names the value).
    static func shape(_ error: any Error, corruptedPath: Bool = true) -> String {
        guard let error = error as? DecodingError else { return "not a DecodingError: \(error)" }
        func path(_ context: DecodingError.Context) -> String {
            context.codingPath.map { $0.intValue.map { "[\($0)]" } ?? $0.stringValue }.joined(separator: ".")
        }
        switch error {
        case .typeMismatch(_, let context): return "typeMismatch at \(path(context))"
        case .valueNotFound(_, let context): return "valueNotFound at \(path(context))"
        case .keyNotFound(let key, let context): return "keyNotFound \(key.stringValue) at \(path(context))"
        case .dataCorrupted(let context): return corruptedPath ? "dataCorrupted at \(path(context))" : "dataCorrupted"
        @unknown default: return "\(error)"
        }
    }

    static func expectAlike<T: Decodable & Equatable>(
        _ type: T.Type, _ text: String, _ decoder: JSONDecoder, corruptedPath: Bool = true,
        sourceLocation: SourceLocation = #_sourceLocation
    ) throws {
        let (foundation, switchboard) = try both(type, text, decoder)
        switch (foundation, switchboard) {
        case (.success(let a), .success(let b)):
            #expect(a == b, "\(T.self) from \(text): \(a) from JSONDecoder, \(b) here", sourceLocation: sourceLocation)
        case (.failure(let a), .failure(let b)):
            #expect(
                shape(a, corruptedPath: corruptedPath) == shape(b, corruptedPath: corruptedPath),
                "\(T.self) from \(text): \(a) from JSONDecoder, \(b) here",
                sourceLocation: sourceLocation)
        default:
            Issue.record(
                "\(T.self) from \(text): \(foundation) from JSONDecoder, \(switchboard) here",
                sourceLocation: sourceLocation)
        }
    }

    // MARK: - Snake case

    static let namedCases = [
        "user_id", "_user_id_", "__user_id", "user_id__", "USER_ID", "user__id", "user_ID", "a_b_c", "_", "__", "a",
        "x_1st", "ab1cd_ef2gh", "a_1_b", "1_a", "A1B2_c3D4", "userId", "user", "_private", "trailing_",
        "straße_name", "ǆ_x", "user-id_x", "a.b_c", "a b_c", "ünï_code", "caf\u{E9}_x", "emoji_😀",
    ]

    /// Every name of letters, digits and underscores converts here, to `JSONDecoder`'s name; any other is either
    /// converted the same way or refused (and then decoded by `JSONDecoder` itself).
    @Test func namesConvertAsJSONDecoderConvertsThem() throws {
        var generator = SystemRandomNumberGenerator()
        let alphabet = Array("aZ_09bY_1")
        var names = Self.namedCases
        for _ in 0..<3000 {
            let length = Int.random(in: 1...9, using: &generator)
            names.append(String((0..<length).map { _ in alphabet.randomElement(using: &generator)! }))
        }
        let decoder = Self.decoder(snakeCase: true)
        var refused: [String] = []
        for name in names {
            let text = String(decoding: try JSONEncoder().encode([name: 1]), as: UTF8.self)
            let expected = try decoder.decode(Names.self, from: Data(text.utf8)).names
            let converted: String
            switch SnakeCase.conversion(name) {
            case .same: converted = name
            case .changed(let changed): converted = changed
            case .refused:
                refused.append(name)
                continue
            }
            #expect([converted] == expected, "\(name): \(converted) here, \(expected) from JSONDecoder")
        }
        // Refused: only names with an underscore between characters other than ASCII letters and digits.
        #expect(
            refused.sorted()
                == ["a b_c", "a.b_c", "caf\u{E9}_x", "emoji_😀", "straße_name", "user-id_x", "ünï_code", "ǆ_x"].sorted())
    }

    struct Account: Decodable, Equatable {
        struct Profile: Decodable, Equatable {
            let displayName: String
            let avatarURL: URL?
            let lastSeen: Date
        }
        let userId: Int64
        let isAdmin: Bool
        let _private: String
        let createdAt: Date
        let profile: Profile
        let profiles: [Profile]
        let scores: [String: Int]
        let nested: [String: [String: Double]]
        let byNumber: [Int: String]
        let optionalNote: String?
    }

    static let accountText = #"""
        {"user_id": 9007199254740993, "is_admin": true, "_private": "p", "created_at": 1700000000.5,
         "profile": {"display_name": "Ada", "avatar_u_r_l": "https://example.com/a.png", "last_seen": 0},
         "profiles": [{"display_name": "B", "avatar_u_r_l": null, "last_seen": -1e3}],
         "scores": {"first_try": 1, "secondTry": 2, "THIRD_TRY": 3},
         "nested": {"a_b": {"c_d": 1.5}},
         "by_number": {"1": "one", "22": "twenty-two"}}
        """#

    /// A model with snake-case names at every level, dates, `[String: T]` dictionaries (whose names `JSONDecoder`
    /// keeps) and a dictionary keyed by numbers, under each date strategy followed here.
    @Test(arguments: [
        JSONDecoder.DateDecodingStrategy.secondsSince1970, .millisecondsSince1970, .deferredToDate,
    ])
    func aModelDecodesAsJSONDecoderDecodesIt(dates: JSONDecoder.DateDecodingStrategy) throws {
        let decoder = Self.decoder(snakeCase: true, dates: dates)
        let (foundation, switchboard) = try Self.both(Account.self, Self.accountText, decoder)
        let expected = try foundation.get()
        #expect(try switchboard.get() == expected)
        // What the strategies did, so that the comparison is not between two failures or two empty values.
        #expect(expected.userId == 9_007_199_254_740_993)
        #expect(expected.scores == ["first_try": 1, "secondTry": 2, "THIRD_TRY": 3])
        #expect(expected.nested == ["a_b": ["c_d": 1.5]])
        #expect(expected.byNumber == [1: "one", 22: "twenty-two"])
        #expect(expected.profile.avatarURL == URL(string: "https://example.com/a.png"))
    }

    static let failures: [(String, String)] = [
        ("missing", #"{"user_id": 1}"#),
        ("wrong kind", #"{"user_id": "1", "is_admin": true}"#),
        ("nested missing", #"{"user_id": 1, "is_admin": true, "_private": "", "created_at": 0, "profile": {}}"#),
        (
            "dictionary value",
            #"{"user_id": 1, "is_admin": true, "_private": "", "created_at": 0, "#
                + #""profile": {"display_name": "a", "last_seen": 0}, "profiles": [], "scores": {"a_b": "x"}}"#
        ),
        ("not an object", "[1]"),
        ("null", "null"),
    ]

    @Test(arguments: failures)
    func failuresHaveTheSameKindAndPath(name: String, text: String) throws {
        try Self.expectAlike(Account.self, text, Self.decoder(snakeCase: true, dates: .secondsSince1970))
    }

    /// Two names that become one, and a name converted only by `JSONDecoder`: this decoder refuses the value, and a
    /// response decodes the bytes with `JSONDecoder`, which keeps the first of the two in the text. An object that is
    /// never decoded is never converted, and refuses nothing.
    @Test func namesThatBecomeOneAreLeftToJSONDecoder() async throws {
        struct User: Decodable, Equatable { let userId: Int }
        let options = try #require(JSONValueDecoder.Options(Self.decoder(snakeCase: true)))
        let cases = [
            (#"{"user_id": 1, "userId": 2}"#, 1, true),
            (#"{"userId": 2, "user_id": 1}"#, 2, true),
            (#"{"user_id": 1, "user__id": 3}"#, 1, true),
            (#"{"userId": 5, "a-b_c": 1}"#, 5, true),
            (#"{"userId": 5, "extra": {"a-b_c": 1, "x_y": 1, "xY": 2}}"#, 5, false),
        ]
        for (text, expected, refused) in cases {
            let parsed = try JSON(data: Data(text.utf8))
            if refused {
                #expect(throws: JSONValueDecoder.Unsupported.self) {
                    try JSONValueDecoder.decode(User.self, from: parsed, options: options)
                }
            } else {
                #expect(
                    try JSONValueDecoder.decode(User.self, from: parsed, options: options) == User(userId: expected))
            }
            let stub = StubEngine()
            stub.on(nil, "*", reply: .data(Data(text.utf8), headers: ["Content-Type": "application/json"]))
            let response = try await stubCenter(stub).0.send { $0.api = "u" }
            #expect(try response.decode(User.self, using: Self.decoder(snakeCase: true)) == User(userId: expected))
            #expect(
                try response.decode(User.self, using: Self.decoder(snakeCase: true))
                    == (try Self.decoder(snakeCase: true).decode(User.self, from: Data(text.utf8))))
        }
    }

    /// A refusal inside decoding that the type's own code catches (`try?`) still refuses the whole value: what the
    /// type made of the missing member may differ from what it makes of `JSONDecoder`'s.
    @Test func aRefusalTheTypeCatchesStillRefusesTheValue() async throws {
        struct Inner: Decodable, Equatable { let xY: Int }
        struct Lenient: Decodable, Equatable {
            let userId: Int
            let extra: Inner?
            enum CodingKeys: String, CodingKey { case userId, extra }
            init(from decoder: any Decoder) throws {
                let container = try decoder.container(keyedBy: CodingKeys.self)
                userId = try container.decode(Int.self, forKey: .userId)
                extra = try? container.decode(Inner.self, forKey: .extra)
            }
        }
        let text = #"{"user_id": 1, "extra": {"x_y": 7, "xY": 8}}"#
        let options = try #require(JSONValueDecoder.Options(Self.decoder(snakeCase: true)))
        #expect(throws: JSONValueDecoder.Unsupported.self) {
            try JSONValueDecoder.decode(Lenient.self, from: try JSON(data: Data(text.utf8)), options: options)
        }
        let expected = try Self.decoder(snakeCase: true).decode(Lenient.self, from: Data(text.utf8))
        #expect(expected.extra != nil)
        let stub = StubEngine()
        stub.on(nil, "*", reply: .data(Data(text.utf8), headers: ["Content-Type": "application/json"]))
        let response = try await stubCenter(stub).0.send { $0.api = "u" }
        #expect(try response.decode(Lenient.self, using: Self.decoder(snakeCase: true)) == expected)
    }

    /// JSON Lines with a snake-case decoder: each line decoded from its parsed value, or by `JSONDecoder` when a line
    /// has two names that become one.
    @Test func jsonLinesFollowTheKeyStrategy() async throws {
        struct User: Decodable, Equatable { let userId: Int }
        let stub = StubEngine()
        stub.on(
            nil, "*",
            reply: .data(Data("{\"user_id\": 1}\n{\"user_id\": 2, \"userId\": 3}\n".utf8), headers: [:]))
        let stream = try await stubCenter(stub).0.stream { $0.api = "lines" }
        var ids: [Int] = []
        for try await user in stream.jsonLines(User.self, decoder: Self.decoder(snakeCase: true)) {
            ids.append(user.userId)
        }
        #expect(ids == [1, 2])
    }

    // MARK: - Dates

    struct Stamp: Decodable, Equatable {
        let at: Date
        let list: [Date]
        let single: Single
    }

    /// A date read through a single-value container of its own.
    struct Single: Decodable, Equatable {
        let date: Date
        init(from decoder: any Decoder) throws {
            date = try decoder.singleValueContainer().decode(Date.self)
        }
    }

    static let isoTexts = [
        "2024-02-29T12:34:56Z", "2024-02-29T12:34:56+05:30", "2024-02-29T12:34:56.789Z", "2024-02-29",
        "2024-02-30T00:00:00Z", "20240229T123456Z", "2024-02-29 12:34:56Z", "", "not a date", "2024-02-29T12:34:56",
    ]

    @Test(arguments: isoTexts)
    func iso8601DatesDecodeAsJSONDecoderDecodesThem(text: String) throws {
        let decoder = Self.decoder(dates: .iso8601)
        let quoted = String(decoding: try JSONEncoder().encode(text), as: UTF8.self)
        // At the top, in an object, in an array and through a single-value container: each names its own path.
        try Self.expectAlike(Date.self, quoted, decoder)
        try Self.expectAlike(
            Stamp.self, #"{"at": \#(quoted), "list": ["2024-01-01T00:00:00Z"], "single": "2024-01-01T00:00:00Z"}"#,
            decoder)
        try Self.expectAlike(
            Stamp.self, #"{"at": "2024-01-01T00:00:00Z", "list": [\#(quoted)], "single": "2024-01-01T00:00:00Z"}"#,
            decoder)
        try Self.expectAlike(
            Stamp.self, #"{"at": "2024-01-01T00:00:00Z", "list": [], "single": \#(quoted)}"#, decoder)
    }

    @Test(arguments: ["0", "1700000000.25", "-1e3", "1e400", "\"1\"", "null", "true"])
    func numericDatesDecodeAsJSONDecoderDecodesThem(literal: String) throws {
        for dates in [JSONDecoder.DateDecodingStrategy.secondsSince1970, .millisecondsSince1970] {
            // A number too large for a `Double` (`1e400`) has no path from `JSONDecoder`: only the kind is compared.
            let decoder = Self.decoder(dates: dates)
            try Self.expectAlike(Date.self, literal, decoder, corruptedPath: false)
            try Self.expectAlike(
                Stamp.self, #"{"at": \#(literal), "list": [], "single": 0}"#, decoder, corruptedPath: false)
            try Self.expectAlike(
                Stamp.self, #"{"at": 0, "list": [1, \#(literal)], "single": 0}"#, decoder, corruptedPath: false)
        }
    }

    /// A missing date is named as a `Date`, as `JSONDecoder` names it, under every strategy followed here.
    @Test func aNullDateIsAMissingDate() throws {
        let strategies: [JSONDecoder.DateDecodingStrategy] = [
            .deferredToDate, .secondsSince1970, .millisecondsSince1970, .iso8601, .custom { _ in Date() },
        ]
        for dates in strategies {
            Self.expectMissing(
                Date.self, at: ["at"],
                try Self.both(Stamp.self, #"{"at": null, "list": [], "single": 0}"#, Self.decoder(dates: dates)))
        }
    }

    /// Expects both outcomes to be a missing value of `type` at `path`: the type named, not the one the value would
    /// have been read from.
    static func expectMissing<T>(
        _ type: Any.Type, at path: [String],
        _ outcomes: (foundation: Result<T, any Error>, switchboard: Result<T, any Error>),
        sourceLocation: SourceLocation = #_sourceLocation
    ) {
        for result in [outcomes.foundation, outcomes.switchboard] {
            guard case .failure(DecodingError.valueNotFound(let found, let context)) = result else {
                Issue.record("\(result)", sourceLocation: sourceLocation)
                continue
            }
            #expect(ObjectIdentifier(found) == ObjectIdentifier(type), sourceLocation: sourceLocation)
            #expect(context.codingPath.map(\.stringValue) == path, sourceLocation: sourceLocation)
        }
    }

    /// Through the center: a typed send with a snake-case decoder decodes the parsed body (a number past 2⁵³ stays
    /// exact in `JSON`), and gives `JSONDecoder`'s values.
    @Test func aTypedSendWithASnakeCaseDecoderGivesJSONDecodersValues() async throws {
        let stub = StubEngine()
        stub.on(nil, "*", reply: .data(Data(Self.accountText.utf8), headers: ["Content-Type": "application/json"]))
        let center = stubCenter(stub).0
        let decoder = Self.decoder(snakeCase: true, dates: .secondsSince1970)
        let account = try await center.send(
            Account.self, decoder: { Self.decoder(snakeCase: true, dates: .secondsSince1970) }
        ) {
            $0.api = "account"
        }
        #expect(account == (try decoder.decode(Account.self, from: Data(Self.accountText.utf8))))
    }
}
