import Foundation
import Testing
@testable import Switchboard

/// The JSON parser against Foundation's: the same values for valid text, an error (never a crash) for the rest.
@Suite struct JSONParserTests {
    static func foundation(_ text: String) throws -> JSON {
        try JSON(foundation: JSONSerialization.jsonObject(with: Data(text.utf8), options: [.fragmentsAllowed]))
    }

    static let valid = [
        #"{"ok":true,"message":"hello from the loopback server"}"#,
        #"  [1, -2, 3.5, -0.25, 1e3, 2E-2, 6.02e+23, 0, -0, 12345678901234567890]  "#,
        #"{"nested":{"list":[{"a":null},{"b":false}],"empty":{},"none":[]}}"#,
        #""escapes \" \\ \/ \b \f \n \r \t \u0041 \u00e9 \u20ac \ud83c\udf89""#,
        #"{"unicode":"ümlaut ß 日本語 🎉","key with spaces":"v"}"#,
        // Escaped keys and values one after another, long and short (each is unescaped in the same buffer).
        #"{"\u5f20\u4e09\u674e\u56db\u738b\u4e94":"\u5317","b\n":["x\ty","\ud83d\ude00 ok","\u0000","plain"],"c":"\/"}"#,
        #"{"dup":1,"dup":2}"#,
        "42", "true", "null", #""""#, "[]", "{}", "\u{FEFF}{\"bom\":1}",
    ]

    @Test(arguments: valid)
    func validTextParsesAsFoundationDoes(text: String) throws {
        let ours = try JSON(data: Data(text.utf8))
        #expect(ours == (try Self.foundation(text)))
    }

    static let invalid = [
        "", " ", "{", "[1,]", "{\"a\":1,}", "[1 2]", "{\"a\" 1}", "{a:1}", "01", "-", "1.", ".5", "1e", "+1", "NaN",
        "Infinity", "tru", "nul", "[1]x", "\"unterminated", "\"bad \\x escape\"", "\"\\u12\"", "\"\\ud83c\"",
        "\"\\udf89\"", "\"tab\tinside\"", "// comment\n1", "[1,,2]", "{\"a\":1 \"b\":2}",
    ]

    @Test(arguments: invalid)
    func invalidTextFailsWithADecodingError(text: String) {
        #expect(throws: HTTPError.self) { try JSON(data: Data(text.utf8)) }
        do {
            _ = try JSON(data: Data(text.utf8))
        } catch {
            #expect(error.code == .decoding)
        }
    }

