import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
@testable import Switchboard

/// What `print`, `debugPrint` and `dump` show of requests, responses and header fields: what a reader looks for,
/// never a secret. They showed the storage box (`print`), and every header and parameter as it was (`dump`).
@Suite struct DescriptionTests {
    static let secrets = ["Bearer tok-AAA", "tok-AAA", "pw-BBB", "sess-CCC", "key-DDD", "tok-EEE", "ref-FFF"]

    /// Everything `print`, `debugPrint` and `dump` write for `value`.
    static func printed(_ value: Any) -> String {
        var text = ""
        print(value, to: &text)
        debugPrint(value, to: &text)
        dump(value, to: &text)
        return text
    }

    @Test func aRequestAndItsResponseShowWhatMattersAndNoSecret() async throws {
        let stub = StubEngine()
        stub.on(.get, "/v1/users") { _ in
            .json(["access_token": "tok-EEE", "name": "Ada"], headers: ["Set-Cookie": "session=sess-CCC"])
        }
        let (center, _) = stubCenter(stub)
        let response = try await center.send { request in
            request.api = "users?api_key=key-DDD"
            request.headers["Authorization"] = "Bearer tok-AAA"
            request.parameters = ["password": "pw-BBB", "page": 2, "nested": ["refresh_token": "ref-FFF"]]
        }
        let text = Self.printed(response)
        for secret in Self.secrets { #expect(!text.contains(secret), "\(secret) leaked:\n\(text)") }
        #expect(!text.contains("CopyOnWrite"), "the storage box is not what a reader wants:\n\(text)")
        #expect(text.contains("Response 200 GET https://api.example.com/v1/users?"))
        #expect(text.contains("application/json"))
        #expect(text.contains("\"name\":\"Ada\""), "the body's start, redacted")
        #expect(text.contains("page"))
        #expect(text.contains("Authorization: <redacted>"))

        let line = "\(response.request)"
        #expect(line.hasPrefix("Request \(response.request.id) GET https://api.example.com/v1/users?"), "\(line)")
    }

    @Test func aRequestNotYetSentShowsItsPath() {
        var request = Request()
        request.api = "accounts/login"
        request.method = .post
        request.headers["Cookie"] = "session=sess-CCC"
        request.parameters = ["password": "pw-BBB", "user": "ada"]
        #expect(request.description == "Request \(request.id) POST accounts/login")
        let text = Self.printed(request)
        for secret in Self.secrets { #expect(!text.contains(secret), "\(secret) leaked:\n\(text)") }
        #expect(text.contains("user: ada"))
        #expect(text.contains("password: <redacted>"))
        var explicit = Request()
        explicit.url = "https://ada:pw-BBB@api.example.com/v1/me?token=tok-AAA"
        #expect(!explicit.description.contains("pw-BBB") && !explicit.description.contains("tok-AAA"))
        #expect(explicit.description.hasPrefix("Request \(explicit.id) GET https://"))
    }

    @Test func headerFieldsAndEngineValuesHideSecretsInDumpsToo() {
        let headers: HTTPHeaders = ["Authorization": "Bearer tok-AAA", "Accept": "text/plain"]
        let text = Self.printed(headers)
        #expect(!text.contains("tok-AAA"), "\(text)")
        #expect(text.contains("Accept: text/plain"))
        var request = EngineRequest(url: URL(string: "https://api.example.com/v1/me?access_token=tok-EEE")!)
        request.headers = headers
        let engineText = Self.printed(request)
        for secret in Self.secrets { #expect(!engineText.contains(secret), "\(secret) leaked:\n\(engineText)") }
        #expect(engineText.contains("EngineRequest GET https://api.example.com/v1/me"))
        let response = EngineResponse(
            status: 201, url: URL(string: "https://api.example.com/v1/me")!,
            headers: ["Set-Cookie": "session=sess-CCC"], body: Data("{}".utf8))
        let responseText = Self.printed(response)
        #expect(!responseText.contains("sess-CCC"), "\(responseText)")
        #expect(responseText.contains("EngineResponse 201 https://api.example.com/v1/me (2 bytes)"))
    }

    @Test func anErrorHidesTheRequestsSecretsInDumpsToo() async {
        let stub = StubEngine()
        stub.on(.get, "/v1/me") { _ in .json(["error": "expired", "refresh_token": "ref-FFF"], status: 401) }
        let (center, _) = stubCenter(stub)
        let outcome = await center.sendRecording { request in
            request.api = "me"
            request.headers["Authorization"] = "Bearer tok-AAA"
            request.parameters = ["password": "pw-BBB"]
        }
        guard let error = outcome.error else {
            Issue.record("the request did not fail")
            return
        }
        let text = Self.printed(error)
        for secret in Self.secrets { #expect(!text.contains(secret), "\(secret) leaked:\n\(text)") }
        #expect(text.contains("unacceptableStatus"))
        #expect(text.contains("Response 401 GET https://api.example.com/v1/me"))
        // An underlying URLError names the URL it failed on, query and all.
        let failingURL = "https://api.example.com/v1/me?access_token=tok-EEE"
        let transport = HTTPError(
            .transport, "the connection was lost",
            underlying: URLError(
                .networkConnectionLost,
                userInfo: [
                    NSURLErrorFailingURLErrorKey: URL(string: failingURL)!, "NSErrorFailingURLStringKey": failingURL,
                ]))
        let transportText = Self.printed(transport)
        #expect(!transportText.contains("tok-EEE"), "\(transportText)")
        #expect(transportText.contains("underlying"))
    }

    /// The objects that hold secrets of their own show none in `print` and `dump`: the center and its configuration
    /// (header fields, parameters and user info by the console log's rule, the server's password), the
    /// authenticator's credential, the cache's responses, and the engines' cookies. `dump(Center.shared)` printed
    /// the credential, and `dump` of either engine every stored cookie's value.
    @Test func centersEnginesCachesAndAuthenticatorsShowNoSecret() throws {
        let authenticator = Authenticator(
            credential: "cred-GGG", apply: { credential, request in request.headers["Authorization"] = credential },
            refresh: { _, _ in "cred-HHH" })
        let cache = ResponseCache()
        cache.store(
            key: "GET https://api.example.com/v1/me?access_token=tok-III", status: 200,
            headers: ["Set-Cookie": "sid=sess-JJJ"], body: Data(#"{"refresh_token":"ref-KKK"}"#.utf8))
        let center = Center { config in
            config.server = "https://ada:pw-LLL@api.example.com/v1/"
            config.headers["X-Api-Key"] = "key-MMM"
            config.parameters["session_token"] = "tok-NNN"
            config.userInfo["password"] = "pw-OOO"
            config.authenticator = authenticator
            config.cache = cache
            config.plugins = [SigningPlugin(key: Data("key-PPP".utf8))]
        }
        let cookies = privateCookieStorage()
        cookies.setCookie(
            try #require(HTTPCookie(properties: [.name: "sid", .value: "sess-QQQ", .domain: "a.example", .path: "/"])))
        let configuration = URLSessionConfiguration.ephemeral
        configuration.httpCookieStorage = cookies
        let engines: [any Engine] = [try CurlEngine(cookies: cookies), URLSessionEngine(configuration: configuration)]
        let printed = ([center, center.configuration, authenticator, cache] + engines).map(Self.printed).joined()
        for secret in [
            "cred-GGG", "tok-III", "sess-JJJ", "ref-KKK", "pw-LLL", "key-MMM", "tok-NNN", "pw-OOO", "key-PPP",
        ]
            + ["sess-QQQ"]
        {
            #expect(!printed.contains(secret), "\(secret) printed")
        }
        for shown in [
            "api.example.com/v1/", "X-Api-Key: <redacted>", "session_token: <redacted>", "a credential",
            "SigningPlugin", "1 in memory", "keepsCookies: true", "200...299",
        ] {
            #expect(printed.contains(shown), "\(shown) not shown")
        }
    }
}
