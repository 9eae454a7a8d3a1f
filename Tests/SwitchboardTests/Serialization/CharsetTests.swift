import Foundation
import Testing
@testable import Switchboard
import SwitchboardTestSupport

/// Text in the charset its `Content-Type` names, on both engines: the loopback server sends back the bytes it gets,
/// with the type it gets. Chinese, Japanese and Korean text was read as UTF-8 whatever the charset said, and failed.
@Suite struct CharsetTests {
    static let samples: [(charset: String, bytes: [UInt8], text: String)] = [
        ("gbk", [0xC4, 0xE3, 0xBA, 0xC3], "你好"), ("GB2312", [0xC4, 0xE3, 0xBA, 0xC3], "你好"),
        ("gb18030", [0x81, 0x30, 0x81, 0x30], "\u{80}"), ("big5", [0xA7, 0x41, 0xA6, 0x6E], "你好"),
        ("Shift_JIS", [0x82, 0xB1, 0x82, 0xF1], "こん"), ("euc-kr", [0xBE, 0xC8, 0xB3, 0xE7], "안녕"),
        ("windows-1251", [0xCF, 0xF0, 0xE8], "При"), ("koi8-r", [0xF0, 0xD2, 0xC9], "При"),
        ("iso-8859-15", [0xA4], "€"), ("\"utf-8\"", [0xE2, 0x82, 0xAC], "€"),
    ]

    /// Sends `bytes` as a body of type `type` to the echo route and reads the answer with the `.string` serializer.
    static func echo(_ bytes: [UInt8], type: String, engineName: String) async throws -> Outcome {
        try await loopbackCenter(engineName).sendRecording { request in
            request.api = "echo-body"
            request.method = .post
            request.body = .data(Data(bytes), contentType: type)
            request.responseSerializer = .string
        }
    }

    @Test(arguments: bothEngines, samples.indices)
    func textIsReadInItsCharset(engineName: String, index: Int) async throws {
        let sample = Self.samples[index]
        let type = "text/plain; charset=\(sample.charset)"
        let outcome = try await Self.echo(sample.bytes, type: type, engineName: engineName)
        let response = try #require(outcome.response, "\(sample.charset): \(String(describing: outcome.error))")
        #expect(response.data == Data(sample.bytes))
        #expect(response.string == sample.text, "\(sample.charset)")
        #expect(response.value == .string(sample.text))
    }

