import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
@testable import Switchboard
import SwitchboardTestSupport

/// Which stored cookies go with a request, on both engines alike (RFC 6265 section 5.4). `HTTPCookieStorage` on Linux
/// matches the domain only, and both engines sent a `Secure` cookie over plain http, a cookie for another path, and
/// (URLSession) the stored cookies in place of a request's own `Cookie` field.
@Suite struct CookieRulesTests {
    /// A private storage holding one cookie of each kind for the loopback server's host.
    static func storage() -> HTTPCookieStorage {
        let storage = privateCookieStorage()
        for (name, path, secure) in [
            ("plain", "/", false), ("secure", "/", true), ("admin", "/admin", false), ("cookies", "/cookies", false),
            ("cook", "/cook", false), ("tossed", "/", false),
        ] {
            // `tossed`: what a server at 127.0.0.1 gets stored with `Domain=0.0.1`, a domain for every x.0.0.1.
            var properties: [HTTPCookiePropertyKey: Any] = [
                .name: name, .value: "1", .domain: name == "tossed" ? ".0.0.1" : "127.0.0.1", .path: path,
            ]
            if secure { properties[.secure] = "TRUE" }
            storage.setCookie(HTTPCookie(properties: properties)!)
        }
        return storage
    }

    static func engine(_ name: String, cookies: HTTPCookieStorage) throws -> any Engine {
        if name == "CurlEngine" { return try CurlEngine(cookies: cookies) }
        let configuration = URLSessionConfiguration.ephemeral
        configuration.httpCookieStorage = cookies
        return URLSessionEngine(configuration: configuration)
    }

    /// The cookie names the loopback server received.
    static func received(_ response: Response) -> Set<String> {
        Set(response.json?["cookies"]?.object?.keys.map { $0 } ?? [])
    }

    @Test(arguments: bothEngines)
    func onlyCookiesForThePathAndSchemeAreSent(engineName: String) async throws {
        let engine = try Self.engine(engineName, cookies: Self.storage())
        let center = testCenter { $0.engine = engine }
        let base = LoopbackServer.shared.baseURL
        // Not `secure` over plain http, not `admin` (another path), not `cook` (`/cookies` does not start a segment
        // there), not `tossed` (a domain cookie never goes to an IP address other than its own).
        let direct = try await center.send { $0.url = base + "/cookies" }
        #expect(Self.received(direct) == ["plain", "cookies"])
        // The same after a redirect from a path the `cookies` cookie does not cover.
        let redirected = try await center.send { $0.url = base + "/redirect-to?url=%2Fcookies" }
        #expect(Self.received(redirected) == ["plain", "cookies"])
        // A request's own `Cookie` field is sent instead of the stored ones.
        let own = try await center.send {
            $0.url = base + "/cookies"
            $0.headers["Cookie"] = "mine=1"
        }
        #expect(Self.received(own) == ["mine"])
    }

