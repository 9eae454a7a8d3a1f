import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
@testable import Switchboard
import SwitchboardTestSupport

/// Rules both engines keep alike, each giving the same outcome and code: schemes other than http and https, a port
/// out of range, and redirects from https down to plain http (the HTTPS half of that
/// runs on CurlEngine in `HTTP2Tests`, since URLSession on Linux cannot trust a test certificate authority; here
/// URLSessionEngine's redirect decision is driven directly).
@Suite struct EngineRulesTests {
    /// A test center on the named engine.
    static func center(_ engineName: String) throws -> Center {
        let engine = try namedEngine(engineName)
        return testCenter { $0.engine = engine }
    }

    /// A field with a line break or NUL in its value, or a name that is not a token, is refused by both engines
    /// before anything is sent: libcurl under both sent a CR LF in a value as it was (a second field, `X-Injected`,
    /// reached the server), a bare LF too, cut a value at a NUL, and sent a name with a space; a line break in a name
    /// broke the request. The center refuses such fields when it encodes a request; the engines also refuse those a
    /// plugin's `adapt` sets after that, or a direct caller.
    @Test(arguments: bothEngines)
    func aFieldThatCannotBeSentIsRefusedBeforeAnythingIsSent(engineName: String) async throws {
        let (server, received) = try countingHttpbin()
        defer { server.stop() }
        let engine = try namedEngine(engineName)
        let fields = [
            ("X-Note", "a\r\nX-Injected: 1"), ("X-Note", "a\nX-Injected: 2"), ("X-Note", "a\rb"), ("X-Nul", "a\u{0}b"),
            ("X-Bad\r\nX-Injected", "3"), ("X Space", "v"), ("X-Colon:", "v"), ("", "empty"),
        ]
        for (name, value) in fields {
            var request = EngineRequest(url: URL(string: server.baseURL + "/headers")!)
            request.headers[name] = value
            do {
                _ = try await engine.perform(request) { _ in }
                Issue.record("\(engineName) sent \(String(reflecting: name)): \(String(reflecting: value))")
            } catch let error as HTTPError {
                #expect(error.code == .encoding, "\(engineName): \(error)")
                #expect(error.message.contains(String(reflecting: name)), "\(error.message)")
                #expect(!error.message.contains("\r") && !error.message.contains("\n"), "\(error.message)")
            }
        }
        // Through a center, a field a plugin sets after encoding is refused the same way.
        struct Adapter: Plugin {
            func adapt(_ request: inout EngineRequest, for original: Request) async throws {
                request.headers["X-Signature"] = "sig\r\nX-Injected: 1"
            }
        }
        let center = testCenter { config in
            config.engine = engine
            config.plugins = [Adapter()]
        }
        await #expect(throws: HTTPError.self) { try await center.send { $0.url = server.baseURL + "/headers" } }
        #expect(received.withLock { $0 } == 0)
        // The server counts what reaches it: a field that can be sent goes, a tab and bytes past ASCII included.
        var request = EngineRequest(url: URL(string: server.baseURL + "/headers")!)
        request.headers["X-Note"] = "a\tb é"
        let response = try await engine.perform(request) { _ in }
        #expect(response.status == 200)
        #expect(received.withLock { $0 } == 1)
    }

