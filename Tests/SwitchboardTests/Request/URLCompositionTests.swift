import Foundation
import Testing
@testable import Switchboard

/// URL composition through a real `send`, with `StubEngine` recording where each request went.
@Suite struct URLCompositionTests {
    struct Case: Sendable, CustomTestStringConvertible {
        var general: String?
        var server: String?
        var api: String?
        var url: String?
        var expected: String
        var testDescription: String { expected }
    }

    static let cases: [Case] = [
        // An explicit url wins over everything.
        Case(
            general: "https://a.com/v1/", server: "https://b.com/", api: "users", url: "https://c.com/x",
            expected: "https://c.com/x"),
        // General server + api.
        Case(general: "https://httpbin.org/", api: "get", expected: "https://httpbin.org/get"),
        // A server with a path and no trailing slash gets one.
        Case(general: "http://x.com/v1", api: "foo/bar", expected: "http://x.com/v1/foo/bar"),
        Case(general: "http://x.com/v1/", api: "foo/bar", expected: "http://x.com/v1/foo/bar"),
        // A server without a path.
        Case(general: "http://x.com", api: "users", expected: "http://x.com/users"),
        // An api with a leading slash replaces the path.
        Case(general: "http://x.com/v1/", api: "/v2/users", expected: "http://x.com/v2/users"),
        // An absolute api wins over the server.
        Case(general: "http://x.com/v1/", api: "https://other.org/path", expected: "https://other.org/path"),
        // The request's own server beats the general one.
        Case(
            general: "http://general.com/", server: "http://own.com/api", api: "users",
            expected: "http://own.com/api/users"),
        // No api: the server alone.
        Case(general: "http://x.com/ping", expected: "http://x.com/ping"),
        // Query in api survives.
        Case(general: "http://x.com/v1/", api: "search?q=1", expected: "http://x.com/v1/search?q=1"),
        // Dot segments resolve per RFC 3986.
        Case(general: "http://x.com/v1/a/", api: "../b", expected: "http://x.com/v1/b"),
    ]

    @Test(arguments: cases)
    func composes(_ testCase: Case) async throws {
        let stub = StubEngine()
        stub.on(nil, "*", reply: .status(204))
        let center = testCenter { config in
            config.engine = stub
            config.server = testCase.general
        }
        _ = try await center.send { request in
            request.server = testCase.server
            request.api = testCase.api
            request.url = testCase.url
        }
        #expect(stub.requests.last?.url?.absoluteString == testCase.expected)
    }

