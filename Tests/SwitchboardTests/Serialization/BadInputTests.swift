import Foundation
import Testing
@testable import Switchboard

/// Input that cannot be sent fails with a clear `HTTPError` before anything reaches the engine, and never crashes.
@Suite struct BadInputTests {
    func expectEncodingError(
        _ configure: @escaping @Sendable (inout Request) -> Void, mentions: String,
        sourceLocation: SourceLocation = #_sourceLocation
    ) async {
        let (center, stub) = stubCenter()
        stub.on(nil, "*", reply: .status(200))
        let outcome = await center.sendRecording(configure)
        #expect(outcome.error?.code == .encoding, sourceLocation: sourceLocation)
        #expect(
            outcome.error?.message.contains(mentions) == true, "\(outcome.error?.message ?? "no error")",
            sourceLocation: sourceLocation)
        #expect(outcome.error?.request?.id == outcome.id, sourceLocation: sourceLocation)
        #expect(outcome.events == ["failure:encoding", "finished"], sourceLocation: sourceLocation)
        #expect(stub.requests.isEmpty, sourceLocation: sourceLocation)
    }

    /// A form part's MIME type goes into the part's head: one with a line break would add fields of its own there.
    @Test(arguments: ["text/plain\r\nX-Admin: 1", "text/plain\nX-Admin: 1", "text/plain\r", "text/\0plain"])
    func aFormPartMIMETypeWithALineBreak(type: String) async {
        await expectEncodingError(
            { request in
                request.api = "upload"
                request.kind = .upload
                request.addFormData(name: "doc", data: Data("x".utf8), fileName: "a.txt", mimeType: type)
            }, mentions: "the form part \"doc\" has a MIME type with a line break or NUL")
    }

    @Test func aDateParameter() async {
        await expectEncodingError(
            {
                $0.api = "x"; $0.parameters = ["since": Date() as any Sendable]
            }, mentions: "\"since\" is a Date")
    }

    @Test func aNestedDateParameterIsNamedByItsPath() async {
        await expectEncodingError(
            {
                $0.api = "x";
                $0.parameters = ["filter": ["range": [1, Date()] as [any Sendable]] as [String: any Sendable]]
            },
            mentions: "\"filter.range[1]\" is a Date")
    }

    @Test func nanInJSON() async {
        await expectEncodingError(
            {
                $0.api = "x"; $0.method = .post; $0.requestSerializer = .json; $0.parameters = ["ratio": Double.nan]
            },
            mentions: "\"ratio\" is nan")
    }

    @Test func infinityInJSON() async {
        await expectEncodingError(
            {
                $0.api = "x"; $0.method = .post; $0.requestSerializer = .json; $0.parameters = ["v": [Double.infinity]]
            },
            mentions: "\"v[0]\" is inf")
    }

    @Test func aNilParameter() async {
        let missing: String? = nil
        await expectEncodingError(
            {
                $0.api = "x"; $0.parameters = ["name": missing]
            }, mentions: "\"name\" is nil")
    }

    @Test func aParameterOfAnUnsupportedType() async {
        struct Point: Sendable { var x = 1 }
        await expectEncodingError(
            {
                $0.api = "x"; $0.parameters = ["p": Point()]
            }, mentions: "of type Point")
    }

    @Test func nullInAPropertyList() async {
        await expectEncodingError(
            {
                $0.api = "x"; $0.method = .post; $0.requestSerializer = .plist; $0.parameters = ["n": JSON.null]
            },
            mentions: "\"n\" is null")
    }

    /// A property list's numbers are 64-bit integers and doubles: a number with more digits than a double holds was
    /// sent rounded, without a word (12345678901234567890.12 as 1.2345678901234567e+19).
    @Test(arguments: [
        ("dec", Decimal(string: "12345678901234567890.12")! as any Sendable),
        ("big", JSON.number(JSON.Number(text: "123456789012345678901234567890")!) as any Sendable),
        ("tiny", JSON.number(JSON.Number(text: "1e-400")!) as any Sendable),
    ])
    func aNumberAPropertyListCannotHoldExactly(name: String, value: any Sendable) async {
        await expectEncodingError(
            {
                $0.api = "x"; $0.method = .post; $0.requestSerializer = .plist; $0.parameters = ["list": [name: value]]
            },
            mentions: "parameter \"list.\(name)\" is")
    }

    @Test func anEncodableBodyThatFailsToEncode() async {
        struct Reading: Encodable, Sendable { var value = Double.nan }
        await expectEncodingError(
            {
                $0.api = "x"; $0.method = .post; $0.body = .json(Reading())
            }, mentions: "could not be encoded")
    }

    @Test func aBodyOnAGet() async {
        await expectEncodingError(
            {
                $0.api = "x"; $0.body = .string("hi")
            }, mentions: "GET request cannot carry a body")
    }

    @Test func aHeaderWithALineBreak() async {
        await expectEncodingError(
            {
                $0.api = "x"; $0.headers["X-Evil"] = "a\r\nInjected: yes"
            }, mentions: "header \"X-Evil\"")
    }

    @Test func anInvalidMethodToken() async {
        await expectEncodingError(
            {
                $0.api = "x"; $0.method = "GE T"
            }, mentions: "not a valid HTTP method")
    }

    /// A timeout of zero or less: each engine took zero for a millisecond (whether a request on loopback beat it
    /// depended on the engine), and URLSession took a negative idle timeout for none.
    @Test func aTimeoutThatIsNotLongerThanZero() async {
        let cases: [(idle: Duration?, total: Duration?, words: String)] = [
            (.zero, nil, "timeout is 0.0 seconds"), (.seconds(-1), nil, "must be longer than zero"),
            (nil, .zero, "totalTimeout is 0.0 seconds"), (nil, .seconds(-5), "must be longer than zero"),
        ]
        for (idle, total, words) in cases {
            let configure: @Sendable (inout Request) -> Void = { request in
                request.api = "x"
                request.timeout = idle
                request.totalTimeout = total
            }
            await expectEncodingError(configure, mentions: words)
        }
    }

    @Test func aResponseThatIsNotAPropertyList() async {
        let stub = StubEngine()
        stub.on(nil, "*", reply: .string("not a plist"))
        let (center, _) = stubCenter(stub)
        let outcome = await center.sendRecording {
            $0.api = "x"; $0.responseSerializer = .plist
        }
        #expect(outcome.error?.code == .decoding)
        #expect(outcome.error?.message.contains("not a property list") == true)
    }

    @Test func aResponseThatIsNotXML() async {
        let stub = StubEngine()
        stub.on(nil, "*", reply: .string("<open><unclosed></open>"))
        let (center, _) = stubCenter(stub)
        let outcome = await center.sendRecording {
            $0.api = "x"; $0.responseSerializer = .xml
        }
        #expect(outcome.error?.code == .decoding)
        #expect(outcome.error?.message.contains("not well-formed XML") == true)
    }

    /// A body that does not decode, under a `Content-Type` with nothing before its first `;` (or no value at all), is
    /// a `.decoding` failure like any other: describing the response for the error's message took the part before
    /// the `;`, which there is not, and stopped the process.
    @Test(arguments: [";", "", " ; charset=utf-8", ";;"])
    func anUndecodableBodyUnderAnEmptyContentType(contentType: String) async {
        let stub = StubEngine()
        stub.on(nil, "*", reply: .data(Data("not json".utf8), headers: ["Content-Type": contentType]))
        let (center, _) = stubCenter(stub)
        let outcome = await center.sendRecording {
            $0.api = "x"; $0.responseSerializer = .json
        }
        #expect(outcome.error?.code == .decoding, "\(String(reflecting: contentType))")
        #expect(outcome.error?.message.contains("8 bytes") == true, "\(outcome.error?.message ?? "")")
    }

    @Test func decodingTheWrongTypeNamesThePath() async throws {
        struct User: Decodable { var name: String; var age: Int }
        let stub = StubEngine()
        stub.on(nil, "*", reply: .json(["name": "Ada", "age": "old"]))
        let (center, _) = stubCenter(stub)
        let error = await #expect(throws: HTTPError.self) {
            _ = try await center.send(User.self) { $0.api = "x" }
        }
        #expect(error?.code == .decoding)
        #expect(error?.message.contains("expected Int at .age") == true, "\(error?.message ?? "")")
        #expect(error?.response?.status == 200)
    }
}

