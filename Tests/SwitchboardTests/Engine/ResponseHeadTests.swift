import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
@testable import Switchboard
import SwitchboardTestSupport

/// Response heads that HTTP allows but that are not plain ASCII lines ending in CRLF (the loopback server's
/// `/fault/…-header` routes), on both engines: a field value reaches the caller unchanged, or the request fails with
/// an error that says why.
@Suite struct ResponseHeadTests {
    static func send(_ engineName: String, _ api: String) async throws -> (response: Response?, error: HTTPError?) {
        let outcome = try await FaultTests.center(engineName).sendRecording { request in
            request.api = api
            request.responseSerializer = .string
        }
        return (outcome.response, outcome.error)
    }

    /// A value in UTF-8 arrives as the same text on both engines.
    @Test(arguments: bothEngines)
    func aUTF8ValueArrivesUnchanged(engineName: String) async throws {
        let (response, error) = try await Self.send(engineName, "utf8-header")
        #expect(error == nil, "\(String(describing: error))")
        #expect(response?.headers["X-Name"].map { Array($0.utf8) } == Array("caf\u{E9} \u{2615}".utf8))
        #expect(response?.string == "ok")
    }

    /// A field folded onto a second line (obs-fold) arrives with the fold as one space on both engines (RFC 9112
    /// section 5.2); CurlEngine dropped the second line.
    @Test(arguments: bothEngines)
    func aFoldedFieldArrivesJoined(engineName: String) async throws {
        let (response, error) = try await Self.send(engineName, "folded-header")
        #expect(error == nil, "\(String(describing: error))")
        #expect(response?.headers["X-Name"] == "first second")
        #expect(response?.headers["Connection"] == "close")
    }

    /// A field repeated under names that differ only in case arrives joined, as repeated fields are, on both engines;
    /// on URLSessionEngine the last spelling replaced the others (URLSession keeps them apart).
    @Test(arguments: bothEngines)
    func aFieldRepeatedInAnotherCaseKeepsEveryValue(engineName: String) async throws {
        let (response, error) = try await Self.send(engineName, "repeated-header")
        #expect(error == nil, "\(String(describing: error))")
        #expect(response?.headers["X-Name"] == "a, b, c")
    }

    /// The blanks around a value are not part of it (RFC 9110 section 5.5), on both engines; URLSessionEngine kept
    /// the trailing ones.
    @Test(arguments: bothEngines)
    func aValueLosesTheBlanksAroundIt(engineName: String) async throws {
        let (response, error) = try await Self.send(engineName, "padded-header")
        #expect(error == nil, "\(String(describing: error))")
        #expect(response?.headers["X-Name"] == "v w")
        #expect(response?.headers["X-Empty"] == "")
    }

    /// Heads other clients read that URLSession on Linux refuses: a value in ISO-8859-1 (obs-text), lines that end
    /// in a bare LF (which RFC 9112 lets a recipient accept), a status line without a reason phrase, a space before a
    /// field's colon (which a proxy removes, RFC 9112 section 5.1), none after it (`X-Name:v`, which RFC 9110 allows:
    /// the blank is optional). CurlEngine reads each, the ISO-8859-1 value one character per byte (`é` is U+00E9, not
    /// the replacement character it was) and the name without the space; URLSession's failure says why instead of
    /// libcurl's bare "Failed writing header".
    @Test(
        arguments: bothEngines,
        ["latin1-header", "lf-header", "no-reason-phrase", "space-before-colon", "no-space-after-colon"])
    func aHeadOtherClientsReadIsReadOrFailsClearly(engineName: String, api: String) async throws {
        let (response, error) = try await Self.send(engineName, api)
        if engineName == "URLSessionEngine", Self.sessionRefusesSomeHeads {
            #expect(response == nil)
            #expect(error?.code == .transport)
            #expect(error?.message.contains("could not read the response head") == true, "\(String(describing: error))")
            return
        }
        let expected: [String: [UInt32]] = [
            "latin1-header": [0x63, 0x61, 0x66, 0xE9], "lf-header": [0x6C, 0x66], "no-reason-phrase": [0x76],
            "space-before-colon": [0x76], "no-space-after-colon": [0x76],
        ]
        #expect(error == nil, "\(String(describing: error))")
        #expect(response?.status == 200)
        #expect(response?.headers.first { $0.name == "X-Name" }?.value.unicodeScalars.map(\.value) == expected[api])
        #expect(response?.string == "ok")
    }

