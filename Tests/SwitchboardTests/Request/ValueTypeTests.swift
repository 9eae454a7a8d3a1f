import Foundation
import Testing
@testable import Switchboard

@Suite struct JSONTests {
    @Test func parsesAndReads() throws {
        let json = try JSON(data: Data(#"{"a":[1,2.5,"x",true,null],"b":{"c":false},"n":1}"#.utf8))
        #expect(json["a"]?[0]?.int == 1)
        #expect(json["a"]?[1]?.double == 2.5)
        #expect(json["a"]?[1]?.int == nil)
        #expect(json["a"]?[2]?.string == "x")
        #expect(json["a"]?[3]?.bool == true)
        #expect(json["a"]?[4]?.isNull == true)
        #expect(json["a"]?[9] == nil)
        #expect(json["b"]?["c"] == false)
        // `1` is a number and `true` a Boolean, not the same thing.
        #expect(json["n"] == .number(1))
        #expect(json["a"]?[3] == .bool(true))
    }

    @Test func roundTripsThroughCodable() throws {
        let value: JSON = ["name": "Ada", "tags": ["x", 1, nil], "ok": true, "big": 9_007_199_254_740_992]
        let data = try JSONEncoder().encode(value)
        #expect(try JSONDecoder().decode(JSON.self, from: data) == value)
        #expect(value.description == #"{"big":9007199254740992,"name":"Ada","ok":true,"tags":["x",1,null]}"#)
    }

    @Test func rejectsWhatIsNotJSON() {
        #expect(throws: HTTPError.self) { try JSON(data: Data("<html>".utf8)) }
    }

    @Test func propertyListsReadAsJSON() async throws {
        let plist = try PropertyListSerialization.data(
            fromPropertyList: ["flag": true, "count": 3, "name": "x"] as [String: Any], format: .xml, options: 0)
        let stub = StubEngine()
        stub.on(nil, "*", reply: .data(plist))
        let (center, _) = stubCenter(stub)
        let response = try await center.send {
            $0.api = "p"; $0.responseSerializer = .plist
        }
        #expect(response.json == ["flag": true, "count": 3, "name": "x"])
    }
}

@Suite struct HTTPHeadersTests {
    @Test func namesCompareCaseInsensitivelyAndKeepTheirFirstSpelling() {
        var headers: HTTPHeaders = ["Content-Type": "text/plain"]
        headers["content-type"] = "application/json"
        headers["X-A"] = "1"
        #expect(headers.count == 2)
        #expect(headers["CONTENT-TYPE"] == "application/json")
        #expect(headers.map(\.name) == ["Content-Type", "X-A"])
        headers["x-a"] = nil
        #expect(headers.count == 1)
        #expect(headers == ["content-type": "application/json"])
    }

    @Test func mergeReplacesByName() {
        var general: HTTPHeaders = ["X-Client": "ios", "X-Shared": "general"]
        general.merge(["x-shared": "own", "X-New": "n"])
        #expect(general == ["X-Client": "ios", "X-Shared": "own", "X-New": "n"])
    }

    /// Past 16 fields lookups go through an index; it must keep every rule of the linear search, through
    /// replacements and removals, and thousands of fields must not take quadratic time to set.
    @Test func manyFieldsKeepTheSameRules() {
        var headers = HTTPHeaders()
        for index in 0..<3000 { headers["X-Field-\(index)"] = "\(index)" }
        #expect(headers.count == 3000)
        #expect(headers["x-field-2999"] == "2999")
        headers["X-FIELD-10"] = "ten"
        #expect(headers.count == 3000)
        #expect(headers.map(\.name)[10] == "X-Field-10")
        headers["x-field-0"] = nil
        #expect(headers["X-Field-0"] == nil)
        #expect(headers["X-Field-10"] == "ten")
        #expect(headers.map(\.name).first == "X-Field-1")
        for index in 11..<2990 { headers["x-field-\(index)"] = nil }
        #expect(headers.map(\.name) == (1...10).map { "X-Field-\($0)" } + (2990..<3000).map { "X-Field-\($0)" })
        #expect(headers["X-FIELD-2995"] == "2995")
        headers["New"] = "n"
        #expect(headers["new"] == "n")
        for index in 1...10 { headers["X-Field-\(index)"] = nil }
        #expect(headers["X-Field-1"] == nil)
        #expect(headers.count == 11)
        // Names differing outside ASCII letters stay different, as in the linear search.
        var folded = HTTPHeaders()
        for index in 0..<20 { folded["F\(index)"] = "\(index)" }
        folded["a@"] = "at"
        #expect(folded["a`"] == nil)
        #expect(folded["A@"] == "at")
    }

    /// Printing headers is a log line: secret values are hidden there, and only there.
    @Test func theDescriptionHidesSecretValues() {
        let headers: HTTPHeaders = [
            "Authorization": "Bearer tok-AAA", "Cookie": "s=sess-GGG", "X-Api-Key": "key-DDD", "Accept": "text/plain",
        ]
        let printed = "\(headers)"
        for secret in ["tok-AAA", "sess-GGG", "key-DDD"] { #expect(!printed.contains(secret), "\(secret) printed") }
        #expect(printed.contains("Authorization: <redacted>"))
        #expect(printed.contains("Accept: text/plain"))
        #expect(headers["Authorization"] == "Bearer tok-AAA")
    }

    @Test func asciiFoldingOnlyFoldsLetters() {
        #expect("X-Trace".equalsIgnoringASCIICase("x-TRACE"))
        #expect(!"a@".equalsIgnoringASCIICase("a`"))
        #expect(!"ab".equalsIgnoringASCIICase("abc"))
    }
}

@Suite struct HTTPErrorTests {
    @Test func describesCodeStatusMethodAndURL() {
        var request = Request()
        request.method = .delete
        request.url = "https://api.example.com/v1/users/9?token=abc"
        let response = Response(request: request, status: 404)
        let error = HTTPError(.unacceptableStatus, "the server answered 404", request: request, response: response)
        #expect(
            error.description
                == "HTTPError.unacceptableStatus (404) DELETE https://api.example.com/v1/users/9?token=<redacted>: "
                + "the server answered 404")
    }

    @Test func mapsPlatformErrors() {
        #expect(HTTPError.from(CancellationError()).code == .cancelled)
        #expect(HTTPError.from(URLError(.cancelled)).code == .cancelled)
        #expect(HTTPError.from(URLError(.timedOut)).code == .timedOut)
        #expect(HTTPError.from(URLError(.cannotConnectToHost)).code == .cannotConnect)
        #expect(HTTPError.from(URLError(.networkConnectionLost)).code == .transport)
        let custom = HTTPError.Code(rawValue: "quota")
        #expect(HTTPError.from(HTTPError(custom, "over quota")).code == custom)
    }
}

/// `Request`, `Response` and `EngineRequest` keep their fields in shared boxes; each copy must still behave as a value.
@Suite struct SharedFieldsTests {
    @Test func aRequestCopyChangesAloneAndNewRequestsKeepTheDefaults() {
        var first = Request { $0.api = "a" }
        var second = first
        second.form = [.init(name: "field", content: .data(Data("x".utf8)))]
        second.destination = .file(URL(fileURLWithPath: "/tmp/x"))
        second.tag = "second"
        second.api = "b"
        #expect(first.form.isEmpty && first.destination == nil && first.tag == nil && first.api == "a")
        #expect(second.form.count == 1 && second.tag == "second" && second.api == "b")
        first.retryCount = 3
        first.body = .json(["k": 1])
        #expect(second.retryCount == nil && second.body == nil)
        let fresh = Request()
        #expect(
            fresh.form.isEmpty && fresh.destination == nil && fresh.tag == nil && fresh.body == nil,
            "the defaults every new request shares were not changed through one of them")
        // A copy of a request that has set some of them shares them until one side changes one.
        var third = second
        third.form = []
        third.plugins = [ActivityPlugin()]
        #expect(second.form.count == 1 && second.plugins.isEmpty && second.destination != nil)
        #expect(third.form.isEmpty && third.plugins.count == 1 && third.destination != nil)
    }

    @Test func aResponseCopyChangesAlone() {
        let original = Response(status: 200, headers: ["A": "1"], data: Data("x".utf8))
        var copy = original
        copy.status = 404
        copy.headers["A"] = "2"
        copy.attempts = 3
        #expect(original.status == 200 && original.headers["A"] == "1" && original.attempts == 1)
        #expect(copy.status == 404 && copy.headers["A"] == "2" && copy.attempts == 3)
    }

    @Test func anEngineRequestCopyChangesAlone() {
        let original = EngineRequest(url: URL(string: "http://example.com/a")!, headers: ["A": "1"])
        var copy = original
        copy.headers["A"] = "2"
        copy.url = URL(string: "http://example.com/b")
        copy.method = .post
        #expect(original.headers["A"] == "1" && original.url?.path == "/a" && original.method == .get)
        #expect(copy.headers["A"] == "2" && copy.url?.path == "/b" && copy.method == .post)
    }
}