    /// Invalid sequences (a broken pair, a truncated one, an overlong `/`, a surrogate, a lone continuation byte,
    /// past U+10FFFF), in a plain string (within its first eight bytes and past them) and in one with an escape; and a
    /// replacement character sent as such is kept.
    @Test(arguments: [
        [0xC3, 0x28], [0xE5, 0xBC], [0xC0, 0xAF], [0xED, 0xA0, 0x80], [0x80], [0xF4, 0x90, 0x80, 0x80],
    ])
    func invalidUTF8InAStringIsRefused(sequence: [UInt8]) throws {
        for prefix in [#"{"a":"x"#, #"{"a":"x\n"#, #"{"a":"eight or more bytes "#] {
            let bytes = Array(prefix.utf8) + sequence + Array(#""}"#.utf8)
            #expect(throws: HTTPError.self) { try JSON(data: Data(bytes)) }
        }
        let replacement = Array(#"{"a":"x\#u{FFFD}y"}"#.utf8)
        #expect(try JSON(data: Data(replacement))["a"]?.string == "x\u{FFFD}y")
    }

    /// A string's end, an escape, a control character, a byte of 0x7F, a letter of two, three and four bytes and a
    /// byte that is not UTF-8 at every place of the eight-byte words a string is scanned in, and past them: each is
    /// read as it is bytewise.
    @Test func everyPlaceInAScannedWordIsRead() throws {
        for length in 0..<20 {
            let lead = String(repeating: "a", count: length)
            #expect(try JSON(data: Data(#""\#(lead)""#.utf8)) == .string(lead))
            #expect(try JSON(data: Data(#""\#(lead)\"q\\""#.utf8)) == .string(lead + "\"q\\"))
            for letter in ["\u{7F}", "é", "张", "🎉", "~ "] {
                let text = lead + letter + "bcdefghij"
                #expect(try JSON(data: Data(#""\#(text)""#.utf8)) == .string(text))
            }
            for control: UInt8 in [0x00, 0x0A, 0x1F] {
                let bytes = Array(#""\#(lead)"#.utf8) + [control] + Array(#"bcdefghij""#.utf8)
                #expect(throws: HTTPError.self) { try JSON(data: Data(bytes)) }
            }
            // Not a string's end: the scan stops at the quote, not before or after it.
            #expect(throws: HTTPError.self) { try JSON(data: Data(#""\#(lead)"x""#.utf8)) }
            // A letter, or a byte that is not UTF-8, just before the end, in the word that holds the quote.
            for letter in ["é", "张", "🎉"] {
                #expect(try JSON(data: Data(#""\#(lead + letter)""#.utf8)) == .string(lead + letter))
            }
            let broken = Array(#""\#(lead)"#.utf8) + [0xFF, UInt8(ascii: "\"")]
            #expect(throws: HTTPError.self) { try JSON(data: Data(broken)) }
        }
    }

    @Test func deepNestingFailsInsteadOfOverflowingTheStack() {
        let deep = String(repeating: "[", count: 100_000) + String(repeating: "]", count: 100_000)
        #expect(throws: HTTPError.self) { try JSON(data: Data(deep.utf8)) }
        let allowed =
            String(repeating: "[", count: JSONParser.maximumDepth)
            + String(repeating: "]", count: JSONParser.maximumDepth)
        #expect((try? JSON(data: Data(allowed.utf8))) != nil)
    }

    @Test func utf16TextIsReadToo() throws {
        let text = #"{"wide":"ü"}"#
        let data = try #require(text.data(using: .utf16LittleEndian))
        #expect(try JSON(data: data) == ["wide": "ü"])
    }

    /// Random single-byte changes to valid documents: never a crash, and whatever both parsers accept, they read
    /// alike.
    @Test func mutatedDocumentsNeverCrashAndAgreeWithFoundation() throws {
        var generator = SystemRandomNumberGenerator()
        let alphabet = Array(#"{}[]",:0123456789-+.eEtrufalsn \"\\u/x"#.utf8) + [0x00, 0x1F, 0xC3, 0xFF]
        var accepted = 0
        for _ in 0..<3000 {
            var bytes = Array(Self.valid.randomElement(using: &generator)!.utf8)
            guard !bytes.isEmpty else { continue }
            for _ in 0..<Int.random(in: 1...3, using: &generator) {
                let position = Int.random(in: 0..<bytes.count, using: &generator)
                switch Int.random(in: 0..<3, using: &generator) {
                case 0: bytes[position] = alphabet.randomElement(using: &generator)!
                case 1: bytes.remove(at: position)
                default: bytes.insert(alphabet.randomElement(using: &generator)!, at: position)
                }
                if bytes.isEmpty { break }
            }
            let data = Data(bytes)
            guard let ours = bytes.withUnsafeBytes({ try? JSONParser.parse($0).value }) else { continue }
            accepted += 1
            if let object = try? JSONSerialization.jsonObject(with: data, options: [.fragmentsAllowed]) {
                // Foundation on Linux reads integers beyond 2^64 through `Decimal`, a few units off the nearest
                // `Double`; the parser here rounds correctly, so numbers compare to 12 significant digits.
                #expect(Self.alike(ours, try JSON(foundation: object)), "\(String(decoding: bytes, as: UTF8.self))")
            }
        }
        #expect(accepted > 0)
    }

    static func alike(_ a: JSON, _ b: JSON) -> Bool {
        switch (a, b) {
        case (.number(let x), .number(let y)):
            return x == y || abs(x.double - y.double) <= 1e-12 * max(abs(x.double), abs(y.double))
        case (.array(let x), .array(let y)):
            return x.count == y.count && zip(x, y).allSatisfy { alike($0, $1) }
        case (.object(let x), .object(let y)):
            return x.count == y.count && x.allSatisfy { key, value in y[key].map { alike(value, $0) } ?? false }
        default:
            return a == b
        }
    }

    /// A JSON body of nothing but spaces and line breaks (what some servers send for "no content") reads as an
    /// empty one: no value, and an optional decodes as `nil`. It failed as JSON that ended too soon.
    @Test func aBodyOfOnlyWhitespaceIsNoValue() async throws {
        let stub = StubEngine()
        stub.on(nil, "*") { _ in .data(Data(" \r\n\t\n".utf8), headers: ["Content-Type": "application/json"]) }
        let (center, _) = stubCenter(stub)
        let response = try await center.send { $0.api = "blank" }
        #expect(response.value == .empty)
        #expect(response.json == nil)
        #expect(try await center.send([String: Int]?.self) { $0.api = "blank" } == nil)
        await #expect(throws: HTTPError.self) { try await center.send([String: Int].self) { $0.api = "blank" } }
        // Text keeps it: whitespace is content there.
        let text = try await center.send {
            $0.api = "blank"; $0.responseSerializer = .string
        }
        #expect(text.value == .string(" \r\n\t\n"))
    }
}