    /// A center checks its headers once, when they are set; what a request or a hook changes in them is checked
    /// again. A field that cannot be sent is refused whichever of them it came from, and nothing is sent.
    @Test(arguments: bothEngines)
    func aCentersFieldsAreCheckedOnceAndWhatChangesThemAgain(engineName: String) async throws {
        let (server, received) = try countingHttpbin()
        defer { server.stop() }
        let engine = try namedEngine(engineName)
        let broken = testCenter { config in
            config.engine = engine
            config.headers = ["X-Good": "1", "X-Note": "a\r\nX-Injected: 1"]
        }
        for _ in 0..<2 {
            await #expect(throws: HTTPError.self) { try await broken.send { $0.url = server.baseURL + "/headers" } }
        }
        // The request's own value replaces the center's broken one: it goes.
        let mended = try await broken.send {
            $0.url = server.baseURL + "/headers"
            $0.headers["x-note"] = "mended"
        }
        #expect(mended.json?["headers"]?["X-Note"]?.string == "mended")
        #expect(received.withLock { $0 } == 1)
        let center = testCenter { config in
            config.engine = engine
            config.headers = ["X-Good": "1", "X-Other": "2"]
            config.onRequest = { request in
                if request.userInfo["hook"] != nil { request.headers["X-Good"] = "b\nX-Injected: 3" }
            }
        }
        // A request's own value, and a hook's, are checked although the center's field they replace was.
        await #expect(throws: HTTPError.self) {
            try await center.send {
                $0.url = server.baseURL + "/headers"
                $0.headers["X-Good"] = "a\rb"
            }
        }
        await #expect(throws: HTTPError.self) {
            try await center.send {
                $0.url = server.baseURL + "/headers"
                $0.userInfo["hook"] = true
            }
        }
        #expect(received.withLock { $0 } == 1)
        _ = try await center.send { $0.url = server.baseURL + "/headers" }
        #expect(received.withLock { $0 } == 2)
    }

    /// Which fields `sendingCheck` reads for sendability after `markSendable()`: those changed or added since, wherever they are.
    @Test func aCheckedFieldIsCheckedAgainOnceChanged() {
        var headers: HTTPHeaders = ["A": "1", "B": "2", "C": "3"]
        headers.markSendable()
        #expect(headers.sendingCheck.unsendable == nil)
        var changed = headers
        changed["b"] = "x\ny"
        #expect(changed.sendingCheck.unsendable.map { changed.field(at: $0).name } == "B")
        changed = headers
        changed["D"] = "x\ry"
        #expect(changed.sendingCheck.unsendable.map { changed.field(at: $0).name } == "D")
        changed = headers
        changed["A"] = nil
        changed["C"] = "\0"
        #expect(changed.sendingCheck.unsendable.map { changed.field(at: $0).name } == "C")
        changed = headers
        changed.append(receivedName: "a", value: "\n")
        #expect(changed.sendingCheck.unsendable.map { changed.field(at: $0).name } == "A")
        changed = headers
        changed.appendSendable("E", "5")
        changed["F"] = "x\ny"
        #expect(changed.sendingCheck.unsendable.map { changed.field(at: $0).name } == "F")
        var broken: HTTPHeaders = ["A": "1", "B": "\n", "C": "3"]
        broken.markSendable()
        #expect(broken.sendingCheck.unsendable.map { broken.field(at: $0).name } == "B")
        broken.appendSendable("D", "4")
        #expect(broken.sendingCheck.unsendable.map { broken.field(at: $0).name } == "B")
        // `Content-Length` and `Transfer-Encoding` are found wherever they stand, checked or not.
        var framed: HTTPHeaders = ["A": "1", "content-length": "3", "B": "2", "Transfer-Encoding": "chunked"]
        framed.markSendable()
        framed.appendSendable("C", "4")
        let found = framed.sendingCheck
        #expect(found.unsendable == nil)
        #expect(found.contentLength.map { framed.field(at: $0).name } == "content-length")
        #expect(found.transferEncoding.map { framed.field(at: $0).name } == "Transfer-Encoding")
    }

    /// A request the center checked is not checked again by its engine, unless something the check reads was set
    /// since: each such change makes the engine's check run, and refuse what is wrong.
    @Test func aCheckedRequestIsCheckedAgainOnceChanged() throws {
        var checked = EngineRequest(url: URL(string: "http://example.test/x")!)
        try checked.checkBeforeSending()
        checked.checked = true
        let changes: [(String, (inout EngineRequest) -> Void)] = [
            ("method", { $0.method = HTTPMethod(rawValue: "BAD METHOD") }),
            ("headers", { $0.headers["X-Bad"] = "a\r\nb" }),
            ("a header in place", { $0.headers.merge(["X-Bad": "a\nb"]) }),
            ("timeout", { $0.timeout = .zero }),
            ("body", { $0.body = .data(Data("x".utf8)) }),
            ("totalTimeout", { $0.totalTimeout = .seconds(-1) }),
            (
                "urlRequest",
                { $0.urlRequest = URLRequest(url: URL(string: "http://example.test/x")!, timeoutInterval: 0) }
            ),
        ]
        for (name, change) in changes {
            var request = checked
            change(&request)
            #expect(!request.checked, "\(name)")
            #expect(throws: HTTPError.self, "\(name)") { try request.checkBeforeSending() }
        }
        var unchanged = checked
        unchanged.url = URL(string: "http://example.test/y")
        unchanged.observesProgress = false
        #expect(unchanged.checked)
    }

    /// The one pass finds the fields only an engine sets, whatever their case, and the first field that cannot be
    /// sent, which need not come before them.
    @Test func theCheckBeforeSendingReadsEveryFieldInOnePass() {
        var headers: HTTPHeaders = ["Accept": "*/*", "content-LENGTH": " 12 ", "X-Bad": "a\r\nb"]
        headers.append(receivedName: "TRANSFER-encoding", value: "chunked")
        let found = headers.sendingCheck
        #expect(found.contentLength.map { headers.field(at: $0).value } == " 12 ")
        #expect(found.transferEncoding.map { headers.field(at: $0).value } == "chunked")
        #expect(found.unsendable.map { headers.field(at: $0).name } == "X-Bad")
        // Names of those lengths that are not the two fields.
        let others: HTTPHeaders = ["Content-Lengtx": "1", "Transfer-Encodinx": "2", "Content-Type": "text/plain"]
        let none = others.sendingCheck
        #expect(none.contentLength == nil && none.transferEncoding == nil && none.unsendable == nil)
    }

    /// A method that is not a token, or a `Content-Length` or `Transfer-Encoding` that does not say what is sent, is
    /// refused by both engines before anything is sent. libcurl under both wrote a method as given (one with a line
    /// break sent a second request, `GET /admin`); `CurlEngine` sent a `Content-Length` short of the body and left the
    /// rest on the connection, read by the server as the start of the next request (`56789GET /get`), one past the
    /// body and waited, sent `Transfer-Encoding: gzip, chunked` over a body it did not compress and `chunked` beside
    /// a `Content-Length`; a `chunked` or non-zero length request without a body never ended on either engine.
    @Test(arguments: bothEngines)
    func aHeadThatDoesNotSayWhatIsSentIsRefusedBeforeAnythingIsSent(engineName: String) async throws {
        let received = Locked<[String]>([])
        let server = try LoopbackServer { request in
            received.withLock { $0.append("\(request.method) \(request.path) \(request.body.count)") }
            return Httpbin.route(request)
        }
        defer { server.stop() }
        let engine = try namedEngine(engineName)
        let ten = Data("0123456789".utf8)
        let unknownLength = EngineRequest.Body.stream(.init(length: nil) { InputStream(data: ten) })
        let knownLength = EngineRequest.Body.stream(.init(length: 10) { InputStream(data: ten) })
        let refused: [(HTTPMethod, HTTPHeaders, EngineRequest.Body, String)] = [
            (
                HTTPMethod(rawValue: "GET /admin HTTP/1.1\r\nX-Evil: 1\r\n\r\nGET"), [:], .none,
                "not a valid HTTP method"
            ),
            (HTTPMethod(rawValue: "DO IT"), [:], .none, "not a valid HTTP method"),
            (.post, ["Content-Length": "5"], .data(ten), "does not match the body (10 bytes)"),
            (.post, ["Content-Length": "4"], knownLength, "does not match the body (10 bytes)"),
            (.post, ["Content-Length": "20"], .data(ten), "does not match the body"),
            (.post, ["Content-Length": "10, 10"], .data(ten), "does not match the body"),
            (.post, ["Content-Length": "10"], unknownLength, "of unknown length"),
            (.get, ["Content-Length": "3"], .none, "does not match the body (0 bytes)"),
            (.post, ["Transfer-Encoding": "gzip, chunked"], .data(ten), "engine's to choose"),
            (.post, ["Transfer-Encoding": "identity"], .data(ten), "engine's to choose"),
            (.post, ["Transfer-Encoding": "chunked"], knownLength, "engine's to choose"),
            (.get, ["Transfer-Encoding": "chunked"], .none, "engine's to choose"),
            // URLSession refused these (-1103, or no answer for the HEAD); libcurl sent them as POSTs.
            (.get, [:], .data(ten), "a GET request cannot carry a body"),
            (.head, [:], knownLength, "a HEAD request cannot carry a body"),
        ]
        var timeouts: [EngineRequest] = []
        for (idle, total) in [(Duration.zero, nil), (.seconds(-1), nil), (.seconds(1), Duration.zero)] {
            var request = EngineRequest(url: URL(string: server.baseURL + "/anything")!, totalTimeout: total)
            request.timeout = idle
            timeouts.append(request)
        }
        for request in timeouts {
            await #expect(throws: HTTPError.self, "\(engineName): \(request.timeout), \(request.totalTimeout as Any)") {
                _ = try await engine.perform(request) { _ in }
            }
        }
        for (method, headers, body, words) in refused {
            var request = EngineRequest(method: method, url: URL(string: server.baseURL + "/anything")!, body: body)
            request.headers = headers
            do {
                _ = try await engine.perform(request) { _ in }
                Issue.record("\(engineName) sent \(String(reflecting: method.rawValue)) with \(headers)")
            } catch let error as HTTPError {
                #expect(error.code == .encoding, "\(engineName): \(error)")
                #expect(error.message.contains(words), "\(engineName): \(error.message)")
                #expect(!error.message.contains("\r") && !error.message.contains("\n"), "\(error.message)")
            }
        }
        #expect(received.withLock { $0 } == [])
        // What does say what is sent goes, whole: a length equal to the body's (blanks around it allowed, any case),
        // and `chunked` for a stream of unknown length, which goes chunked anyway.
        let sent: [(HTTPHeaders, EngineRequest.Body)] = [
            (["content-length": " 10 "], .data(ten)), (["Content-Length": "10"], knownLength),
            (["Transfer-Encoding": "Chunked"], unknownLength), (["Content-Length": "0"], .none),
        ]
        for (headers, body) in sent {
            var request = EngineRequest(method: .post, url: URL(string: server.baseURL + "/anything")!, body: body)
            request.headers = headers
            let response = try await engine.perform(request) { _ in }
            #expect(response.status == 200, "\(engineName), \(headers)")
        }
        #expect(received.withLock { $0 } == Array(repeating: "POST /anything 10", count: 3) + ["POST /anything 0"])
    }

    /// Neither engine labels a body the caller did not: URLSession on Linux gave a `POST` body, and libcurl anything it
    /// posted (`PUT`, `PATCH`, an empty `POST`), `Content-Type: application/x-www-form-urlencoded`. A caller's own
    /// label goes as it is.
    @Test(arguments: bothEngines)
    func noContentTypeIsSentThatTheCallerDidNotSet(engineName: String) async throws {
        let engine = try namedEngine(engineName)
        let ten = Data("0123456789".utf8)
        let bodies: [(HTTPMethod, EngineRequest.Body)] = [
            (.post, .data(ten)), (.post, .none), (.post, .data(Data())), (.put, .data(ten)), (.patch, .data(ten)),
            (.delete, .data(ten)), (.options, .data(ten)), (HTTPMethod(rawValue: "PROPFIND"), .data(ten)),
            (.post, .stream(.init(length: 10) { InputStream(data: ten) })),
            (.post, .stream(.init(length: nil) { InputStream(data: ten) })),
        ]
        for (method, body) in bodies {
            for label in [nil, "text/csv"] {
                var request = EngineRequest(
                    method: method, url: URL(string: LoopbackServer.shared.baseURL + "/anything")!, body: body)
                request.headers["Content-Type"] = label
                let response = try await engine.perform(request) { _ in }
                let echo = try JSONDecoder().decode(JSON.self, from: response.body)
                #expect(echo["method"]?.string == method.rawValue, "\(engineName) \(method)")
                #expect(echo["headers"]?["Content-Type"]?.string == label, "\(engineName) \(method) \(body)")
                #expect(echo["data"]?.string == (body.isEmpty ? "" : "0123456789"), "\(engineName) \(method)")
            }
        }
    }

    /// A request without a body says `Content-Length: 0` on both engines for a `POST`, `PUT` or `PATCH` (servers may
    /// refuse one without a length), and nothing for any other method (RFC 9110 section 8.6): URLSession on Linux sent
    /// `Content-Length: 0` with a body-less `DELETE`, `OPTIONS` or method of the caller's too. A caller's own field
    /// goes as it is.
    @Test(arguments: bothEngines)
    func aRequestWithoutABodySaysItsLengthOnlyWhereItsMethodHasOne(engineName: String) async throws {
        let engine = try namedEngine(engineName)
        let methods: [HTTPMethod] = [.get, .delete, .options, "PURGE", "PROPFIND", .post, .put, .patch]
        for method in methods {
            for own in [nil, "0"] where own == nil || !method.anticipatesBody {
                var request = EngineRequest(
                    method: method, url: URL(string: LoopbackServer.shared.baseURL + "/anything")!)
                request.headers["Content-Length"] = own
                if method == .get, own != nil { continue }  // refused before sending: a GET has no body
                let response = try await engine.perform(request) { _ in }
                let echo = try JSONDecoder().decode(JSON.self, from: response.body)
                let expected = own ?? (method.anticipatesBody ? "0" : nil)
                #expect(echo["headers"]?["Content-Length"]?.string == expected, "\(engineName) \(method) \(own ?? "")")
                #expect(echo["method"]?.string == method.rawValue)
                #expect(echo["data"]?.string == "")
            }
        }
    }

    /// Neither engine adds an `Accept-Language` the caller did not set (URLSession on Linux added the process
    /// locale's language to every request, so a server could answer the same request in another language on each
    /// engine); a caller's own goes as it is.
    @Test(arguments: bothEngines)
    func noAcceptLanguageIsSentThatTheCallerDidNotSet(engineName: String) async throws {
        let engine = try namedEngine(engineName)
        for (method, language) in [(HTTPMethod.get, nil), (.post, nil), (.get, "de-CH, de;q=0.9")] {
            var request = EngineRequest(
                method: method, url: URL(string: LoopbackServer.shared.baseURL + "/anything")!)
            request.headers["Accept-Language"] = language
            let response = try await engine.perform(request) { _ in }
            let echo = try JSONDecoder().decode(JSON.self, from: response.body)
            #expect(echo["headers"]?["Accept-Language"]?.string == language, "\(engineName) \(method)")
        }
    }

    /// A request without a `User-Agent` of its own goes with the center's on both engines (CurlEngine sent none, and
    /// URLSession on Linux one naming the process); a caller's own goes as it is.
    @Test(arguments: bothEngines)
    func theUserAgentIsTheCallersElseTheCenters(engineName: String) async throws {
        let engine = try namedEngine(engineName)
        for agent in [nil, "mine/1.0"] {
            var request = EngineRequest(url: URL(string: LoopbackServer.shared.baseURL + "/headers")!)
            request.headers["User-Agent"] = agent
            let response = try await engine.perform(request) { _ in }
            let echo = try JSONDecoder().decode(JSON.self, from: response.body)
            #expect(echo["headers"]?["User-Agent"]?.string == agent ?? EngineRequest.defaultUserAgent, "\(engineName)")
        }
    }

    /// Through a center, what a plugin's `adapt` sets after encoding is held to the same rules, on any engine (a stub
    /// too), with the request in the error.
    @Test func whatAPluginSetsAfterEncodingIsHeldToTheRules() async throws {
        struct Adapter: Plugin {
            let header: (String, String)
            func adapt(_ request: inout EngineRequest, for original: Request) async throws {
                request.headers[header.0] = header.1
            }
        }
        let stub = StubEngine()
        for header in [("X-Signature", "sig\r\nX-Injected: 1"), ("Content-Length", "1")] {
            let center = Center { config in
                config.engine = stub
                config.plugins = [Adapter(header: header)]
            }
            do {
                _ = try await center.send { $0.url = "http://example.test/x" }
                Issue.record("sent with \(header)")
            } catch {
                #expect(error.code == .encoding, "\(error)")
                #expect(error.request?.url == "http://example.test/x")
            }
        }
        // Given such a request directly, the stub refuses it as the engines do, and does not record it.
        var direct = EngineRequest(url: URL(string: "http://example.test/x")!)
        direct.headers["X-Signature"] = "sig\r\nX-Injected: 1"
        await #expect(throws: HTTPError.self) { _ = try await stub.perform(direct) { _ in } }
        #expect(stub.requests.isEmpty)
    }

    /// Schemes are case-insensitive: `HTTP://` reaches the server on both engines, directly and as a redirect's
    /// `Location` (URLSession on Linux refused it as an unsupported URL; libcurl took it).
    @Test(arguments: bothEngines)
    func anUpperCaseSchemeIsThatScheme(engineName: String) async throws {
        let engine = try namedEngine(engineName)
        let upper = LoopbackServer.shared.baseURL.replacingOccurrences(of: "http://", with: "HTTP://")
        let direct = try await engine.perform(EngineRequest(url: URL(string: upper + "/anything/upper")!)) { _ in }
        #expect(direct.status == 200)
        #expect(direct.url?.absoluteString.hasPrefix("http://") == true, "\(engineName): \(direct.url as Any)")
        #expect(
            try JSONDecoder().decode(JSON.self, from: direct.body)["url"]?.string?.hasSuffix("/anything/upper") == true)
        let target = (upper + "/anything/redirected").addingPercentEncoding(withAllowedCharacters: .alphanumerics)!
        let redirected = try await engine.perform(
            EngineRequest(url: URL(string: LoopbackServer.shared.baseURL + "/redirect-to?url=" + target)!)
        ) { _ in }
        #expect(redirected.status == 200)
        let echo = try JSONDecoder().decode(JSON.self, from: redirected.body)
        #expect(echo["url"]?.string?.hasSuffix("/anything/redirected") == true)
    }

    /// An IPv4 address in an older form (`127.1`, `0x7f.1`, `2130706433`, `0177.0.0.1`), which libcurl reads as
    /// `127.0.0.1` as browsers do: both engines reach the server, directly and by a redirect, send the address in the
    /// usual form, and answer with that URL. URLSession on Linux refused such a URL as a bad URL (`-1000`, reported as
    /// a transport failure) where CurlEngine reached it. A cookie stored for `127.0.0.1` goes with a request to
    /// `127.1`, on both engines: it is sent to that address.
    @Test(arguments: bothEngines)
    func anIPv4AddressInAnOlderFormIsThatAddress(engineName: String) async throws {
        let storage = privateCookieStorage()
        let engine = try CookieRulesTests.engine(engineName, cookies: storage)
        let port = try #require(URL(string: LoopbackServer.shared.baseURL)?.port)
        let set = try await engine.perform(
            EngineRequest(url: URL(string: "http://127.0.0.1:\(port)/cookies/set?older=1")!)
        ) { _ in }
        #expect(set.status == 302 || set.status == 200, "\(engineName)")
        // Some twice in a row: CurlEngine reuses a handle for the same URL, and keeps the URL its responses report
        // with it.
        for host in ["127.1", "0x7f.1", "0x7f.1", "2130706433", "0177.0.0.1", "0177.0.0.1", "127.0.1"] {
            let direct = try await engine.perform(EngineRequest(url: URL(string: "http://\(host):\(port)/cookies")!)) {
                _ in
            }
            #expect(direct.status == 200, "\(engineName), \(host)")
            #expect(direct.url?.absoluteString == "http://127.0.0.1:\(port)/cookies", "\(engineName), \(host)")
            let cookies = try JSONDecoder().decode(JSON.self, from: direct.body)["cookies"]?.object
            #expect(cookies?.keys.sorted() == ["older"], "\(engineName), \(host): the cookie for 127.0.0.1")
        }
        let target = "http://127.1:\(port)/headers".addingPercentEncoding(withAllowedCharacters: .alphanumerics)!
        let redirected = try await engine.perform(
            EngineRequest(url: URL(string: LoopbackServer.shared.baseURL + "/redirect-to?url=" + target)!)
        ) { _ in }
        #expect(redirected.status == 200, "\(engineName)")
        let echo = try JSONDecoder().decode(JSON.self, from: redirected.body)
        #expect(echo["headers"]?["Host"]?.string == "127.0.0.1:\(port)", "\(engineName): \(echo)")
    }

    @Test func anIPv4AddressInAnOlderFormIsWrittenInTheUsualOne() {
        func canonical(_ text: String) -> String? { URLComposition.canonical(text)?.absoluteString }
        #expect(canonical("http://127.1:8080/a?b#c") == "http://127.0.0.1:8080/a?b#c")
        #expect(canonical("HTTP://u:p@0x7F.1/") == "http://u:p@127.0.0.1/")
        #expect(canonical("http://2130706433/") == "http://127.0.0.1/")
        #expect(canonical("http://0177.0.0.01/") == "http://127.0.0.1/")
        #expect(canonical("http://1.16777215/") == "http://1.255.255.255/")
        #expect(canonical("http://0xcafe/") == "http://0.0.202.254/")
        #expect(canonical("http://127.000.0.1/") == "http://127.0.0.1/")
        #expect(canonical("HTTPS://example.com/") == "https://example.com/")
        // The usual form already, or a name: nothing to change.
        for unchanged in [
            "http://127.0.0.1:8080/", "http://10.0.0.255/", "http://localhost/", "http://cafe/", "http://a.b.c.d/",
            "http://08.1/", "http://0x/", "http://1.2.3.4.5/", "http://256.1.1.1/", "http://1.16777216/",
            "http://4294967296/", "http://127.0.0.1./", "http://127..1/", "http://[::1]/", "http://1.2.3.0x100/",
        ] {
            #expect(canonical(unchanged) == nil, "\(unchanged)")
        }
    }

    /// An IPv6 address in a URL (`http://[::1]:port/`): CurlEngine reaches it, directly and by a redirect. URLSession
    /// on Linux refuses every such URL before it connects (FoundationNetworking compares the host without brackets to
    /// libcurl's with them), which URLSessionEngine reported as "The operation could not be completed (-1000)", a
    /// transport failure: it now says `.unsupported`, and why, before anything is sent.
    @Test(.enabled(if: canListenOnIPv6, "needs the IPv6 loopback address"), arguments: bothEngines)
    func anIPv6AddressInAURLIsReachedOrRefusedClearly(engineName: String) async throws {
        let (server, received) = try countingHttpbin(ipv6: true)
        defer { server.stop() }
        let engine = try namedEngine(engineName)
        let redirect =
            LoopbackServer.shared.baseURL + "/redirect-to?url="
            + (server.baseURL + "/get").addingPercentEncoding(withAllowedCharacters: .alphanumerics)!
        for url in [server.baseURL + "/get", redirect] {
            do {
                let response = try await engine.perform(EngineRequest(url: URL(string: url)!)) { _ in }
                #expect(engineName == "CurlEngine" || !Self.sessionRefusesIPLiterals, "\(engineName) reached \(url)")
                #expect(response.status == 200)
            } catch {
                let error = HTTPError.from(error)
                #expect(engineName == "URLSessionEngine" && Self.sessionRefusesIPLiterals, "\(engineName): \(error)")
                #expect(error.code == .unsupported, "\(error)")
                #expect(error.message.contains("cannot send to an IPv6 address in a URL (::1)"), "\(error.message)")
            }
        }
        let expected = engineName == "URLSessionEngine" && Self.sessionRefusesIPLiterals ? 0 : 2
        #expect(received.withLock { $0 } == expected)
    }

    /// Whether a server can listen on `::1` here.
    static let canListenOnIPv6: Bool = {
        guard let server = try? LoopbackServer(ipv6: true) else { return false }
        server.stop()
        return true
    }()

    /// Whether URLSession here is FoundationNetworking's (Linux), which refuses IPv6 addresses in URLs.
    static var sessionRefusesIPLiterals: Bool {
        #if canImport(FoundationNetworking)
        true
        #else
        false
        #endif
    }

    @Test func anIPLiteralHostIsFoundInTheAuthorityOnly() {
        #expect(URLComposition.hasIPLiteralHost(URL(string: "http://[::1]:80/x")!))
        #expect(URLComposition.hasIPLiteralHost(URL(string: "HTTPS://user:pw@[fe80::1]/")!))
        #expect(!URLComposition.hasIPLiteralHost(URL(string: "http://example.com/[x]")!))
        #expect(!URLComposition.hasIPLiteralHost(URL(string: "http://example.com/?q=[::1]")!))
        #expect(!URLComposition.hasIPLiteralHost(URL(string: "http://127.0.0.1:8080/")!))
    }

    /// Both engines follow 20 redirects and refuse the 21st, in the same words.
    @Test(arguments: bothEngines)
    func twentyRedirectsAreFollowedAndNoMore(engineName: String) async throws {
        let engine = try namedEngine(engineName)
        let base = LoopbackServer.shared.baseURL
        let followed = try await engine.perform(EngineRequest(url: URL(string: base + "/redirect/20")!)) { _ in }
        #expect(followed.status == 200)
        await #expect {
            _ = try await engine.perform(EngineRequest(url: URL(string: base + "/redirect/21")!)) { _ in }
        } throws: { error in
            let error = HTTPError.from(error)
            return error.code == .transport && error.message.hasPrefix("more than 20 redirects")
        }
    }

    @Test(arguments: bothEngines)
    func onlyHTTPAndHTTPSURLsArePerformed(engineName: String) async throws {
        let engine = try namedEngine(engineName)
        for url in ["file:///etc/hostname", "dict://127.0.0.1:1/info", "ftp://127.0.0.1:1/x"] {
            do {
                _ = try await engine.perform(EngineRequest(urlRequest: URLRequest(url: URL(string: url)!))) { _ in }
                Issue.record("\(engineName) performed \(url)")
            } catch let error as HTTPError {
                #expect(error.code == .invalidURL, "\(engineName), \(url): \(error)")
            }
        }
    }

    @Test(arguments: bothEngines)
    func urlsWithoutAHostAreRefusedBeforeAnythingIsSent(engineName: String) async throws {
        let engine = try namedEngine(engineName)
        // Each is a URL Foundation accepts (scheme http or https) but with no host, or an empty one.
        for url in ["http:///x", "http://:80/x", "https://user@/x", "http:x", "HTTP:///x"] {
            do {
                _ = try await engine.perform(EngineRequest(urlRequest: URLRequest(url: URL(string: url)!))) { _ in }
                Issue.record("\(engineName) performed \(url)")
            } catch let error as HTTPError {
                #expect(error.code == .invalidURL, "\(engineName), \(url): \(error)")
                #expect(error.message.contains("no host"), "\(engineName), \(url): \(error.message)")
            }
        }
        // Upper-case schemes and IP literals are hosts like any other: these reach the (closed) port and fail there.
        for url in ["HTTP://127.0.0.1:1/x", "http://[::1]:1/x"] {
            do {
                _ = try await engine.perform(EngineRequest(urlRequest: URLRequest(url: URL(string: url)!))) { _ in }
                Issue.record("\(engineName) got an answer from a closed port for \(url)")
            } catch let error as HTTPError {
                #expect(error.code != .invalidURL, "\(engineName), \(url): \(error)")
            } catch {
                // A transport error (URLError): the URL passed the check.
            }
        }
    }

    /// A standard method written in another case is that method, on both engines and for the center's rules:
    /// `get` went out as `GET` on URLSessionEngine (URLSession upper-cases six of them) but as `get` on CurlEngine,
    /// with its parameters in the body. Other tokens go as written.
    @Test(arguments: bothEngines)
    func aStandardMethodInAnotherCaseIsThatMethod(engineName: String) async throws {
        #expect(HTTPMethod(rawValue: "get") == .get)
        #expect(HTTPMethod(rawValue: "Patch") == .patch)
        #expect(("options" as HTTPMethod) == .options)
        #expect(HTTPMethod(rawValue: "propfind").rawValue == "propfind")
        #expect(HTTPMethod(rawValue: "optıons").rawValue == "optıons", "not ASCII: not a standard method")
        let center = try Self.center(engineName)
        for (written, sent) in [("get", "GET"), ("Patch", "PATCH"), ("post", "POST"), ("Purge", "Purge")] {
            let response = try await center.send { request in
                request.url = LoopbackServer.shared.baseURL + "/anything"
                request.method = HTTPMethod(rawValue: written)
                request.parameters = ["k": "v"]
            }
            #expect(response.json?["method"]?.string == sent, "\(engineName), \(written)")
            let inQuery = response.json?["args"]?["k"]?.string == "v"
            #expect(inQuery == (sent == "GET"), "\(engineName), \(written): parameters in the query only for GET")
        }
    }

    /// The blanks after a `Location` are not part of it, on both engines: URLSession on Linux keeps them, and
    /// URLSessionEngine followed `/anything/x` with two spaces and a tab to `/anything/x%20%20%09`.
    @Test(arguments: bothEngines)
    func aLocationWithBlanksAfterItLeadsWhereItSays(engineName: String) async throws {
        let center = try Self.center(engineName)
        let response = try await center.send { request in
            request.url = LoopbackServer.shared.baseURL + "/fault/location?to=%2Fanything%2Fx%20%20%09"
        }
        #expect(response.url?.absoluteString == LoopbackServer.shared.baseURL + "/anything/x")
    }

    /// A redirect with two `Location` fields that differ goes nowhere, on both engines, with the same error (browsers
    /// refuse one too): both engines joined them and followed `/get, /anything` to `/get,%20/anything`, and
    /// `/get` with an empty second field to `/get,`. The same value twice is that value. The error names neither
    /// value (a URL may carry a token).
    @Test(arguments: bothEngines)
    func aRedirectWithLocationsThatDifferGoesNowhere(engineName: String) async throws {
        let center = try Self.center(engineName)
        for (status, second) in [("302", "%2Fanything"), ("301", ""), ("307", "%2Fanything%3Fsecret%3Dk9")] {
            let outcome = await center.sendRecording { request in
                request.url =
                    LoopbackServer.shared.baseURL + "/fault/location?status=\(status)&to=%2Fget&also=\(second)"
                if status == "307" {
                    request.method = .put
                    request.body = .data(Data("kept".utf8), contentType: "text/plain")
                }
            }
            let error = try #require(
                outcome.error, "\(engineName) \(status): \(String(describing: outcome.response?.url))")
            #expect(error.code == .transport, "\(engineName) \(status): \(error)")
            #expect((error.underlying as? URLError)?.code == .badServerResponse, "\(engineName) \(status): \(error)")
            #expect(error.message.contains("with 2 Location fields that differ"), "\(engineName): \(error.message)")
            #expect(!error.message.contains("k9"), "\(engineName): a Location's value in \(error.message)")
        }
        let same = try await center.send { request in
            request.url = LoopbackServer.shared.baseURL + "/fault/location?to=%2Fget&also=%2Fget"
        }
        #expect(same.url?.absoluteString == LoopbackServer.shared.baseURL + "/get", "\(engineName)")
    }

    /// Credentials in a URL's user info go as Basic authorization, on both engines, and stay with their origin: a
    /// redirect within it keeps them, one to another origin (`localhost` for `127.0.0.1`) does not.
    @Test(arguments: bothEngines)
    func userInfoCredentialsStayWithTheirOrigin(engineName: String) async throws {
        let center = try Self.center(engineName)
        let base = LoopbackServer.shared.baseURL
        let withUser = base.replacingOccurrences(of: "http://", with: "http://ada:pw@")
        let elsewhere = base.replacingOccurrences(of: "127.0.0.1", with: "localhost") + "/headers"
        let basic = "Basic " + Data("ada:pw".utf8).base64EncodedString()
        let direct = try await center.send { $0.url = withUser + "/headers" }
        #expect(direct.json?["headers"]?["Authorization"]?.string == basic)
        let same = try await center.send { $0.url = withUser + "/redirect-to?url=%2Fheaders" }
        #expect(same.json?["headers"]?["Authorization"]?.string == basic)
        let encoded = elsewhere.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!
        let cross = try await center.send { $0.url = withUser + "/redirect-to?url=" + encoded }
        #expect(cross.url?.host == "localhost")
        #expect(cross.json?["headers"]?["Authorization"] == nil, "\(engineName): credentials left their origin")
    }

    /// Header fields with secret names (`X-Api-Key`, `Private-Token`, by the console log's rule) stay with their
    /// origin at a redirect, on both engines, as `Authorization` does: both engines sent them on to whatever host a
    /// redirect named. A redirect within the origin keeps them, other fields go everywhere, and
    /// `forwardsSecretHeaders` sends them on.
    @Test(arguments: bothEngines)
    func secretHeadersStayWithTheirOrigin(engineName: String) async throws {
        let base = LoopbackServer.shared.baseURL
        let elsewhere = base.replacingOccurrences(of: "127.0.0.1", with: "localhost") + "/headers"
        let encoded = try #require(elsewhere.addingPercentEncoding(withAllowedCharacters: .alphanumerics))
        let engine = try namedEngine(engineName)
        for forwards in [false, true] {
            let center = testCenter { config in
                config.engine = engine
                config.headers["X-Api-Key"] = "key-1"
                config.forwardsSecretHeaders = forwards
            }
            for (path, crosses) in [("/redirect-to?url=%2Fheaders", false), ("/redirect-to?url=" + encoded, true)] {
                let response = try await center.send { request in
                    request.url = base + path
                    request.headers["Private-Token"] = "tok-2"
                    request.headers["X-Trace"] = "t-3"
                }
                let seen = try #require(response.json?["headers"])
                let kept = !crosses || forwards
                #expect(response.url?.host == (crosses ? "localhost" : "127.0.0.1"))
                #expect((seen["X-Api-Key"]?.string == "key-1") == kept, "\(engineName) \(path) \(forwards)")
                #expect((seen["Private-Token"]?.string == "tok-2") == kept, "\(engineName) \(path) \(forwards)")
                #expect(seen["X-Trace"]?.string == "t-3", "\(engineName) \(path)")
            }
        }
    }

    /// A request field with an empty value is sent, empty, on both engines; CurlEngine left it out (libcurl takes
    /// `Name:` with nothing after it as "remove this field").
    @Test(arguments: bothEngines)
    func aFieldWithAnEmptyValueIsSent(engineName: String) async throws {
        let center = try Self.center(engineName)
        let response = try await center.send { request in
            request.url = LoopbackServer.shared.baseURL + "/headers"
            request.headers["X-Empty"] = ""
            request.headers["X-Blank"] = " "
            request.headers["Accept"] = ""
        }
        let seen = try #require(response.json?["headers"])
        #expect(seen["X-Empty"]?.string == "")
        #expect(seen["X-Blank"]?.string == "")
        #expect(seen["Accept"]?.string == "", "not libcurl's own */*")
    }

    /// A `Location` that is a relative path resolves against the URL that answered (RFC 3986), on both engines, for
    /// redirects URLSession follows itself (a `GET`) and ones the engine re-sends (a `307` with a body). URLSession
    /// on Linux put such a path under the root: `../anything/x` from `/fault/location` went to `/../anything/x`.
    @Test(arguments: bothEngines, ["302", "307"])
    func aRelativeLocationResolvesAgainstTheURLThatAnswered(engineName: String, status: String) async throws {
        let center = try Self.center(engineName)
        let response = try await center.send { request in
            let target = "..%2Fanything%2Frel%3Fq%3D1"  // ../anything/rel?q=1
            request.url = LoopbackServer.shared.baseURL + "/fault/location?status=\(status)&to=\(target)"
            if status == "307" {
                request.method = .put
                request.body = .data(Data("kept".utf8), contentType: "text/plain")
            }
        }
        let expected = LoopbackServer.shared.baseURL + "/anything/rel?q=1"
        #expect(response.url?.absoluteString == expected)
        #expect(response.json?["url"]?.string == expected, "the path the server saw")
        if status == "307" { #expect(response.json?["data"]?.string == "kept") }
    }

    @Test(arguments: bothEngines)
    func aRedirectToAnotherSchemeIsAnsweredNotFollowed(engineName: String) async throws {
        let center = try Self.center(engineName)
        let outcome = await center.sendRecording { request in
            request.url = LoopbackServer.shared.baseURL + "/redirect-to?url=file%3A%2F%2F%2Fetc%2Fhostname"
        }
        #expect(outcome.error?.code == .unacceptableStatus)
        #expect(outcome.error?.status == 302, "\(String(describing: outcome.error))")
        #expect(outcome.error?.response?.headers["Location"] == "file:///etc/hostname")
    }

    /// A 307/308 with a body is re-sent by the engine itself; URLSession must not also follow its own (body-less)
    /// proposal, which reached the target as a second request before.
    @Test(arguments: bothEngines)
    func aRedirectedPostReachesItsTargetOnce(engineName: String) async throws {
        let center = try Self.center(engineName)
        let key = "redirect-once-\(engineName)-\(UUID().uuidString)"
        let response = try await center.send { request in
            request.url = LoopbackServer.shared.baseURL + "/redirect-to?status_code=307&url=%2Ffail-times%2F0%2F" + key
            request.method = .post
            request.body = .json(["payload": "kept"])
        }
        #expect(response.json?["call"]?.int == 1)
    }

    /// URLSessionEngine's side of the downgrade rule: the decision URLSession's redirect delegate asks for.
    @Test(arguments: [false, true])
    func urlSessionEngineRefusesAnHTTPSToHTTPRedirectUnlessAllowed(allowed: Bool) throws {
        var request = EngineRequest(urlRequest: URLRequest(url: URL(string: "https://secure.example.com/login")!))
        request.body = .data(Data("password=pw".utf8))
        request.allowsInsecureRedirects = allowed
        let transfer = SessionTransfer(request: request, progress: { _ in }, engine: URLSessionEngine.shared)
        let response = try #require(
            HTTPURLResponse(
                url: URL(string: "https://secure.example.com/login")!, statusCode: 308, httpVersion: "HTTP/1.1",
                headerFields: ["Location": "http://plain.example.com/login"]))
        let next = transfer.redirect(response, to: URLRequest(url: URL(string: "http://plain.example.com/login")!))
        #expect(next == nil)  // a 308 with a body is always re-sent by hand, never by URLSession
        if allowed {
            #expect(transfer.stopError == nil)
        } else {
            #expect((transfer.stopError as? HTTPError)?.code == .insecureRedirect)
        }
    }

    @Test func theSharedRuleRefusesOnlyHTTPSToHTTP() {
        var request = EngineRequest(urlRequest: URLRequest(url: URL(string: "https://a.example/")!))
        let https = URL(string: "https://a.example/")!
        let http = URL(string: "http://b.example/")!
        #expect(Redirects.refusal(from: https, to: http, for: request)?.code == .insecureRedirect)
        #expect(Redirects.refusal(from: https, to: https, for: request) == nil)
        #expect(Redirects.refusal(from: http, to: http, for: request) == nil)
        #expect(
            Redirects.refusal(
                from: URL(string: "HTTPS://a.example/"), to: URL(string: "HTTP://b.example/"), for: request) != nil)
        request.allowsInsecureRedirects = true
        #expect(Redirects.refusal(from: https, to: http, for: request) == nil)
    }

    @Test(arguments: bothEngines)
    func aPortOutsideTheRangeIsAnInvalidURL(engineName: String) async throws {
        let engine = try namedEngine(engineName)
        for url in ["http://127.0.0.1:70000/get", "http://127.0.0.1:0/get"] {
            let outcome = await testCenter { $0.engine = engine }.sendRecording { $0.url = url }
            #expect(outcome.error?.code == .invalidURL, "\(engineName), \(url): \(String(describing: outcome.error))")
        }
    }
}