    @Test func useGeneralServerOffIgnoresTheGeneralServer() async throws {
        let (center, stub) = stubCenter()
        stub.on(nil, "*", reply: .status(204))
        let error = await #expect(throws: HTTPError.self) {
            _ = try await center.send {
                $0.api = "users"; $0.useGeneralServer = false
            }
        }
        #expect(error?.code == .invalidURL)
        #expect(error?.description.contains("no server") == true)
        _ = try await center.send {
            $0.server = "http://own.com/"; $0.api = "users"; $0.useGeneralServer = false
        }
        #expect(stub.requests.map { $0.url?.absoluteString } == ["http://own.com/users"])
    }

    @Test(arguments: [
        ("ht tp://x", "not a valid URL"),
        ("http://exa mple.com", "not a valid URL"),
        ("ftp://example.com/file", "not an http or https URL"),
        ("example.com/users", "not an http or https URL"),
        ("http:///path", "has no host"),
    ])
    func badURLsFailClearly(_ url: String, _ reason: String) async {
        let (center, stub) = stubCenter()
        let error = await #expect(throws: HTTPError.self) {
            _ = try await center.send { $0.url = url }
        }
        #expect(error?.code == .invalidURL)
        #expect(error?.message.contains(reason) == true, "\(error?.message ?? "")")
        #expect(stub.requests.isEmpty)
    }

    /// `validate` reads scheme and host off the text; for every text Foundation accepts, the answer must be the one
    /// Foundation's own `scheme` and `host` give.
    @Test(arguments: [
        "http://x.com", "HTTP://X.COM/a", "hTtPs://x.com:8443/a?b#c", "https://x", "http://x:80", "http://:80/",
        "http:///path", "http://@/", "http://user@/p", "http://user:pw@host/p", "http://a@b@c/", "http:x.com",
        "http:/x.com", "https:", "http://", "http://?q", "http://#f", "http://[::1]:8080/", "http://[::1]",
        "http://[]/", "http://%41.com/", "http://ex%20ample/", "httpx://x.com", "https+x://x.com", "ftp://x.com",
        "htt://x", "https//x.com", "http//x.com", "x.com/http://y", "/http://x", "http://x.com:abc/", "http://x y/",
        "http://\\x/", "http:\\\\x", "http://ü.com/", "http://[v1.x]/", "http://:@:/", "http://u@:8/",
    ])
    func theSchemeAndHostCheckAgreesWithFoundation(text: String) throws {
        guard let url = URL(string: text) else { return }
        let scheme = url.scheme?.lowercased()
        let expected: URLComposition.Authority =
            scheme != "http" && scheme != "https"
            ? .notHTTP : (url.host(percentEncoded: true) ?? "").isEmpty ? .noHost : .hasHost
        var copy = text
        #expect(copy.withUTF8(URLComposition.authority) == expected, "\(url.absoluteString)")
    }

    /// The engines read a URL's port off its text; for every text Foundation accepts, the answer must be the one
    /// Foundation's own `port` gives (digits read as `Int` reads them: leading zeros kept, too many digits no port).
    @Test(arguments: [
        "http://h:80/", "http://h:/", "http://h:0080/x", "http://h:0/", "http://h:65536/", "http://h",
        "http://h:99999999999999999999/", "http://h:123456789012/", "http://h:00000000000000000000080/",
        "http://u:p@h:81/", "http://u:p@h/", "http://u@h:8/", "http://[::1]:82/", "http://[::1]/", "http://[::1]:/",
        "https://x.com:8443/a?b#c", "http://x.com?q=:1", "http://x.com#:1", "http://x.com/a:1", "http://:80/",
        "http://h:8a/", "http://h:+80/", "HTTP://H:9/", "http:x.com", "http://h:1:2/",
    ])
    func thePortReadOffTheTextAgreesWithFoundation(text: String) throws {
        guard let url = URL(string: text) else { return }
        var copy = text
        #expect(copy.withUTF8(URLComposition.port) == url.port, "\(url.absoluteString)")
    }

    /// The engines' short reading of a plain text's port (`plainPort`) agrees with the general one, on every text in
    /// the plain form.
    @Test(arguments: [
        "http://h:80/", "http://h:0080/x", "http://h:0/", "http://h:65536/", "http://h:99999", "http://h",
        "https://x.com:8443/a?b#c", "http://x.com?q=:1", "http://x.com#:1", "http://x.com/a:1", "https://a.b-c_d~e",
        "http://127.0.0.1:70000/get", "https://h:1",
    ])
    func thePlainPortAgreesWithThePort(text: String) {
        var copy = text
        let plain = copy.withUTF8(URLAddress.isPlain)
        let (short, general) = copy.withUTF8 { (URLComposition.plainPort($0), URLComposition.port($0)) }
        #expect(plain, "\(text) should be plain")
        #expect(short == general, "\(text)")
    }

    @Test func noURLAtAllFailsClearly() async {
        let center = testCenter { $0.engine = StubEngine() }
        let error = await #expect(throws: HTTPError.self) {
            _ = try await center.send { _ in }
        }
        #expect(error?.code == .invalidURL)
        #expect(error?.message.contains("no URL") == true)
    }

    /// A plain relative path is joined to the server without parsing; the result must be what RFC 3986 resolution
    /// gives.
    @Test(arguments: [
        "users", "users/42/posts", "a-b_c~d/e.f", "...", "x/.../y", "v1//double", ".", "..", "a/./b",
        "a/../b", "a/..", "with space", "ümlaut", "q?x=1", "f#frag", "colon:path",
    ])
    func joiningAPlainPathAgreesWithResolution(api: String) throws {
        for server in [
            "http://x.com/", "http://x.com/v1/", "https://h:8443/a/b/", "http://x.com/v1", "http://x.com/.well/",
        ] {
            var request = Request()
            request.server = server
            request.api = api
            let composed = try? URLComposition.compose(request).text
            var base = try #require(URL(string: server))
            if !base.path.isEmpty && !server.hasSuffix("/") { base = base.appendingPathComponent("") }
            let resolved = URL(string: api, relativeTo: base)?.absoluteString
            #expect(composed == resolved, "\(server) + \(api)")
            // Under a server known plain, the same URL; said to be plain only when it is.
            let plainServer = URLComposition.isPlainServer(server) ? server : nil
            #expect((plainServer != nil) == (server.hasSuffix("/") && !server.contains("/.")), "\(server)")
            let known = try? URLComposition.compose(request, plainServer: plainServer)
            #expect(known?.text == resolved, "\(server) + \(api)")
            if var text = known?.text, known?.isPlain == true {
                let isPlain = text.withUTF8(URLAddress.isPlain)
                #expect(isPlain, "\(text)")
                #expect(URL(string: text)?.absoluteString == text)
            }
        }
    }

    @Test(arguments: [
        "plain", "a b&c=d", "ümlaut/ß?", "emoji 🎉", "reserved :#[]@!$&'()*+,;=", "~-._/?", "%41", "",
        String((0...127).map { Character(Unicode.Scalar(UInt8($0))) }),
    ])
    func queryEscapingMatchesFoundation(text: String) {
        var allowed = CharacterSet.urlQueryAllowed
        allowed.remove(charactersIn: ":#[]@!$&'()*+,;=")
        #expect(FormEncoding.escape(text) == text.addingPercentEncoding(withAllowedCharacters: allowed))
    }

    @Test(arguments: [
        ("http://x.com/get", "http://x.com/get?page=2&q=a%20b"),
        ("http://x.com/get?sort=asc", "http://x.com/get?sort=asc&page=2&q=a%20b"),
        ("http://x.com/get?", "http://x.com/get?page=2&q=a%20b"),
        ("http://x.com/get?a=1&", "http://x.com/get?a=1&page=2&q=a%20b"),
        ("http://x.com/get?#", "http://x.com/get?page=2&q=a%20b#"),
        ("http://x.com/get#top", "http://x.com/get?page=2&q=a%20b#top"),
        ("http://x.com/get?a=1#top?x", "http://x.com/get?a=1&page=2&q=a%20b#top?x"),
    ])
    func parametersJoinAnyQueryTheURLHas(url: String, expected: String) async throws {
        let (center, stub) = stubCenter()
        stub.on(nil, "*", reply: .status(204))
        _ = try await center.send { request in
            request.url = url
            request.parameters = ["page": 2, "q": "a b"]
        }
        #expect(stub.requests.last?.url?.absoluteString == expected)
    }
}