    /// A field whose name is empty or not a token (RFC 9110 section 5.1: `: v`, `X Name: v`, a separator, a quote, a
    /// letter beyond ASCII) makes the head not HTTP: both engines fail the request with the same cause,
    /// `cannotParseResponse`. URLSession refused such a head; CurlEngine kept a field named "" or `X Name`.
    @Test(arguments: bothEngines, [": value", "X Name: v", "X(Name): v", "\"Q\": v", "X-N\u{E4}me: v", "X/Y: v"])
    func aFieldNameThatIsNotATokenFailsTheHead(engineName: String, line: String) async throws {
        let query = try #require(line.addingPercentEncoding(withAllowedCharacters: .alphanumerics))
        let (response, error) = try await Self.send(engineName, "field-line?line=" + query)
        #expect(response == nil, "\(engineName) \(line.debugDescription): \(response?.headers.map(\.name) ?? [])")
        #expect(error?.code == .transport, "\(engineName) \(line.debugDescription)")
        #expect(
            (error?.underlying as? URLError)?.code == .cannotParseResponse,
            "\(engineName) \(line.debugDescription): \(error?.message ?? "no error")")
    }

    /// A field longer than libcurl reads (100 KB) fails the exchange on both engines with the same code and words that
    /// say so: libcurl's own were only "Out of memory", which sent readers looking for a memory problem of their own.
    /// A field just under the limit is read.
    @Test(arguments: bothEngines)
    func aFieldLongerThanLibcurlReadsFailsClearly(engineName: String) async throws {
        let server = try LoopbackServer { request in
            let length = request.path == "/long" ? 200_000 : 90_000
            var response = ServerResponse()
            response.rawHead = Data(
                ("HTTP/1.1 200 OK\r\nContent-Length: 2\r\nX-Long: " + String(repeating: "a", count: length)
                    + "\r\n\r\n").utf8)
            response.body = Data("ok".utf8)
            return response
        }
        defer { server.stop() }
        let center = try loopbackCenter(engineName, server: server)
        let outcome = await center.sendRecording {
            $0.api = "long"; $0.responseSerializer = .string
        }
        #expect(outcome.error?.code == .transport, "\(engineName)")
        #expect((outcome.error?.underlying as? URLError)?.code == .badServerResponse, "\(engineName)")
        #expect(
            outcome.error?.message.contains("the response head has a field longer than libcurl reads (100 KB)") == true,
            "\(engineName): \(outcome.error?.message ?? "no error")")
        let read = try await center.send {
            $0.api = "shorter"; $0.responseSerializer = .string
        }
        #expect(read.headers["X-Long"]?.utf8.count == 90_000)
        #expect(read.string == "ok")
    }

    /// A status line whose protocol is in lower case (`http/1.1 200 OK`) is read on both engines, as libcurl reads it
    /// (CurlEngine read only `HTTP/`, and failed the request with "the operation could not be completed").
    @Test(arguments: bothEngines)
    func aLowerCaseStatusLineIsRead(engineName: String) async throws {
        let (response, error) = try await Self.send(engineName, "lowercase-status")
        #expect(error == nil, "\(String(describing: error))")
        #expect(response?.status == 200)
        #expect(response?.string == "ok")
    }

    /// A `101 Switching Protocols` no request asked for ends the exchange without a final response, on both engines
    /// with the same words (URLSession handed the `101` over as the answer, with the other protocol's bytes as its
    /// body; CurlEngine failed with "the operation could not be completed").
    @Test(arguments: bothEngines)
    func anUnaskedUpgradeIsNoAnswer(engineName: String) async throws {
        let (response, error) = try await Self.send(engineName, "unasked-upgrade")
        #expect(response == nil)
        #expect(error?.code == .transport)
        #expect(
            error?.message.contains("answered 101 Switching Protocols, an interim response") == true,
            "\(String(describing: error))")
    }

    /// A `Content-Length` that is not one whole number (values that differ, as two fields or a list in one; text
    /// that is not digits; a number too large for any body) fails the exchange on both engines, the same way, for an
    /// answer, a redirect and a `401`, whether the body is watched (URLSession's delegate) or taken whole (its
    /// completion handler): both engines read the last value, or the digits before anything else, and delivered that
    /// many bytes (for a number too large, whatever came). The same value repeated is that value, and blanks around
    /// it and leading zeros change nothing. (Each answer here sends its whole body: one cut short after such a head is
    /// a lost connection on URLSessionEngine's completion-handler path, which URLSession gives no head with an error.)
    @Test(arguments: bothEngines)
    func aContentLengthThatIsNotOneNumberFailsTheExchange(engineName: String) async throws {
        let center = try FaultTests.center(engineName)
        let refused = [
            "fields=5%7C6", "fields=6%7C5", "fields=5,6", "fields=5%7C6&status=302", "fields=5%7C6&status=401",
            "fields=5abc", "fields=5%206", "fields=%2B5", "fields=99999999999999999999", "fields=5%7C5abc",
        ]
        for query in refused {
            let configure: (inout Request) -> Void = { request in
                request.api = "lengths?" + query
                request.responseSerializer = .raw
                request.acceptableStatusCodes = Set(200..<600)
            }
            let watched = await center.sendRecording(configure).error
            var whole: HTTPError?
            do { _ = try await center.send(configure) } catch { whole = error }
            for (form, error) in [("watched", watched), ("whole", whole)] {
                #expect(error?.code == .transport, "\(engineName) \(query): \(String(describing: error))")
                #expect((error?.underlying as? URLError)?.code == .badServerResponse, "\(engineName) \(query) \(form)")
                #expect(
                    error?.message.contains("Content-Length is not one whole number") == true,
                    "\(engineName) \(query) \(form)")
            }
        }
        for query in ["fields=5%7C5", "fields=5,%205", "fields=0005", "fields=%205%09"] {
            let response = try await center.send { request in
                request.api = "lengths?" + query
                request.responseSerializer = .raw
            }
            #expect(response.data == Data("xxxxx".utf8), "\(engineName) \(query)")
        }
    }

    /// The rule for received header bytes, without a server: ASCII and UTF-8 as UTF-8, anything else byte for byte.
    @Test func receivedHeaderBytesAreNeverReplaced() {
        func text(_ bytes: [UInt8]) -> String { bytes.withUnsafeBytes { HTTPHeaders.receivedText($0) } }
        #expect(text(Array("plain".utf8)) == "plain")
        #expect(text([0x63, 0xC3, 0xA9]) == "c\u{E9}")  // UTF-8 é
        #expect(text([0x63, 0xE9]).unicodeScalars.map(\.value) == [0x63, 0xE9])  // ISO-8859-1 é
        #expect(text([0xC3]).unicodeScalars.map(\.value) == [0xC3])  // a cut UTF-8 sequence
        #expect(text([0xFF, 0x80]).unicodeScalars.map(\.value) == [0xFF, 0x80])
        #expect(text([]) == "")
    }

    /// A `Content-Length` value is digits with blanks around them, and a number an `Int64` holds; anything else is
    /// none.
    @Test func aContentLengthIsDigitsAndNothingElse() {
        let lengths: [(String, Int64?)] = [
            ("54", 54), (" 12 ", 12), ("\t7\t", 7), ("0005", 5), ("0", 0), ("9223372036854775807", .max),
            ("9223372036854775808", nil), ("99999999999999999999", nil), ("", nil), (" ", nil), ("5 6", nil),
            ("+5", nil), ("-1", nil), ("1a", nil), ("5,5", nil), ("\u{0665}", nil),
        ]
        for (text, length) in lengths {
            #expect(HTTPHeaders.contentLength(text) == length, "\(text.debugDescription)")
        }
    }

    /// Fields kept as received bytes read as the fields made from them: a repeated name joined in arrival order,
    /// names without case, a folded line as one space, text by `receivedText`'s rule; a change makes them fields.
    @Test func receivedFieldsReadAsTheFieldsMadeFromThem() {
        var received = ReceivedFields()
        func add(_ name: String, _ value: [UInt8]) {
            Array(name.utf8).withUnsafeBytes { name in value.withUnsafeBytes { received.append(name: name, value: $0) }
            }
        }
        add("Content-Type", Array("text/plain".utf8))
        add("X-Many", Array("a".utf8))
        add("Empty", [])
        Array("folded".utf8).withUnsafeBytes { received.continueLast($0) }
        add("x-many", Array("b".utf8))
        Array("c".utf8).withUnsafeBytes { received.continueLast($0) }
        add("Latin", [0x63, 0xE9])
        let headers = HTTPHeaders(received: received)
        #expect(headers["content-type"] == "text/plain")
        #expect(headers["X-MANY"] == "a, b c")
        #expect(headers["Empty"] == "folded")
        #expect(headers["Latin"]?.unicodeScalars.map(\.value) == [0x63, 0xE9])
        #expect(headers["Content-Typ"] == nil && headers["Missing"] == nil)
        #expect(headers.count == 4)
        #expect(headers.map(\.name) == ["Content-Type", "X-Many", "Empty", "Latin"])
        var built: HTTPHeaders = ["Content-Type": "text/plain", "X-Many": "a, b c", "Empty": "folded"]
        built["Latin"] = "c\u{E9}"
        #expect(headers == built && headers.hashValue == built.hashValue)
        var changed = headers
        changed["x-many"] = nil
        changed["New"] = "1"
        #expect(changed.map(\.name) == ["Content-Type", "Empty", "Latin", "New"])
        #expect(headers["X-Many"] == "a, b c", "the original keeps its fields")
        #expect(HTTPHeaders(received: ReceivedFields()).isEmpty && !headers.isEmpty)

        // Lengths past 127 take more than a byte; a buffer past its first capacity grows, and a copy taken before
        // keeps what it had.
        let before = received
        let long = String(repeating: "v", count: 700)
        add(String(repeating: "n", count: 130), Array(long.utf8))
        Array("w".utf8).withUnsafeBytes { received.continueLast($0) }
        let grown = HTTPHeaders(received: received)
        #expect(grown[String(repeating: "N", count: 130)] == long + " w" && grown["latin"] == headers["Latin"])
        #expect(HTTPHeaders(received: before) == headers)
    }

    /// Whether this platform's URLSession stops at the heads these tests send that HTTP clients otherwise read
    /// (swift-corelibs-foundation does; Apple platforms are not tested here).
    static var sessionRefusesSomeHeads: Bool {
        #if canImport(FoundationNetworking)
        true
        #else
        false
        #endif
    }
}