@Suite struct RequestEncodingTests {
    func encoded(_ configure: (inout Request) -> Void) throws -> EngineRequest {
        var request = Request(configure)
        request.url = try URLComposition.compose(request).text
        return try RequestEncoding.encode(request)
    }

    func body(_ request: EngineRequest) -> String {
        if case .data(let data) = request.body { String(decoding: data, as: UTF8.self) } else { "" }
    }

    @Test func formEncodingNestsArraysAndDictionariesAndEscapes() throws {
        let request = try encoded { request in
            request.url = "http://x.com/p"
            request.method = .post
            request.parameters = [
                "name": "a b&c=d+é", "list": [1, 2], "map": ["k": "v"] as [String: any Sendable], "yes": true,
                "pi": 3.5,
            ]
        }
        #expect(body(request) == "list%5B%5D=1&list%5B%5D=2&map%5Bk%5D=v&name=a%20b%26c%3Dd%2B%C3%A9&pi=3.5&yes=true")
        #expect(
            request.urlRequest.value(forHTTPHeaderField: "Content-Type")
                == "application/x-www-form-urlencoded; charset=utf-8")
    }

    /// XML nests at most 512 elements deep, as JSON does: `XMLParser` on Linux read any depth, and a tree 100,000 deep
    /// from a hostile server overflowed the stack when hashed.
    @Test(arguments: [512, 513, 100_000])
    func xmlNestedTooDeepFailsDecoding(depth: Int) async throws {
        let body = String(repeating: "<a>", count: depth) + "x" + String(repeating: "</a>", count: depth)
        let (center, stub) = stubCenter()
        stub.on(nil, "*", reply: .string(body, headers: ["Content-Type": "application/xml"]))
        let outcome = await center.sendRecording {
            $0.api = "deep"; $0.responseSerializer = .xml
        }
        if depth <= XML.maximumDepth {
            var element = try #require(outcome.response?.xml)
            var levels = 1
            while let child = element.children.first {
                element = child
                levels += 1
            }
            #expect(levels == depth)
            #expect(element.text == "x")
        } else {
            #expect(outcome.error?.code == .decoding)
            #expect(outcome.error?.message.contains("nested more than 512 deep") == true)
        }
    }

    @Test func everyScalarTypeKeepsItsKindAndValue() throws {
        let values: [(any Sendable, ParameterValue)] = [
            ("text", .string("text")), (Substring("sub"), .string("sub")), (true, .bool(true)),
            (Int.min, .int(Int64.min)), (Int8(-8), .int(-8)), (Int16(16), .int(16)), (Int32(-32), .int(-32)),
            (Int64.max, .int(Int64.max)), (UInt.max, .uint(UInt64(UInt.max))), (UInt8(8), .uint(8)),
            (UInt16(16), .uint(16)), (UInt32(32), .uint(32)), (UInt64.max, .uint(UInt64.max)), (2.5, .double(2.5)),
            (Float(0.1), .literal("0.1")), (Optional(7) as Int?, .int(7)), (JSON.null, .null), (NSNull(), .null),
            (CGFloat(0.5), .double(0.5)), (Decimal(string: "19.99")!, .literal("19.99")), (NSNumber(value: 1), .int(1)),
            (NSNumber(value: true), .bool(true)), (NSNumber(value: UInt64.max), .uint(UInt64.max)),
        ]
        for (value, expected) in values {
            #expect(try ParameterValue(value, path: "v") == expected, "\(type(of: value))")
        }
        #expect(throws: HTTPError.self) { try ParameterValue(Date(), path: "v") }
    }

    @Test func queryParametersJoinAnExistingQuery() throws {
        let request = try encoded {
            $0.url = "http://x.com/p?a=1"; $0.parameters = ["b": 2]
        }
        #expect(request.url?.absoluteString == "http://x.com/p?a=1&b=2")
        #expect(request.body == .none)
    }

    @Test func formTextHoldsEveryKindOfValueExactly() throws {
        let parameters: [String: any Sendable] = [
            "a": Int.min, "b": UInt64.max, "c": 0, "d": -0.0, "e": 1e20, "f": true, "g": JSON.null,
            "h": [1, "x y"] as [any Sendable], "i": ["k": "v&w"], "ü": "é", "n": -42, "o": 0.5,
        ]
        let text =
            "a=-9223372036854775808&b=18446744073709551615&c=0&d=-0.0&e=1e%2B20&f=true&g="
            + "&h%5B%5D=1&h%5B%5D=x%20y&i%5Bk%5D=v%26w&n=-42&o=0.5&%C3%BC=%C3%A9"
        let query = try encoded {
            $0.url = "http://x.com/p?q#top"; $0.parameters = parameters
        }
        #expect(query.url?.absoluteString == "http://x.com/p?q&" + text + "#top")
        let form = try encoded {
            $0.url = "http://x.com/p"; $0.method = .post; $0.parameters = parameters
        }
        #expect(body(form) == text)
        // Plain values alone take the path that writes numbers without making their text first.
        let plain = try encoded {
            $0.url = "http://x.com/p"; $0.parameters = ["a": Int.min, "b": UInt64.max, "c": 7, "d": "é&"]
        }
        #expect(
            plain.url?.absoluteString == "http://x.com/p?a=-9223372036854775808&b=18446744073709551615&c=7&d=%C3%A9%26")
    }

    @Test func jsonEncodingIsDeterministicAndExact() throws {
        let request = try encoded { request in
            request.url = "http://x.com/p"
            request.method = .post
            request.requestSerializer = .json
            request.parameters = ["z": UInt64.max, "a": [true, JSON.null], "m": "quote\" slash\\ nl\n"]
        }
        #expect(body(request) == #"{"a":[true,null],"m":"quote\" slash\\ nl\n","z":18446744073709551615}"#)
    }

    /// A property list holds what a double holds: a decimal that is one (19.99) goes as that double, which reads
    /// back as 19.99; integers go whole.
    @Test func aPropertyListHoldsEveryNumberItCanExactly() throws {
        let request = try encoded { request in
            request.url = "http://x.com/p"
            request.method = .post
            request.requestSerializer = .plist
            request.parameters = [
                "price": Decimal(string: "19.99")!, "max": UInt64.max, "min": Int64.min, "float": Float(0.1),
                "small": JSON.number(JSON.Number(text: "1.5e-300")!),
            ]
        }
        guard case .data(let data) = request.body else {
            Issue.record("no body")
            return
        }
        let read = try PropertyListSerialization.propertyList(from: data, format: nil) as? [String: Any]
        #expect((read?["price"] as? NSNumber)?.doubleValue == 19.99)
        #expect((read?["float"] as? NSNumber)?.doubleValue == 0.1)
        #expect((read?["small"] as? NSNumber)?.doubleValue == 1.5e-300)
        #expect(body(request).contains("<integer>18446744073709551615</integer>"))
        #expect(body(request).contains("<integer>-9223372036854775808</integer>"))
    }

    @Test func numberTextsAreComparedDigitForDigit() {
        #expect(ParameterValue.sameNumber("19.99", "\(19.99)"))
        #expect(ParameterValue.sameNumber("1999e-2", "19.99"))
        #expect(ParameterValue.sameNumber("0.00100", "1e-3"))
        #expect(ParameterValue.sameNumber("-0", "0.0"))
        #expect(ParameterValue.sameNumber("120", "1.2E+2"))
        #expect(!ParameterValue.sameNumber("-1", "1.0"))
        #expect(!ParameterValue.sameNumber("12345678901234567890.12", "\(12345678901234567890.12)"))
        #expect(!ParameterValue.sameNumber("0.1", "0.01"))
        #expect(!ParameterValue.sameNumber("1.00000000000000000000000000000000000000001", "1.0"))
    }

    @Test func idleTimeoutAndTotalTimeoutReachTheEngine() throws {
        let request = try encoded {
            $0.url = "http://x.com"; $0.timeout = .milliseconds(1500); $0.totalTimeout = .seconds(9)
        }
        #expect(request.urlRequest.timeoutInterval == 1.5)
        #expect(request.totalTimeout == .seconds(9))
    }

    @Test func anExplicitContentTypeWins() throws {
        let request = try encoded { request in
            request.url = "http://x.com"
            request.method = .put
            request.headers["content-type"] = "application/vnd.custom+json"
            request.body = .data(Data("{}".utf8))
        }
        #expect(request.urlRequest.value(forHTTPHeaderField: "Content-Type") == "application/vnd.custom+json")
    }
}

/// An empty `url` is a mistake, not "no URL": `.invalidURL` before anything is sent, over loopback on both engines
/// (it went to the server's root, and failed later as a decoding error).
@Suite struct EmptyURLTests {
    @Test(arguments: bothEngines)
    func anEmptyURLIsInvalidAndSendsNothing(engineName: String) async throws {
        let (server, requests) = try countingHttpbin()
        defer { server.stop() }
        let center = try loopbackCenter(engineName, server: server)
        let outcome = await center.sendRecording { $0.url = "" }
        #expect(outcome.error?.code == .invalidURL)
        #expect(outcome.error?.message.contains("url is empty") == true)
        #expect(outcome.events == ["failure:invalidURL", "finished"])
        // A hook that empties it fails the same way.
        let hooked = try loopbackCenter(engineName, server: server) { config in
            config.onRequest = { $0.url = "" }
        }
        let emptied = await #expect(throws: HTTPError.self) { try await hooked.send { $0.api = "get" } }
        #expect(emptied?.code == .invalidURL)
        #expect(requests.snapshot == 0)
    }
}