    /// JSON in a declared charset that is not Unicode (`charset=GBK` from an older server) is read in it when the body
    /// is not UTF-8, as a value and by `decode`: it failed with "invalid UTF-8". A UTF-8 body is read as UTF-8 whatever
    /// its label says (servers label UTF-8 as ISO-8859-1 often enough), and one that is neither still fails.
    @Test(arguments: bothEngines)
    func jsonInADeclaredCharsetIsReadInIt(engineName: String) async throws {
        struct Greeting: Decodable, Equatable { var text: String; var n: Int }
        func send(_ bytes: [UInt8], _ type: String) async throws -> Outcome {
            try await loopbackCenter(engineName).sendRecording { request in
                request.api = "echo-body"
                request.method = .post
                request.body = .data(Data(bytes), contentType: type)
            }
        }
        // {"text":"你好","n":1} in GBK.
        let gbk = Array(#"{"text":""#.utf8) + [0xC4, 0xE3, 0xBA, 0xC3] + Array(#"","n":1}"#.utf8)
        let read = try #require(try await send(gbk, "application/json; charset=GBK").response)
        #expect(read.json?["text"]?.string == "你好")
        #expect(try read.decode(Greeting.self) == Greeting(text: "你好", n: 1))
        #expect(read.data == Data(gbk), "the body stays as it came")
        // ISO-8859-1 for real, and UTF-8 labelled ISO-8859-1.
        let latin1 = Array(#"{"text":"Zo"#.utf8) + [0xEB] + Array(#"","n":2}"#.utf8)
        let fromLatin1 = try await send(latin1, "application/json; charset=iso-8859-1")
        #expect(fromLatin1.response?.json?["text"]?.string == "Zoë")
        let mislabelled = try await send(Array(#"{"text":"Zoë","n":3}"#.utf8), "application/json; charset=iso-8859-1")
        #expect(mislabelled.response?.json?["text"]?.string == "Zoë")
        // An error status's body, which no serializer reads, reads so too: an older server's message in GBK.
        struct Failure: Decodable, Equatable { var text: String }
        let failed = try await loopbackCenter(engineName).sendRecording { request in
            request.api = "echo-body"
            request.method = .post
            request.body = .data(Data(gbk), contentType: "application/json; charset=GBK")
            request.acceptableStatusCodes = [201]
        }
        let refused = try #require(failed.error?.response)
        #expect(refused.json?["text"]?.string == "你好")
        #expect(try refused.decode(Failure.self) == Failure(text: "你好"))
        // Without a charset, a body that is not UTF-8 fails as before, naming the byte.
        let undeclared = try await send(latin1, "application/json")
        #expect(undeclared.error?.code == .decoding)
        #expect(undeclared.error?.message.contains("invalid UTF-8") == true)
    }

    /// A charset nobody knows is read as UTF-8 when the body is UTF-8; otherwise the error names it. A body that is
    /// not text in a charset Switchboard knows names that charset.
    @Test(arguments: bothEngines)
    func aCharsetThatCannotBeReadIsNamed(engineName: String) async throws {
        let utf8 = try await Self.echo(
            Array("ok €".utf8), type: "text/plain; charset=x-unheard-of", engineName: engineName)
        #expect(utf8.response?.string == "ok €")
        let unknown = try await Self.echo(
            [0xA4, 0xB3], type: "text/plain; charset=x-unheard-of", engineName: engineName)
        #expect(unknown.error?.code == .decoding)
        #expect(unknown.error?.message.contains("\"x-unheard-of\" is not one Switchboard reads") == true)
        let broken = try await Self.echo(
            [0xFD, 0xFE, 0xFF], type: "text/plain; charset=Shift_JIS", engineName: engineName)
        #expect(broken.error?.code == .decoding)
        #expect(broken.error?.message.contains("(shift_jis)") == true, "\(String(describing: broken.error))")
    }

    /// A combining mark after a `;` of the `Content-Type` joined it into one character, so the charset ran on into
    /// the next parameter (`iso-8859-1;` U+0301 `x`), was unknown, and the body failed to read. The parameters are
    /// split by scalar now, on both engines.
    @Test(arguments: bothEngines)
    func aCombiningMarkAfterASemicolonDoesNotJoinTheCharsetToTheNextParameter(engineName: String) async throws {
        let server = try LoopbackServer { _ in
            ServerResponse(headers: [("Content-Type", "text/plain; charset=iso-8859-1;\u{301}x")], body: Data([0xA3]))
        }
        defer { server.stop() }
        let outcome = try await loopbackCenter(engineName, server: server).sendRecording { request in
            request.api = "price"
            request.responseSerializer = .string
        }
        #expect(outcome.response?.string == "£", "\(engineName): \(String(describing: outcome.error))")
        #expect(ResponseDecoding.charset(of: "text/plain; charset=iso-8859-1;\u{301}x") == "iso-8859-1")
        #expect(ResponseDecoding.charset(of: "text/plain;\u{301}charset=gbk") == nil, "not a parameter named charset")
    }

    /// A byte order mark decides the encoding whatever the label says, and is not part of the text (WHATWG, as
    /// browsers read): UTF-16 labelled UTF-8 failed, and UTF-8 labelled ISO-8859-1 came out garbled.
    @Test(arguments: bothEngines)
    func aByteOrderMarkDecidesTheEncoding(engineName: String) async throws {
        let cases: [(bytes: [UInt8], type: String, text: String)] = [
            ([0xFF, 0xFE, 0x68, 0x00, 0xE9, 0x00], "text/plain; charset=utf-8", "hé"),
            ([0xFE, 0xFF, 0x00, 0x68, 0x00, 0xE9], "text/plain; charset=windows-1252", "hé"),
            ([0xEF, 0xBB, 0xBF] + Array("héllo".utf8), "text/plain; charset=iso-8859-1", "héllo"),
            ([0xEF, 0xBB, 0xBF] + Array("héllo".utf8), "text/plain", "héllo"),
        ]
        for sample in cases {
            let outcome = try await Self.echo(sample.bytes, type: sample.type, engineName: engineName)
            #expect(
                outcome.response?.value == .string(sample.text), "\(sample.type): \(String(describing: outcome.error))")
            #expect(outcome.response?.string == sample.text, "\(sample.type)")
        }
        // A UTF-8 mark before bytes that are not UTF-8 says so, whatever the label.
        let broken = try await Self.echo(
            [0xEF, 0xBB, 0xBF, 0xFF], type: "text/plain; charset=iso-8859-1", engineName: engineName)
        #expect(broken.error?.code == .decoding)
        #expect(broken.error?.message.contains("UTF-8 byte order mark") == true, "\(String(describing: broken.error))")
        // A mark alone is an empty text.
        let alone = try await Self.echo([0xFE, 0xFF], type: "text/plain; charset=utf-8", engineName: engineName)
        #expect(alone.response?.value == .string(""), "\(String(describing: alone.error))")
    }
}