    /// A cookie made in code can hold a line break or a `;`, which a `Set-Cookie` field cannot: both engines leave it
    /// out rather than let it add fields of its own to the request, or another cookie.
    @Test(arguments: bothEngines)
    func aCookieThatWouldBreakTheCookieFieldIsLeftOut(engineName: String) async throws {
        let storage = privateCookieStorage()
        for (name, value) in [("plain", "1"), ("broken", "1\r\nX-Injected: 1"), ("sneaky", "1; admin=1")] {
            storage.setCookie(
                try #require(HTTPCookie(properties: [.name: name, .value: value, .domain: "127.0.0.1", .path: "/"])))
        }
        let engine = try Self.engine(engineName, cookies: storage)
        let center = testCenter { $0.engine = engine }
        let echo = try await center.send { $0.url = LoopbackServer.shared.baseURL + "/anything" }
        let headers = try #require(echo.json?["headers"]?.object)
        #expect(headers["Cookie"]?.string == "plain=1")
        #expect(headers["X-Injected"] == nil)
    }

    /// Each `Set-Cookie` field is read on its own: CurlEngine read them joined with `, ` (as repeated fields are), so a
    /// malformed field after a `Secure` cookie became part of that cookie's attributes, and the cookie was stored
    /// without `Secure` (and then sent over plain http). URLSession reads each line apart. Over plain http the
    /// `Secure` cookie is not stored at all (`aSecureCookieComesOverHTTPSOnly`); read joined, it was, as a plain one.
    @Test(arguments: bothEngines)
    func eachSetCookieFieldIsReadOnItsOwn(engineName: String) async throws {
        let storage = privateCookieStorage()
        let engine = try Self.engine(engineName, cookies: storage)
        _ = try await engine.perform(
            EngineRequest(url: URL(string: LoopbackServer.shared.baseURL + "/fault/cookie-fields")!)
        ) { _ in }
        let stored = Dictionary(uniqueKeysWithValues: (storage.cookies ?? []).map { ($0.name, $0) })
        #expect(stored["plain"]?.isSecure == false)
        #expect(stored["guarded"] == nil, "\(engineName): \(stored.keys.sorted())")
        // And the fields read apart as they are read over https keep `Secure` (the same rules on both engines).
        let https = try #require(URL(string: "https://127.0.0.1/fault/cookie-fields"))
        let apart = CookieRules.cookies(from: ["plain=1", "guarded=1; Secure", "=junk"], for: https)
        #expect(apart.map(\.name) == ["plain", "guarded"])
        #expect(apart.last?.isSecure == true)
        // Nothing is sent over plain http but the plain one.
        let echo = try await engine.perform(
            EngineRequest(url: URL(string: LoopbackServer.shared.baseURL + "/cookies")!)
        ) { _ in }
        let cookies = try JSONDecoder().decode(JSON.self, from: echo.body)["cookies"]?.object
        #expect(cookies?.keys.sorted() == ["plain"], "\(engineName)")
    }

    /// `HTTPCookie` on Linux stopped the process at a cookie or attribute name holding a character of several scalars
    /// (a flag, a letter with a combining accent), and lost the value of a cookie with any other non-ASCII name: a
    /// server's `Set-Cookie` field ended the app, on both engines. So did a value or attribute whose `=` a combining
    /// accent joins, with another `=` after it, and an `Expires` date with a combining mark (`DateFormatter` traps).
    /// Such a cookie is ignored, as is one with a control character; an attribute with such a name or `=` is dropped,
    /// and the cookie kept; an `Expires` is read as a cookie date without `HTTPCookie`; the others are stored.
    @Test(arguments: bothEngines)
    func aCookieHTTPCookieCannotReadIsIgnored(engineName: String) async throws {
        let storage = privateCookieStorage()
        let engine = try Self.engine(engineName, cookies: storage)
        let response = try await engine.perform(
            EngineRequest(url: URL(string: LoopbackServer.shared.baseURL + "/fault/unreadable-cookies")!)
        ) { _ in }
        #expect(response.status == 200)
        let stored = Dictionary(uniqueKeysWithValues: (storage.cookies ?? []).map { ($0.name, $0) })
        #expect(stored.keys.sorted() == ["dated", "held", "kept", "plain"], "\(engineName)")
        #expect(stored["dated"]?.value == "5", "\(engineName)")
        #expect(stored["dated"]?.expiresDate == Date(timeIntervalSince1970: 2_139_722_880), "\(engineName)")
        #expect(stored["kept"]?.value == "1" && stored["kept"]?.path == "/", "\(engineName)")
        #expect(stored["plain"]?.value == "2", "\(engineName)")
        #expect(stored["held"]?.value == "4" && stored["held"]?.path == "/", "\(engineName)")
        #expect(stored["held"]?.expiresDate == nil, "\(engineName): the Max-Age it could not read was dropped")
    }

    @Test func readableCookieTexts() {
        #expect(CookieRules.readable("a=1; Path=/") == "a=1; Path=/")
        #expect(
            CookieRules.readable("a=\u{1F1EB}\u{1F1F7}; Path=/\u{1F1EB}") == "a=\u{1F1EB}\u{1F1F7}; Path=/\u{1F1EB}")
        #expect(CookieRules.readable("a=1; \u{1F1EB}\u{1F1F7}=x; Secure") == "a=1; Secure")
        #expect(CookieRules.readable("a=1;\u{E9}") == "a=1")
        // An `=` joined by the mark after it: the cookie is ignored, the attribute dropped; a later such `=` is read.
        #expect(CookieRules.readable("a=1; Max-Age=\u{301}5=; Path=/") == "a=1; Path=/")
        #expect(CookieRules.readable("a=1=\u{301}; c=d=\u{301}") == "a=1=\u{301}; c=d=\u{301}")
        // An `Expires` that is not printable ASCII never reaches HTTPCookie's DateFormatter, which stops the process at
        // a combining mark; the expiry is still read from the text as it came, as a cookie date.
        let dated = "a=1; Expires=Wed, 21 Oct 2037 07:28:00 GMT\u{7F2}; Path=/"
        #expect(CookieRules.readable(dated) == "a=1; Path=/")
        #expect(CookieRules.readable("a=\u{E9}; expires=Wed, 21 Oct 2037 07:28:00 GMT") != nil)
        let cookie = CookieRules.cookie(fromText: dated, for: URL(string: "https://a.example.com/")!)
        #expect(cookie?.expiresDate == Date(timeIntervalSince1970: 2_139_722_880))
        #expect(
            CookieRules.cookie(
                fromText: "a=1; Expires=Wed, 21 Oct 2037 07:28\u{7F2} GMT", for: URL(string: "https://a.example.com/")!)?
                .expiresDate == nil)
        // Joined with `, ` (as URLSession joins the fields), a cookie with such a name is split off, not read as the
        // end of the cookie before it.
        #expect(CookieRules.cookieTexts("a=1; Path=/, e\u{301}=3, b=2") == ["a=1; Path=/", "e\u{301}=3", "b=2"])
        for ignored in [
            "\u{1F1EB}\u{1F1F7}x=1", "e\u{301}=1", "\u{E9}=1", "t\r\n=", "a=1\u{7F}", "a=1; Path=/\n", "a=\u{301}=x",
            "=\u{486}x =\u{344}=", "a=\u{200D}=b", "a=\u{338}b",
        ] {
            #expect(CookieRules.readable(ignored) == nil, "\(ignored.debugDescription)")
        }
        // Each that stopped the process or lost its value, read through the rules: none stored, nothing stopped.
        let url = URL(string: "https://a.example.com/")!
        for text in [
            "\u{1F1EB}\u{1F1F7}x=1", "a=1; \u{1F1EB}\u{1F1F7}=x", "a=1; e\u{301}x\u{301}=1; Path=/p", "t\r\n=",
            "a=\u{301}=x", "=\u{486}x =\u{344}\u{FFFD}=",
        ] {
            let cookie = CookieRules.cookie(fromText: text, for: url)
            #expect(cookie == nil || cookie?.name == "a", "\(text.debugDescription)")
        }
    }

    /// A cookie set by a `set-cookie` field (HTTP/2 sends every field name in lower case, and many HTTP/1.1 servers
    /// spell it so) is stored: URLSession on Linux stored those of `Set-Cookie` alone (CurlEngine stored all). The same
    /// on a redirect, whose cookies go with the next request.
    @Test(arguments: bothEngines)
    func aCookieSetInLowerCaseIsStored(engineName: String) async throws {
        for redirect in [false, true] {
            let storage = privateCookieStorage()
            storage.setCookie(
                try #require(HTTPCookie(properties: [.name: "gone", .value: "1", .domain: "127.0.0.1", .path: "/"])))
            let engine = try Self.engine(engineName, cookies: storage)
            let base = LoopbackServer.shared.baseURL
            let first = try await engine.perform(
                EngineRequest(url: URL(string: base + "/fault/lowercase-cookies" + (redirect ? "?redirect=1" : ""))!)
            ) { _ in }
            #expect(first.status == 200)
            let names = Set((storage.cookies ?? []).map(\.name))
            #expect(names == ["lower", "other"], "\(engineName), redirect: \(redirect)")
            let echo =
                redirect
                ? first
                : try await engine.perform(EngineRequest(url: URL(string: base + "/cookies")!)) { _ in }
            let sent = try JSONDecoder().decode(JSON.self, from: echo.body)["cookies"]?.object
            #expect(Set(sent?.keys.map { $0 } ?? []) == ["lower", "other"], "\(engineName), redirect: \(redirect)")
        }
    }

    /// `Max-Age` counts on both engines (RFC 6265 section 5.2.2; `HTTPCookie`'s parser on Linux ignores it): zero
    /// deletes a stored cookie, as a logout does (it stayed stored and went on being sent), and a number of seconds
    /// sets its expiry (it lived as long as the process).
    @Test(arguments: bothEngines)
    func maxAgeDeletesOrDatesACookie(engineName: String) async throws {
        let storage = privateCookieStorage()
        let engine = try Self.engine(engineName, cookies: storage)
        let base = LoopbackServer.shared.baseURL
        func send(_ path: String) async throws -> JSON {
            let response = try await engine.perform(EngineRequest(url: URL(string: base + path)!)) { _ in }
            return try JSONDecoder().decode(JSON.self, from: response.body)
        }
        let set = "/response-headers?Set-Cookie="
        _ = try await send(set + "session%3Dabc%3B%20Path%3D%2F")
        #expect(try await send("/cookies")["cookies"]?["session"]?.string == "abc")
        _ = try await send(set + "session%3Dabc%3B%20Max-Age%3D0%3B%20Path%3D%2F")
        #expect(try await send("/cookies")["cookies"]?.object?.isEmpty == true, "\(engineName)")
        #expect(storage.cookies?.isEmpty == true, "\(engineName)")
        // Sixty seconds from when the response arrived: between the send and its end (however long the suite's
        // load made that), with a second's slack for the clock's rounding.
        let before = Date()
        _ = try await send(set + "minute%3D1%3B%20max-age%3D60")
        let after = Date()
        let expires = try #require(storage.cookies?.first { $0.name == "minute" }?.expiresDate, "\(engineName)")
        #expect(expires >= before + 59 && expires <= after + 61, "\(engineName): \(expires), sent \(before)-\(after)")
    }

    /// Has the loopback server answer a request to `path` with these `Set-Cookie` fields, each apart, on the named
    /// engine; returns the new storage they went to and a center on that engine.
    static func setCookies(
        _ fields: [String], from path: String, engineName: String
    ) async throws -> (HTTPCookieStorage, Center) {
        let storage = privateCookieStorage()
        let engine = try Self.engine(engineName, cookies: storage)
        let center = testCenter { $0.engine = engine }
        let query = fields.map { "set=" + FormEncoding.escape($0) }.joined(separator: "&")
        _ = try await center.send { $0.url = LoopbackServer.shared.baseURL + path + "?" + query }
        return (storage, center)
    }

    /// A cookie without a valid `Path` gets the default path of the URL that set it (RFC 6265 sections 5.1.4 and
    /// 5.2.4), on both engines: both gave it `/`, and a cookie set by `/cookie-jar/a/b/login` went with every request
    /// to the host. On URLSessionEngine the fields arrive joined; each cookie is still read on its own.
    @Test(arguments: bothEngines)
    func aCookieWithoutAPathIsScopedToItsDirectory(engineName: String) async throws {
        let (storage, center) = try await Self.setCookies(
            [
                "scoped=1", "invalid=1; Path=elsewhere", "empty=1; Path=", "root=1; Path=/",
                "up=1; Path=/cookie-jar/a", "dated=1; Expires=Wed, 21 Oct 2099 07:28:00 GMT",
                "last=1; Path=/; Path=nowhere",
            ], from: "/cookie-jar/a/b/login", engineName: engineName)
        let base = LoopbackServer.shared.baseURL
        let paths = Dictionary((storage.cookies ?? []).map { ($0.name, $0.path) }) { first, _ in first }
        let scoped = "/cookie-jar/a/b"
        #expect(
            paths == [
                "scoped": scoped, "invalid": scoped, "empty": scoped, "root": "/", "up": "/cookie-jar/a",
                "dated": scoped, "last": scoped,
            ], "\(engineName)")
        let deeper = try await center.send { $0.url = base + "/cookie-jar/a/b/c/page" }
        let everyCookie: Set = ["scoped", "invalid", "empty", "root", "up", "dated", "last"]
        #expect(Self.received(deeper) == everyCookie, "\(engineName)")
        let sibling = try await center.send { $0.url = base + "/cookie-jar/a/x" }
        #expect(Self.received(sibling) == ["root", "up"], "\(engineName)")
        let elsewhere = try await center.send { $0.url = base + "/cookies" }
        #expect(Self.received(elsewhere) == ["root"], "\(engineName)")
    }

    /// An `HttpOnly` cookie with a `Max-Age` keeps the flag (the cookie made anew with its expiry lost it), and so
    /// does one given its default path, on both engines.
    @Test(arguments: bothEngines)
    func aCookieMadeAnewKeepsHttpOnly(engineName: String) async throws {
        let (storage, center) = try await Self.setCookies(
            ["aged=1; Max-Age=600; HttpOnly; Path=/", "scoped=1; HttpOnly", "open=1; Path=/"],
            from: "/cookie-jar/a/login", engineName: engineName)
        let base = LoopbackServer.shared.baseURL
        let stored = Dictionary((storage.cookies ?? []).map { ($0.name, $0) }) { first, _ in first }
        for name in ["aged", "scoped"] {
            #expect(stored[name]?.isHTTPOnly == true, "\(engineName): \(name)")
        }
        #expect(stored["aged"]?.expiresDate != nil, "\(engineName)")
        #expect(stored["scoped"]?.path == "/cookie-jar/a", "\(engineName)")
        let sent = try await center.send { $0.url = base + "/cookie-jar/a/page" }
        #expect(Self.received(sent) == ["open", "aged", "scoped"], "\(engineName)")
    }

    /// A `Secure` cookie with a `Max-Age`, or given its default path, keeps `Secure` and `HttpOnly` when it is made
    /// anew (it lost both, and then went out over plain http). Set over https, through the storing both engines use
    /// (the loopback server's https is trusted by CurlEngine alone, so this is checked where the engines meet).
    @Test func aSecureCookieMadeAnewKeepsItsFlags() throws {
        let storage = privateCookieStorage()
        let url = try #require(URL(string: "https://127.0.0.1/cookie-jar/a/login"))
        CookieRules.store(
            ["aged=1; Max-Age=600; Secure; HttpOnly; Path=/", "scoped=1; Secure; HttpOnly"], for: url, in: storage)
        let stored = Dictionary((storage.cookies ?? []).map { ($0.name, $0) }) { first, _ in first }
        for name in ["aged", "scoped"] {
            #expect(stored[name]?.isSecure == true, "\(name)")
            #expect(stored[name]?.isHTTPOnly == true, "\(name)")
        }
        #expect(stored["aged"]?.expiresDate != nil)
        #expect(stored["scoped"]?.path == "/cookie-jar/a")
        let http = try #require(URL(string: "http://127.0.0.1/cookie-jar/a/page"))
        #expect(CookieRules.requestField(for: http, in: storage) == nil, "no Secure cookie over plain http")
        #expect(CookieRules.requestField(for: url, in: storage)?.contains("scoped=1") == true)
    }

    /// RFC 6265bis section 5.7, as browsers and curl apply it: a `Secure` cookie is kept only when it came over https,
    /// and over plain http no cookie replaces or deletes a stored `Secure` one (same name, domains matching either
    /// way, a path within its path). Both engines kept a `Secure` cookie set over plain http (which then went with
    /// every https request), and let plain http overwrite or delete the https session's cookie.
    @Test func aSecureCookieComesOverHTTPSOnlyAndPlainHTTPLeavesItAlone() throws {
        let https = try #require(URL(string: "https://shop.example.com/account/login"))
        let http = try #require(URL(string: "http://shop.example.com/account/login"))
        #expect(CookieRules.cookie(fromText: "s=1; Secure", for: http) == nil)
        #expect(CookieRules.cookie(fromText: "s=1; Secure", for: https)?.isSecure == true)
        #expect(CookieRules.cookie(fromText: "s=1", for: http) != nil)

        let cases: [(field: String, replaced: Bool)] = [
            ("sid=evil; Path=/", false),
            ("sid=evil; Path=/account", false),
            ("sid=evil; Path=/; Domain=example.com", false),
            ("sid=evil; Path=/; Max-Age=0", false),
            ("sid=evil; Path=/; Max-Age=600", false),
            ("SID=other; Path=/", true),
            ("other=1; Path=/", true),
        ]
        for (field, added) in cases {
            let storage = privateCookieStorage()
            CookieRules.store(["sid=good; Secure; Path=/; Domain=shop.example.com"], for: https, in: storage)
            CookieRules.store(["later=1; Secure; Path=/account"], for: https, in: storage)
            CookieRules.store([field], for: http, in: storage)
            let cookies = storage.cookies ?? []
            let sid = cookies.filter { $0.name == "sid" }
            #expect(sid.map(\.value) == ["good"] && sid.first?.isSecure == true, "\(field): \(sid.map(\.value))")
            #expect((cookies.count == 3) == added, "\(field): \(cookies.map(\.name))")
        }
        // A path above the secure cookie's is not within it: that cookie is another, and is kept beside it.
        let storage = privateCookieStorage()
        CookieRules.store(["later=1; Secure; Path=/account"], for: https, in: storage)
        CookieRules.store(["later=plain; Path=/"], for: http, in: storage)
        #expect(Set((storage.cookies ?? []).map(\.path)) == ["/account", "/"])
        // Over https the secure cookie is replaced and deleted as usual.
        CookieRules.store(["later=2; Secure; Path=/account"], for: https, in: storage)
        #expect((storage.cookies ?? []).first { $0.path == "/account" }?.value == "2")
        CookieRules.store(["later=2; Secure; Path=/account; Max-Age=0"], for: https, in: storage)
        #expect((storage.cookies ?? []).map(\.path) == ["/"])
    }

    /// The same end to end over plain http on both engines: a `Secure` cookie set there is not stored, and the
    /// stored `Secure` session cookie is neither replaced nor deleted by plain http, while other cookies are stored.
    @Test(arguments: bothEngines)
    func plainHTTPNeitherSetsNorReplacesSecureCookies(engineName: String) async throws {
        let storage = privateCookieStorage()
        storage.setCookie(
            try #require(
                HTTPCookie(properties: [
                    .name: "sid", .value: "good", .domain: "127.0.0.1", .path: "/", .secure: "TRUE",
                ])))
        let engine = try Self.engine(engineName, cookies: storage)
        let center = testCenter { $0.engine = engine }
        for fields in [["sid=evil; Path=/", "new=1; Secure; Path=/", "open=1; Path=/"], ["sid=gone; Max-Age=0"]] {
            let query = fields.map { "set=" + FormEncoding.escape($0) }.joined(separator: "&")
            _ = try await center.send { $0.url = LoopbackServer.shared.baseURL + "/cookie-jar/login?" + query }
        }
        let stored = Dictionary((storage.cookies ?? []).map { ($0.name, $0) }) { first, _ in first }
        #expect(Set(stored.keys) == ["sid", "open"], "\(engineName)")
        #expect(stored["sid"]?.value == "good" && stored["sid"]?.isSecure == true, "\(engineName)")
    }

    /// A response keeps cookies only for its own host and the domains above it (RFC 6265 section 5.3, step 6), on
    /// both engines. `HTTPCookie` on Linux keeps any `Domain`, and `HTTPCookieStorage` then compares it to the host as
    /// text: 127.0.0.1 stored a cookie for `.0.0.1` (every x.0.0.1), and deleted `localhost`'s own with `Max-Age=0`
    /// (a deletion is not checked at all).
    @Test(arguments: bothEngines)
    func aResponseCannotSetOrDeleteAnotherHostsCookies(engineName: String) async throws {
        let storage = privateCookieStorage()
        // As `Domain=localhost` from localhost stores it.
        storage.setCookie(
            HTTPCookie(properties: [.name: "victim", .value: "1", .domain: ".localhost", .path: "/"])!)
        let engine = try Self.engine(engineName, cookies: storage)
        let center = testCenter { $0.engine = engine }
        let fields = [
            "foreign=1; Domain=localhost; Path=/", "suffix=1; Domain=0.0.1; Path=/", "own=1; Domain=127.0.0.1; Path=/",
            "hostonly=1; Path=/", "victim=; Max-Age=0; Domain=localhost; Path=/",
        ]
        let query = fields.map { "set=" + FormEncoding.escape($0) }.joined(separator: "&")
        let base = LoopbackServer.shared.baseURL
        _ = try await center.send { $0.url = base + "/cookie-jar/login?" + query }
        let stored = Set((storage.cookies ?? []).map { "\($0.name)@\($0.domain)" })
        #expect(stored == ["victim@.localhost", "own@127.0.0.1", "hostonly@127.0.0.1"], "\(engineName): \(stored)")
        let other = base.replacingOccurrences(of: "127.0.0.1", with: "localhost")
        let sent = try await center.send { $0.url = other + "/cookies" }
        #expect(Self.received(sent) == ["victim"], "\(engineName)")
    }

    /// A response may not set or delete a cookie for a public suffix (RFC 6265 section 5.3, step 5): `evil.co.uk`
    /// set `Domain=co.uk` cookies that went with every request to `bank.co.uk`, and one app on a shared host
    /// (`github.io`, a name of the list's private section) set them for every other. A host that is the suffix
    /// itself gets a host-only cookie. The rules are the engines' shared ones; `PublicSuffixListTests` in
    /// `ProxyVariableTests` sends such cookies end to end on both engines.
    @Test func aCookieForAPublicSuffixIsRefused() throws {
        try #require(PublicSuffixes.isLoaded, "libpsl.so.5 is not installed: the list is not loaded")
        let cases: [(url: String, field: String, domain: String?)] = [
            ("http://evil.co.uk/", "a=1; Domain=co.uk", nil),
            ("http://evil.co.uk/", "a=1; Domain=.CO.UK", nil),
            ("http://a.b.evil.co.uk/", "a=1; Domain=co.uk", nil),
            ("http://app.github.io/", "a=1; Domain=github.io", nil),
            ("http://evil.com/", "a=1; Domain=com", nil),
            ("http://www.example.co.uk/", "a=1; Domain=example.co.uk", ".example.co.uk"),
            ("http://app.github.io/", "a=1; Domain=app.github.io", ".app.github.io"),
            ("http://shop.example.com/", "a=1; Domain=example.com", ".example.com"),
            ("http://co.uk/", "a=1; Domain=co.uk", "co.uk"),
            ("http://localhost/", "a=1; Domain=localhost", "localhost"),
            ("http://evil.co.uk/", "a=1", "evil.co.uk"),
        ]
        for (url, field, domain) in cases {
            let cookie = CookieRules.cookie(fromText: field, for: URL(string: url)!)
            #expect(cookie?.domain == domain, "\(field) from \(url): \(cookie?.domain ?? "refused")")
        }
        // A host-only cookie for the suffix goes to that host alone.
        let own = try #require(CookieRules.cookie(fromText: "a=1; Domain=co.uk", for: URL(string: "http://co.uk/")!))
        #expect(CookieRules.domainMatches(own.domain, "co.uk"))
        #expect(!CookieRules.domainMatches(own.domain, "bank.co.uk"))
        // Nor may a public suffix's `Max-Age=0` delete the cookies of the names under it.
        let deletions = CookieMaxAge.apply(
            to: ["session=; Max-Age=0; Domain=co.uk; Path=/"], for: URL(string: "http://evil.co.uk/")!)
        #expect(deletions.delete.isEmpty && deletions.store.isEmpty)
    }

    /// A cookie whose name and value hold more than 4,096 bytes together is ignored (RFC 6265bis section 5.6, as
    /// browsers do), on both engines: it was stored, and went with every later request to its host, where a server
    /// refuses a head that large. One of exactly 4,096 bytes is kept.
    @Test(arguments: bothEngines)
    func aCookieLargerThanBrowsersKeepIsIgnored(engineName: String) async throws {
        let fits = "fits=" + String(repeating: "f", count: 4096 - 4) + "; Path=/"
        let large = "large=" + String(repeating: "l", count: 4096 - 4) + "; Path=/"
        let (storage, center) = try await Self.setCookies(
            [fits, large], from: "/cookie-jar/login", engineName: engineName)
        #expect(Set((storage.cookies ?? []).map(\.name)) == ["fits"], "\(engineName)")
        let sent = try await center.send { $0.url = LoopbackServer.shared.baseURL + "/cookies" }
        #expect(Self.received(sent) == ["fits"], "\(engineName)")
    }

    /// Cookies named `__Secure-…` and `__Host-…` keep their prefix's promise (RFC 6265bis 4.1.3, as browsers and curl
    /// do): `Secure` and from https, and for `__Host-` also host-only with `Path=/`. Both engines stored them from
    /// plain http, where a page or a network attacker could plant a cookie the https site trusts by its name.
    @Test func prefixedCookiesKeepTheirPrefixesRules() {
        let https = URL(string: "https://shop.example.com/account/login")!
        let http = URL(string: "http://shop.example.com/account/login")!
        let cases: [(field: String, url: URL, kept: Bool)] = [
            ("__Secure-id=1; Secure; Path=/", https, true),
            ("__secure-id=1; Secure", https, true),
            ("__Secure-id=1; Path=/", https, false),
            ("__Secure-id=1; Secure; Path=/", http, false),
            ("__Host-id=1; Secure; Path=/", https, true),
            ("__HOST-id=1; Secure; Path=/", https, true),
            ("__Host-id=1; Secure; Path=/; Domain=example.com", https, false),
            ("__Host-id=1; Secure", https, false),
            ("__Host-id=1; Secure; Path=/account", https, false),
            ("__Host-id=1; Path=/", https, false),
            ("__Host-id=1; Secure; Path=/", http, false),
            ("plain=1; Path=/", http, true),
            ("Secure-id=1", http, true),
        ]
        for (field, url, kept) in cases {
            #expect((CookieRules.cookie(fromText: field, for: url) != nil) == kept, "\(field) from \(url)")
        }
    }

    /// The same over plain http on both engines: the prefixed cookies are not stored, the plain one is.
    @Test(arguments: bothEngines)
    func prefixedCookiesFromPlainHTTPAreIgnored(engineName: String) async throws {
        let (storage, _) = try await Self.setCookies(
            ["__Secure-a=1; Secure; Path=/", "__Host-b=1; Secure; Path=/", "plain=1; Path=/"],
            from: "/cookie-jar/login", engineName: engineName)
        #expect(Set((storage.cookies ?? []).map(\.name)) == ["plain"], "\(engineName)")
    }

    /// An `Expires` with a two-digit year (an RFC 850 date) is in 1970-2069 (RFC 6265 section 5.1.1), on both engines:
    /// `HTTPCookie` on Linux read `21-Oct-37` as the year 37, stored the cookie already expired and never sent it.
    @Test(arguments: bothEngines)
    func aTwoDigitYearIsReadAsRFC6265Says(engineName: String) async throws {
        let fields = [
            "later=1; Expires=Wednesday, 21-Oct-37 07:28:00 GMT; Path=/", "gone=1; Expires=Thu, 01-Jan-70 00:00:01 GMT",
        ]
        let (storage, center) = try await Self.setCookies(fields, from: "/cookie-jar/login", engineName: engineName)
        let stored = Dictionary((storage.cookies ?? []).map { ($0.name, $0) }) { first, _ in first }
        let later = try #require(stored["later"]?.expiresDate, "\(engineName)")
        #expect(later == Date(timeIntervalSince1970: 2_139_722_880), "\(engineName): \(later)")
        let sent = try await center.send { $0.url = LoopbackServer.shared.baseURL + "/cookies" }
        #expect(Self.received(sent) == ["later"], "\(engineName)")
    }

    @Test func cookieDatesAreReadAsRFC6265Says() throws {
        let october2037 = Date(timeIntervalSince1970: 2_139_722_880)  // 2037-10-21 07:28:00 UTC
        for text in [
            "Wed, 21 Oct 2037 07:28:00 GMT", "Wednesday, 21-Oct-37 07:28:00 GMT", "Wed Oct 21 07:28:00 2037",
            "Wed, 21-Oct-2037 07:28:00 GMT", "21 october 2037 7:28:0", "Wed, 21 Oct 2037 07:28:00 UTC",
        ] {
            #expect(CookieDate.parse(text) == october2037, "\(text)")
        }
        #expect(CookieDate.parse("Thu, 01-Jan-70 00:00:01 GMT") == Date(timeIntervalSince1970: 1))
        #expect(CookieDate.parse("Sat, 01-Jan-69 00:00:00 GMT") == Date(timeIntervalSince1970: 3_124_224_000))
        for invalid in [
            "Wed, 32 Oct 2037 07:28:00 GMT", "Wed, 21 Oct 2037 24:00:00 GMT", "Wed, 21 Oct 2037 07:60:00 GMT",
            "Wed, 21 Oct 1600 07:28:00 GMT", "Tue, 31 Feb 2037 07:28:00 GMT", "Wed, 21 Oct 2037", "21 2037 07:28:00",
            "tomorrow", "",
        ] {
            #expect(CookieDate.parse(invalid) == nil, "\(invalid)")
        }
        #expect(CookieRules.expiry(of: "a=1; Expires=Wed, 21 Oct 2037 07:28:00 GMT; expires=never") == october2037)
    }

    @Test func theDefaultPathIsTheURLsDirectory() throws {
        let cases: [(String, String)] = [
            ("http://h.example", "/"), ("http://h.example/", "/"), ("http://h.example/login", "/"),
            ("http://h.example/a/", "/a"), ("http://h.example/a/b?x=1/2", "/a"), ("http://h.example/a%2Fb/c", "/a%2Fb"),
        ]
        for (url, path) in cases {
            #expect(CookieRules.defaultPath(of: try #require(URL(string: url))) == path, "\(url)")
        }
        #expect(CookieRules.path(of: "a=1; Path=/x; path=/y") == "/y")
        #expect(CookieRules.path(of: "a=1; Path=/x; Path=y") == nil, "the last one counts, and it is not valid")
        #expect(CookieRules.path(of: "a=1;Path = /x ") == "/x")
        #expect(CookieRules.path(of: "path=/x") == nil, "the cookie's own name and value are not an attribute")
        // Joined fields: a field without a name after a `Secure` one is a text of its own.
        #expect(CookieRules.cookieTexts("g=2; Path=/; Secure, =novalue") == ["g=2; Path=/; Secure", "=novalue"])
    }

    @Test func maxAgeIsReadAsRFC6265Says() {
        #expect(CookieMaxAge.maxAge(of: "a=1; Max-Age=100") == 100)
        #expect(CookieMaxAge.maxAge(of: "a=1; max-age = -1 ; Path=/") == -1)
        #expect(CookieMaxAge.maxAge(of: "a=1; Max-Age=10s") == nil)
        #expect(CookieMaxAge.maxAge(of: "a=1; Max-Age=5; Max-Age=7") == 7)
        #expect(CookieMaxAge.maxAge(of: "max-age=5") == nil, "the cookie's own name and value are not an attribute")
        #expect(CookieMaxAge.maxAge(of: "a=1; Max-Age=99999999999999999999999") == Int.max)
        // Joined fields split where HTTPCookie's parser splits them: not at the comma of an Expires date.
        #expect(
            CookieRules.cookieTexts("a=1; Expires=Wed, 21 Oct 2099 07:28:00 GMT; Max-Age=5, b=2; Max-Age=0")
                == ["a=1; Expires=Wed, 21 Oct 2099 07:28:00 GMT; Max-Age=5", "b=2; Max-Age=0"])
        let now = Date()
        let (store, delete) = CookieMaxAge.apply(
            to: ["a=1; Max-Age=5, b=2; Max-Age=0, c=3"], for: URL(string: "http://example.com/")!, now: now)
        #expect(store.map(\.name) == ["a"])
        #expect(store.first?.expiresDate == now.addingTimeInterval(5))
        #expect(delete.map(\.name) == ["b"])
    }

    @Test func pathMatchingFollowsRFC6265() {
        #expect(CookieRules.pathMatches("/", "/anything"))
        #expect(CookieRules.pathMatches("/docs", "/docs"))
        #expect(CookieRules.pathMatches("/docs", "/docs/web"))
        #expect(CookieRules.pathMatches("/docs/", "/docs/web"))
        #expect(!CookieRules.pathMatches("/docs", "/docsets"))
        #expect(!CookieRules.pathMatches("/docs/web", "/docs"))
        #expect(!CookieRules.pathMatches("/admin", "/"))
        #expect(CookieRules.pathMatches("", "/x"))
    }

    @Test func expiredAndSecureCookiesAreHeldBack() throws {
        let now = Date()
        func cookie(_ extra: [HTTPCookiePropertyKey: Any]) throws -> HTTPCookie {
            var properties: [HTTPCookiePropertyKey: Any] = [
                .name: "n", .value: "v", .domain: "example.com", .path: "/",
            ]
            properties.merge(extra) { $1 }
            return try #require(HTTPCookie(properties: properties))
        }
        let session = try cookie([:])
        let expiring = try cookie([.expires: now.addingTimeInterval(60)])
        let secure = try cookie([.secure: "TRUE"])
        let host = "example.com"
        #expect(CookieRules.allows(session, host: host, path: "/", secure: false, now: now))
        #expect(CookieRules.allows(expiring, host: host, path: "/", secure: false, now: now))
        #expect(!CookieRules.allows(expiring, host: host, path: "/", secure: false, now: now.addingTimeInterval(60)))
        #expect(!CookieRules.allows(secure, host: host, path: "/", secure: false, now: now))
        #expect(CookieRules.allows(secure, host: host, path: "/", secure: true, now: now))
    }

    @Test func domainMatchingFollowsRFC6265() {
        #expect(CookieRules.domainMatches("example.com", "example.com"))
        #expect(!CookieRules.domainMatches("example.com", "api.example.com"), "host-only")
        #expect(CookieRules.domainMatches(".example.com", "example.com"))
        #expect(CookieRules.domainMatches(".example.com", "api.example.com"))
        #expect(!CookieRules.domainMatches(".example.com", "badexample.com"))
        #expect(!CookieRules.domainMatches(".com", "example.com"), "one label")
        #expect(CookieRules.domainMatches(".localhost", "localhost"))
        #expect(!CookieRules.domainMatches(".0.0.1", "10.0.0.1"), "an IP address")
        #expect(!CookieRules.domainMatches(".0.0.1", "127.0.0.1"))
        #expect(CookieRules.domainMatches("127.0.0.1", "127.0.0.1"))
        #expect(!CookieRules.domainMatches(".0.1", "::0.1"))
        // The cookie's domain in any case, the host in lower case (as the rules read it from the URL).
        #expect(CookieRules.domainMatches("Example.COM", "example.com"))
        #expect(CookieRules.domainMatches(".Example.com", "api.example.com"))
        #expect(!CookieRules.domainMatches(".Example.com", "apiexample.com"))
        #expect(!CookieRules.domainMatches(".example.com", ".example.com"), "a host is never only a dot and the domain")
    }

    @Test func theLongestPathGoesFirst() throws {
        let storage = Self.storage()
        let field = CookieRules.requestField(for: URL(string: "http://127.0.0.1/cookies/x")!, in: storage)
        #expect(field == "cookies=1; plain=1")
        let secure = CookieRules.requestField(for: URL(string: "https://127.0.0.1/")!, in: storage)
        #expect(secure.map { Set($0.components(separatedBy: "; ")) } == ["plain=1", "secure=1"])
        #expect(CookieRules.requestField(for: URL(string: "http://other.example/")!, in: storage) == nil)
    }

    /// A response's cookies are kept when it has arrived whole and its head is sound: a response refused as
    /// malformed (two `Location` fields that differ, a `Content-Length` that is not one number) keeps none, as
    /// browsers refuse such a response whole, and neither does one whose body is cut short. The same on both
    /// engines, and on URLSessionEngine whether or not progress is watched (a completion handler or the delegate):
    /// CurlEngine kept the cookies of a redirect with differing `Location` fields, and URLSessionEngine those of
    /// every refused head, and of a body cut short when progress was watched.
    @Test(arguments: bothEngines)
    func cookiesAreKeptFromSoundResponsesThatArriveWhole(engineName: String) async throws {
        let base = LoopbackServer.shared.baseURL
        let refused = [
            "/fault/location?status=302&to=%2Fget&also=%2Fanything", "/fault/lengths?fields=5%7C6",
            "/fault/lengths?fields=5%7C6&status=302", "/fault/lengths?fields=5abc&status=401",
            "/fault/truncated?length=1000&after=500",
        ]
        for observesProgress in [false, true] {
            for path in refused {
                let storage = privateCookieStorage()
                let engine = try Self.engine(engineName, cookies: storage)
                var request = EngineRequest(url: URL(string: base + path + "&cookie=refused%3D1")!)
                request.observesProgress = observesProgress
                let context = "\(engineName), progress \(observesProgress): \(path)"
                await #expect(throws: (any Error).self, "\(context)") {
                    _ = try await engine.perform(request) { _ in }
                }
                #expect(storage.cookies?.isEmpty != false, "\(context): \(storage.cookies ?? [])")
            }
            // A sound `401` is an answer, and keeps its cookies.
            let storage = privateCookieStorage()
            let engine = try Self.engine(engineName, cookies: storage)
            var request = EngineRequest(url: URL(string: base + "/fault/lengths?fields=5&status=401&cookie=ok%3D1")!)
            request.observesProgress = observesProgress
            let answer = try await engine.perform(request) { _ in }
            #expect(answer.status == 401, "\(engineName), progress \(observesProgress)")
            #expect((storage.cookies ?? []).map(\.name) == ["ok"], "\(engineName), progress \(observesProgress)")
        }
    }

    /// URLSessionEngine keeps and sends cookies by its configuration's settings, as URLSession does: with
    /// `httpShouldSetCookies` off it sends none but keeps what responses set (by the same rules as ever: a
    /// `set-cookie` field too, which URLSession on Linux dropped); with a `httpCookieAcceptPolicy` of `.never` it keeps
    /// none but sends what is stored (the engine kept them regardless).
    @Test func urlSessionEngineFollowsTheConfigurationsCookieSettings() async throws {
        let base = LoopbackServer.shared.baseURL
        func names(_ storage: HTTPCookieStorage) -> Set<String> { Set((storage.cookies ?? []).map(\.name)) }

        let unsent = privateCookieStorage()
        let quiet = URLSessionConfiguration.ephemeral
        quiet.httpCookieStorage = unsent
        quiet.httpShouldSetCookies = false
        let quietCenter = testCenter { $0.engine = URLSessionEngine(configuration: quiet) }
        _ = try await quietCenter.send {
            $0.url = base + "/fault/lowercase-cookies"
            $0.responseSerializer = .raw
        }
        #expect(names(unsent) == ["lower", "other"])
        let none = try await quietCenter.send { $0.url = base + "/cookies" }
        #expect(Self.received(none).isEmpty)

        let kept = privateCookieStorage()
        kept.setCookie(HTTPCookie(properties: [.name: "plain", .value: "1", .domain: "127.0.0.1", .path: "/"])!)
        let closed = URLSessionConfiguration.ephemeral
        closed.httpCookieStorage = kept
        closed.httpCookieAcceptPolicy = .never
        let closedCenter = testCenter { $0.engine = URLSessionEngine(configuration: closed) }
        _ = try await closedCenter.send { $0.url = base + "/response-headers?Set-Cookie=new%3D1%3B%20Path%3D%2F" }
        #expect(names(kept) == ["plain"])
        let sent = try await closedCenter.send { $0.url = base + "/cookies" }
        #expect(Self.received(sent) == ["plain"])
    }

    /// A stream's answer is its head (its body is the reader's): its cookies are kept as it opens, while it runs
    /// (an app may send requests that need them), and stay kept when the reader leaves early, on both engines.
    /// CurlEngine kept them only when the stream ended on its own.
    @Test(arguments: bothEngines)
    func aStreamsCookiesAreKeptAsItOpens(engineName: String) async throws {
        let storage = privateCookieStorage()
        let engine = try Self.engine(engineName, cookies: storage)
        let center = testCenter { $0.engine = engine }
        let stream = try await center.stream {
            $0.url = LoopbackServer.shared.baseURL + "/sse?count=20&interval=0.2&cookie=live%3D1"
        }
        #expect(stream.status == 200)
        #expect((storage.cookies ?? []).map(\.name) == ["live"], "\(engineName): kept once the stream opened")
        for try await _ in stream.events { break }
        #expect((storage.cookies ?? []).map(\.name) == ["live"], "\(engineName): kept after the reader left")
    }
}

/// A cookie the server deletes with `Max-Age=0` never enters the storage, not even for a moment: stored first and
/// deleted after, a request on another thread could send it (both engines store cookies through `CookieRules`).
@Suite struct CookieMaxAgeOrderTests {
    @Test func cookiesWithAMaxAgeAreLeftToMaxAgeAlone() throws {
        let url = try #require(URL(string: "http://127.0.0.1:8080/"))
        let values = ["kept=1", "gone=2; Max-Age=0", "timed=3; Max-Age=60, also=4"]
        #expect(CookieRules.cookiesWithoutMaxAge(from: values, for: url).map(\.name) == ["kept", "also"])
        let storage = privateCookieStorage()
        CookieRules.store(values, for: url, in: storage)
        #expect(storage.cookies(for: url)?.map(\.name).sorted() == ["also", "kept", "timed"])
        #expect(storage.cookies(for: url)?.first { $0.name == "timed" }?.expiresDate != nil)
    }
}
