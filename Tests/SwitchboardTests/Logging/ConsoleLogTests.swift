import Foundation
import Testing
@testable import Switchboard
import SwitchboardTestSupport

@Suite struct ConsoleLogTests {
    func loggingCenter(_ stub: StubEngine, _ log: EventLog) -> Center {
        stubCenter(stub) { config in
            config.consoleLog = true
            config.consoleLogHandler = { log.record($0) }
            config.headers["Authorization"] = "Bearer top-secret"
        }.0
    }

    @Test func requestAndResponseBannersRedactSecrets() async throws {
        let stub = StubEngine()
        stub.on(
            nil, "*",
            reply: .json(
                ["access_token": "tok-123", "user": "ada"],
                headers: ["Set-Cookie": "session=s3cr3t"]))
        let log = EventLog()
        let center = loggingCenter(stub, log)
        _ = try await center.send { request in
            request.api = "login"
            request.method = .post
            request.headers["Cookie"] = "c=cookie-value"
            request.headers["Proxy-Authorization"] = "Basic proxy-secret"
            request.parameters = [
                "user": "ada", "password": "hunter2", "profile": ["api_token": "t0k"] as [String: any Sendable],
            ]
        }
        let banners = log.all
        #expect(banners.count == 2)
        let request = try #require(banners.first)
        #expect(request.hasPrefix("============ [Switchboard Request] ============\n"))
        #expect(request.contains("POST https://api.example.com/v1/login"))
        #expect(request.contains("user: ada"))
        let response = try #require(banners.last)
        #expect(response.hasPrefix("============ [Switchboard Response] ============\n"))
        #expect(response.contains("200 POST https://api.example.com/v1/login"))
        #expect(response.contains("\"user\":\"ada\""))
        for secret in ["top-secret", "hunter2", "cookie-value", "proxy-secret", "t0k", "tok-123", "s3cr3t"] {
            #expect(!banners.joined().contains(secret), "\(secret) leaked")
        }
        #expect(request.contains("Authorization: <redacted>"))
        #expect(request.contains("password: <redacted>"))
        // Every banner closes with a rule as wide as its title line.
        for banner in banners {
            let lines = banner.split(separator: "\n")
            #expect(lines.first?.count == lines.last?.count)
        }
    }

    /// A secret value that holds `,`, `;`, `)` or `'` as it is (a URL written by hand, a body) is hidden whole, in the
    /// banners and in the error's description: it was hidden up to that character, and the rest printed. (The
    /// request's form body is not printed here; `CURLLogPlugin`'s test covers one.)
    @Test func aSecretWithPunctuationIsHiddenWhole() async throws {
        let stub = StubEngine()
        stub.on(nil, "*", reply: .string("refused: token=ab,cd;ef)gh'ij", status: 401))
        let log = EventLog()
        let center = loggingCenter(stub, log)
        let outcome = await center.sendRecording { request in
            request.url = "https://api.example.com/v1/login?password=pw,12;34)56'78&user=ada"
            request.method = .post
            request.body = .string(
                "secret_answer=fo,ur;ty)tw'o&page=2", contentType: "application/x-www-form-urlencoded")
        }
        let printed = log.all.joined() + String(describing: outcome.error)
        for tail in [",12", ";34", ")56", "'78", ",ur", ";ty", ")tw", "'o", ",cd", ";ef", ")gh", "'ij"] {
            #expect(!printed.contains(tail), "\(tail) leaked")
        }
        #expect(printed.contains("user=ada"))
        #expect(printed.contains("token=<redacted>"))
    }

    /// Secrets a server echoes as `Name: value` lines or dictionaries (a request dump in a text error page, YAML, a
    /// Python or Ruby dictionary, `name = value`) are hidden too: only `name=value`, JSON members and URLs were, and
    /// a plain-text body that repeated the request's `Authorization` line printed the credential.
    @Test func secretsEchoedAsLinesOrDictionariesAreHidden() async throws {
        let stub = StubEngine()
        let text = """
            bad request; you sent:
            Authorization: Bearer tok-AAA
            X-Api-Key:key-BBB
            Host: api.example.com
            config: {password: 'pw-CCC', user: 'ada'}
            params = {'client_secret': 'cs-DDD', 'page': 2} and session_id => "sess-EEE"
            note: fine, then refresh_token = ref-FFF
            """
        stub.on(nil, "*", reply: .string(text, status: 400))
        let log = EventLog()
        let center = loggingCenter(stub, log)
        let outcome = await center.sendRecording { $0.api = "echo" }
        let printed = log.all.joined() + String(describing: outcome.error)
        for secret in ["tok-AAA", "key-BBB", "pw-CCC", "cs-DDD", "sess-EEE", "ref-FFF"] {
            #expect(!printed.contains(secret), "\(secret) leaked")
        }
        for kept in ["Host: api.example.com", "user: 'ada'", "'page': 2", "note: fine"] {
            #expect(printed.contains(kept), "\(kept) hidden")
        }
    }

    /// Credentials that say what they are are hidden with no secret name before them (`Bearer …`, `Basic …`, a JSON
    /// Web Token, a key with a vendor's prefix: GitHub, Slack, Stripe, Google, OpenAI; a PEM private key), a
    /// scheme's credential with the scheme (`authorization=Basic …` printed the credential after the blank), and a
    /// pair encoded inside another URL's query (`next=%2Fhome%3Ftoken%3D…`).
    @Test func credentialsThatSayWhatTheyAreAreHidden() async throws {
        let stub = StubEngine()
        let jwt = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.c2lnbmF0dXJl"
        let text = """
            rejected Bearer tok-AAAAAAAA for user 7; retry with Basic dXNlcjpwYXNz
            the session \(jwt) has expired; authorization=Digest dig-BBBBBBBB
            keys in the way: ghp_GH0123456789abcdefghijklmnopqrstuv xoxb-SL12345678-abcdef sk_live_ST0123456789abcdef
            AIzaGO0123456789abcdefghijklmnopqrstuvw sk-proj-OA0123456789abcdefghijklmnopqrstuvwxyz
            -----BEGIN RSA PRIVATE KEY-----
            PEMMIIEpAIBAAKCAQEA0123456789
            -----END RSA PRIVATE KEY-----
            but not sk-short-slug or ghp_short
            """
        stub.on(nil, "*", reply: .string(text, status: 401))
        let log = EventLog()
        let center = loggingCenter(stub, log)
        let outcome = await center.sendRecording {
            $0.url = "https://api.example.com/v1/login?next=%2Fhome%3Faccess_token%3Denc-CCC%26page%3D2&user=ada"
        }
        let printed = log.all.joined() + String(describing: outcome.error)
        for secret in [
            "tok-AAAAAAAA", "dXNlcjpwYXNz", "eyJhbGciOiJIUzI1NiJ9", "c2lnbmF0dXJl", "dig-BBBBBBBB", "enc-CCC",
            "GH0123456789", "SL12345678", "ST0123456789", "GO0123456789", "OA0123456789", "PEMMIIEpAIBAAKCAQEA",
        ] {
            #expect(!printed.contains(secret), "\(secret) leaked")
        }
        for kept in ["for user 7", "has expired", "%26page%3D2&user=ada", "sk-short-slug", "ghp_short"] {
            #expect(printed.contains(kept), "\(kept) hidden")
        }
    }

    @Test func errorBannerNamesTheFailure() async throws {
        let stub = StubEngine()
        stub.on(nil, "*", reply: .string("quota exceeded", status: 429))
        let log = EventLog()
        let center = loggingCenter(stub, log)
        _ = await center.sendRecording { $0.url = "https://api.example.com/v1/x?token=abc&page=2" }
        let banners = log.all
        #expect(banners.count == 2)
        let error = banners.last ?? ""
        #expect(error.hasPrefix("============ [Switchboard Error] ============"))
        #expect(error.contains("HTTPError.unacceptableStatus (429) GET"))
        #expect(error.contains("token=<redacted>"))
        #expect(error.contains("page=2"))
        #expect(error.contains("quota exceeded"))
        // Text redacted twice (a URL, then the banner) stays redacted once.
        #expect(!banners.joined().contains("<redacted><redacted>"), "\(banners)")
    }

    @Test func silentWhenOff() async throws {
        let stub = StubEngine()
        stub.on(nil, "*", reply: .status(204))
        let log = EventLog()
        let (center, _) = stubCenter(stub) { $0.consoleLogHandler = { log.record($0) } }
        _ = try await center.send { $0.api = "x" }
        #expect(log.all.isEmpty)
    }

    /// Secrets a banner must never print, wherever they sit.
    static let secrets = ["tok-AAA", "tok-BBB", "ref-CCC", "key-DDD", "priv-EEE", "sig-FFF", "sess-GGG", "pw-HHH"]

    @Test(arguments: [100, 5_000, 300_000])
    func jsonBodiesAreRedactedAtEverySize(padding: Int) async throws {
        let stub = StubEngine()
        let body =
            "{\"access_token\":\"tok-AAA\",\"filler\":\"" + String(repeating: "x", count: padding)
            + "\",\"refresh_token\":\"ref-CCC\",\"nested\":{\"client_secret\":\"key-DDD\"}}"
        stub.on(nil, "*", reply: .data(Data(body.utf8), headers: ["Content-Type": "application/json"]))
        let log = EventLog()
        _ = try await loggingCenter(stub, log).send { $0.api = "token" }
        let printed = log.all.joined()
        for secret in ["tok-AAA", "ref-CCC", "key-DDD"] { #expect(!printed.contains(secret), "\(secret) leaked") }
        #expect(printed.contains("access_token"))
        if padding > ConsoleLog.bodyLimit { #expect(printed.contains("bytes in all)")) }
    }

    /// JSON carried in a quoted string, longer than the part of a body read for redaction: each escaped quote could
    /// start a scan to the end of the text, which took minutes; the text is read once now.
    @Test func aLongEscapedPayloadIsRedactedAsText() async throws {
        let member = #"{\"id\":1,\"access_token\":\"tok-AAA\",\"note\":\"a \\\"quoted\\\" word\"},"#
        let count = Redaction.scanLimit / member.utf8.count + 100
        let body = "invalid payload: \"[" + String(repeating: member, count: count) + "]\""
        let stub = StubEngine()
        stub.on(nil, "*", reply: .string(body))
        let log = EventLog()
        let response = try await loggingCenter(stub, log).send {
            $0.api = "payload"; $0.responseSerializer = .raw
        }
        #expect(response.data.count == body.utf8.count)
        let printed = log.all.joined()
        #expect(!printed.contains("tok-AAA"))
        #expect(printed.contains(#"\"access_token\":\"<redacted>\",\"note\":\"a \\\"quoted\\\" word\""#))
        #expect(printed.contains("bytes in all)"))
        // Cut inside a placeholder, the body was hidden again by the last pass, up to the end of the banner.
        for banner in log.all {
            let lines = banner.split(separator: "\n")
            #expect(lines.last.map { $0.allSatisfy { $0 == "=" } && $0.count == lines[0].count } == true)
        }
    }

    @Test(arguments: [100, 5_000])
    func jsonCutShortAndFormBodiesAreRedacted(padding: Int) async throws {
        let stub = StubEngine()
        let broken =
            "{\"access_token\": \"tok-AAA\", \"x\": \"" + String(repeating: "y", count: padding)
            + "\", \"api_key\": \"key-DDD"  // cut off: not JSON
        let form = "refresh_token=ref-CCC&user=ada&" + String(repeating: "z", count: padding) + "=1&signature=sig-FFF"
        stub.on(nil, "/v1/broken", reply: .data(Data(broken.utf8)))
        stub.on(
            nil, "/v1/form",
            reply: .data(Data(form.utf8), headers: ["Content-Type": "application/x-www-form-urlencoded"]))
        let log = EventLog()
        let center = loggingCenter(stub, log)
        _ = try await center.send {
            $0.api = "broken"; $0.responseSerializer = .raw
        }
        _ = try await center.send {
            $0.api = "form"; $0.responseSerializer = .raw
        }
        let printed = log.all.joined()
        for secret in ["tok-AAA", "key-DDD", "ref-CCC", "sig-FFF"] {
            #expect(!printed.contains(secret), "\(secret) leaked")
        }
        #expect(printed.contains("user=ada"))
    }

    /// XML and property-list bodies, at every size (cut in the log, cut at the scan limit): a secret element's
    /// text and everything inside it, a secret attribute's value, and the value after a plist `<key>` whose text
    /// is secret are hidden; the rest is printed.
    @Test(arguments: [100, 5_000, 300_000])
    func markupBodiesAreRedactedAtEverySize(padding: Int) async throws {
        let filler = String(repeating: "x", count: padding)
        let xml =
            "<?xml version=\"1.0\"?><login api_key=\"key-DDD\" lang='fr'><user>ada</user><access_token>tok-AAA"
            + "</access_token><filler>\(filler)</filler><credentials><pass>pw-HHH</pass></credentials>"
            + "<session><![CDATA[sess-GGG]]></session><note>ok</note></login>"
        let plist = try PropertyListSerialization.data(
            fromPropertyList: [
                "user": "ada", "refresh_token": "ref-CCC", "filler": filler,
                "auth": ["pin": 4321, "signature": "sig-FFF"], "count": 7,
            ] as [String: Any], format: .xml, options: 0)
        let stub = StubEngine()
        stub.on(nil, "/v1/xml", reply: .string(xml, headers: ["Content-Type": "application/xml"]))
        stub.on(nil, "/v1/plist", reply: .data(plist, headers: ["Content-Type": "application/x-plist"]))
        let log = EventLog()
        let center = loggingCenter(stub, log)
        _ = try await center.send {
            $0.api = "xml"; $0.responseSerializer = .raw
        }
        let list = try await center.send {
            $0.api = "plist"; $0.responseSerializer = .plist
        }
        #expect(list.data == plist)
        let printed = log.all.joined()
        for secret in ["key-DDD", "tok-AAA", "pw-HHH", "sess-GGG", "ref-CCC", "4321", "sig-FFF"] {
            #expect(!printed.contains(secret), "\(secret) leaked")
        }
        #expect(printed.contains("<user>ada</user>"))
        #expect(printed.contains("lang='fr'"))
        #expect(printed.contains("<access_token><redacted></access_token>"))
        // The property list's members come sorted by name: `user`, the last, is cut with a long filler.
        if padding < ConsoleLog.bodyLimit {
            #expect(printed.contains("<key>user</key>"))
            #expect(printed.contains("<string>ada</string>"))
            #expect(printed.contains("<note>ok</note>"))
            #expect(printed.contains("<integer>7</integer>"))
        }
    }

    /// A secret member of JSON carried in a JSON string, whose value holds a `name=value` pair just before a quote it
    /// escapes (`token=abc\"`, written `token=abc\\\"` one level down). The pair was hidden first, to its separator,
    /// with the backslashes that escape the quote; the member's value then ended at the bare quote left, and the rest
    /// of the secret was printed. Found by fuzzing the redaction with secrets that hold anything.
    @Test func aPairInsideAnEscapedSecretDoesNotCutItShort() async throws {
        let inner = #"{"user":"ada","password":"{\"a\":\"b\",\"t\":\"token=abc\"}SECRET-TAIL","n":1}"#
        var escaped = ""
        ParameterValue.writeJSONString(inner, to: &escaped)
        let body = #"{"data":"# + escaped + "}"
        let stub = StubEngine()
        stub.on(nil, "*", reply: .string(body))
        let log = EventLog()
        _ = try await loggingCenter(stub, log).send {
            $0.api = "payload"; $0.responseSerializer = .raw
        }
        let printed = log.all.joined()
        #expect(!printed.contains("SECRET-TAIL"), "\(printed)")
        #expect(printed.contains(#"\"password\":\"<redacted>\",\"n\":1"#), "\(printed)")
    }

    /// Values quoted after `=` (and pairs inside one), JSON members inside a JSON string, members of an object in
    /// JSON cut short, and multipart parts: each hidden when its name is secret, each shown when it is not.
    @Test func quotedEscapedAndMultipartValuesAreRedacted() async throws {
        let stub = StubEngine()
        let text =
            "invalid token=\"tok-AAA\" or api_key='key-DDD' for page='2'; error=\"bad refresh_token=ref-CCC\"; "
            + #"{"user":{"session_id":"sess-GGG"},"cut":""#
        let nested = #"{"error":"{\"client_secret\":\"sig-FFF\",\"pin_token\":4321,\"user\":\"ada\"}"}"#
        let parts =
            "--b\r\nContent-Disposition: form-data; name=\"password\"\r\n\r\npw-HHH\r\nline 2\r\n--b\r\n"
            + "Content-Disposition: form-data; name=\"user\"\r\n\r\nada\r\n--b--\r\n"
        stub.on(nil, "/v1/text", reply: .string(text, status: 400))
        stub.on(nil, "/v1/nested", reply: .data(Data(nested.utf8), headers: ["Content-Type": "application/json"]))
        stub.on(nil, "/v1/parts", reply: .string(parts, headers: ["Content-Type": "multipart/form-data; boundary=b"]))
        let log = EventLog()
        let center = loggingCenter(stub, log)
        _ = await center.sendRecording { $0.api = "text" }
        _ = try await center.send { $0.api = "nested" }
        _ = try await center.send {
            $0.api = "parts"; $0.responseSerializer = .raw
        }
        let printed = log.all.joined()
        for secret in ["tok-AAA", "key-DDD", "ref-CCC", "sess-GGG", "sig-FFF", "4321", "pw-HHH", "line 2"] {
            #expect(!printed.contains(secret), "\(secret) leaked")
        }
        #expect(printed.contains("token=\"<redacted>\""))
        #expect(printed.contains("page='2'"))
        #expect(printed.contains("error=\"bad refresh_token=<redacted>\""))
        #expect(printed.contains(#"\"client_secret\":\"<redacted>\""#))
        #expect(printed.contains(#"\"user\":\"ada\""#))
        #expect(printed.contains("name=\"user\"\r\n\r\nada"))
    }

    @Test func headersAreRedactedByRuleAndByTheUsersNames() async throws {
        let stub = StubEngine()
        stub.on(nil, "*", reply: .json(["ok": true], headers: ["X-Session-Id": "sess-GGG", "X-Request-Id": "r-1"]))
        let log = EventLog()
        let (center, _) = stubCenter(stub) { config in
            config.consoleLog = true
            config.consoleLogHandler = { log.record($0) }
            config.consoleLogSecretNames = ["Private"]
        }
        _ = try await center.send { request in
            request.api = "me"
            request.headers["Private-Token"] = "priv-EEE"
            request.headers["X-Api-Key"] = "key-DDD"
            request.headers["X-Amz-Signature"] = "sig-FFF"
            request.headers["X-Private-Thing"] = "tok-BBB"
            request.headers["Accept-Language"] = "fr"
            request.parameters = ["passwd": "pw-HHH", "sessionId": "sess-GGG", "page": 2]
        }
        let printed = log.all.joined()
        for secret in Self.secrets { #expect(!printed.contains(secret), "\(secret) leaked") }
        #expect(printed.contains("Accept-Language: fr"))
        #expect(printed.contains("X-Request-Id: r-1"))
        #expect(printed.contains("page=2") || printed.contains("page: 2"))
    }

    /// Short secret words count as words of a name, not as parts of other words: `user_pin` and `cardNumber` are
    /// secret, `shipping` and `design` are not.
    @Test func shortSecretWordsCountAsWordsOfAName() {
        let rule = Redaction.standard
        let secret = [
            "pin", "PIN", "user_pin", "userPin", "X-OTP", "otp_code", "OTPCode", "cvv", "cvv2", "CVC", "card",
            "card_number", "cardNumber", "creditCard", "ssn", "passcode", "passphrase", "pass", "user.pwd", "jwt",
            "sig", "iban", "Pin-Block",
        ]
        for name in secret { #expect(rule.isSecret(name), "\(name)") }
        let plain = [
            "shipping", "mapping", "spinner", "design", "signup", "bypass", "passenger", "cards", "cardinal", "pins",
            "opinion", "message", "page", "user", "sigma", "jwtlike", "",
        ]
        for name in plain { #expect(!rule.isSecret(name), "\(name)") }
    }

    /// A name is secret by its words, not by letters inside other words: true secrets and true non-secrets, in any
    /// case, Unicode case folding included (the Kelvin sign lowers to `k`), and words the user adds.
    @Test func secretNamesAreMatchedAsWords() {
        let rule = Redaction(adding: ["Tenant"])
        let secret = [
            "X-CSRF-Token", "api_key", "apiKey", "Private-Token", "session_id", "client_secret", "Authorization",
            "Proxy-Authorization", "Cookie", "Set-Cookie", "X-Api-Key", "access_token", "accessToken", "accesstoken",
            "refresh_token", "password", "newPassword", "passwd", "PHPSESSID", "sessionId", "X-Amz-Signature",
            "X-Auth", "tokens", "apikey", "\u{212A}ey", "token\u{301}", "X-Tenant-Id", "secret",
        ]
        for name in secret { #expect(rule.isSecret(name), "\(name)") }
        let plain = [
            "author", "authority", "keyboard", "monkey", "Access-Control-Allow-Credentials",
            "access-control-allow-headers", "Content-Type", "X-Client", "tokenizer", "secretary", "WWW-Authenticate",
            "X-Request-Id", "donkey_count", "sessions_list_url",
        ]
        for name in plain { #expect(!rule.isSecret(name), "\(name)") }
        #expect(SecretName.words(of: "X-CSRFToken_apiKeyV2") == ["x", "csrf", "token", "api", "key", "v2"])
    }

    /// A secret member whose value is an object or array is hidden whole in text (JSON cut short, or carried inside a
    /// JSON string at any depth), as in parsed JSON: only its secret members were hidden, and `"session": {"id":
    /// "…"}` printed the id (inside a string, the `{` alone was taken for the value). Brackets and quotes inside its
    /// strings do not end it; one with no end is hidden to the end of the text. Members two levels of strings down
    /// are read too.
    @Test func aSecretObjectOrArrayIsHiddenWholeInText() {
        let rule = Redaction.standard
        let cases: [(text: String, kept: [String])] = [
            (#"{"session": {"id": "id-AAA", "note": "a } ] \" {"}, "user": "ada""#, [#""user": "ada""#]),
            (#"{"tokens": ["tk-BBB", {"v": "tk-CCC"}], "page": 2"#, [#""page": 2"#]),
            (
                #"{"data":"{\"session\":{\"id\":\"id-DDD\",\"n\":\"x\\\"}\"},\"user\":\"ada\"}"}"#,
                [#"\"user\":\"ada\""#]
            ),
            (
                #"{"outer":"{\"inner\":\"{\\\"card\\\":{\\\"number\\\":\\\"4111-EEE\\\"},\\\"u\\\":1}\"}"}"#,
                [#"\\\"u\\\":1"#]
            ),
            (#"{"user": "ada", "session": {"id": "id-FFF", "more": ["#, [#""user": "ada""#]),
            // A plain secret two levels down: the first level's string value was taken whole, unread.
            (#"{"o":"{\"i\":\"{\\\"password\\\":\\\"pw-GGG\\\",\\\"u\\\":1}\"}"}"#, [#"\\\"u\\\":1"#]),
        ]
        for (text, kept) in cases {
            let redacted = rule.text(text)
            for secret in ["AAA", "BBB", "CCC", "DDD", "EEE", "FFF", "GGG"] {
                #expect(!redacted.contains(secret), "\(secret) in \(redacted)")
            }
            for part in kept { #expect(redacted.contains(part), "\(part) lost from \(redacted)") }
        }
    }

    /// A stub engine whose every request times out, with a `URLError` that names `url` as platforms' errors do
    /// (and says `description`, when given).
    static func timingOut(at url: URL, saying description: String? = nil) -> StubEngine {
        var userInfo: [String: Any] = [
            NSURLErrorFailingURLErrorKey: url, "NSErrorFailingURLStringKey": url.absoluteString,
        ]
        userInfo[NSLocalizedDescriptionKey] = description
        let stub = StubEngine()
        stub.on(nil, "*", reply: .failure(URLError(.timedOut, userInfo: userInfo)))
        return stub
    }

    /// An error's own text is a log line too (`print(error)`, `debugPrint(error)`, string interpolation): its URL,
    /// its message and its underlying error are shown with the same secrets hidden as in the console log.
    @Test func errorDescriptionsHideSecrets() async throws {
        let failing = "https://api.example.com/v1/x?token=tok-AAA&page=2"
        let (center, _) = stubCenter(Self.timingOut(at: URL(string: failing)!))
        let errors = [
            await center.sendRecording { $0.url = "ftp://ada:pw-HHH@example.com/x?token=tok-AAA" }.error,
            await center.sendRecording { $0.url = "http://exa mple.com/x?api_key=key-DDD" }.error,
            await center.sendRecording { $0.url = failing }.error,
        ]
        #expect(errors.map(\.?.code) == [.invalidURL, .invalidURL, .timedOut])
        for error in errors.compactMap({ $0 }) {
            for text in [error.description, String(reflecting: error), error.message, "\(error)"] {
                for secret in ["tok-AAA", "pw-HHH", "key-DDD"] {
                    #expect(!text.contains(secret), "\(secret) in \(text)")
                }
            }
        }
        #expect(errors[0]?.message.contains("is not an http or https URL") == true)
        // A user alone in a URL is hidden too (often a token); a URL's query with an @ keeps its host.
        let redaction = Redaction.standard
        #expect(redaction.text("https://ghp_tok-AAA@api.example.com/x") == "https://<redacted>@api.example.com/x")
        #expect(redaction.text("https://ada:pw-HHH@api.example.com/") == "https://ada:<redacted>@api.example.com/")
        #expect(redaction.text("https://api.example.com/?mail=a@b.c") == "https://api.example.com/?mail=a@b.c")
        #expect(errors[2].map { String(reflecting: $0) }?.contains("page=2") == true)
        #expect(errors[2].map { String(reflecting: $0) }?.contains("underlying") == true)
    }

    @Test func urlsInsideUnderlyingErrorsAreRedacted() async throws {
        let failing = URL(string: "https://user:pw-HHH@api.example.com/v1/x?token=tok-AAA&page=2")!
        let stub = Self.timingOut(at: failing, saying: "timed out loading \(failing.absoluteString)")
        let log = EventLog()
        _ = await loggingCenter(stub, log).sendRecording {
            $0.url = "https://api.example.com/v1/x?token=tok-AAA&page=2"
        }
        let printed = log.all.joined()
        #expect(printed.contains("underlying:"))
        for secret in ["tok-AAA", "pw-HHH"] { #expect(!printed.contains(secret), "\(secret) leaked:\n\(printed)") }
        #expect(printed.contains("page=2"))
    }

    /// Names with short secret words, in every place a name stands, over loopback on both engines: a PIN, a
    /// one-time code, a card and its security code, a social security number, a pass code, a JSON Web Token, in a
    /// JSON body and its echo, a query (`sig`, Azure's signature) and a header. All printed before.
    @Test(arguments: bothEngines)
    func namesWithShortSecretWordsAreRedactedOverLoopback(engineName: String) async throws {
        let log = EventLog()
        let center = try loggingLoopbackCenter(engineName, log)
        let response = try await center.send { request in
            request.api = "anything?sig=sig-AAA&page=2"
            request.method = .post
            request.requestSerializer = .json
            request.headers["X-OTP"] = "otp-BBB"
            request.parameters = [
                "pin": "pin-CCC", "otp_code": "otp-DDD", "ssn": "ssn-EEE", "passcode": "pc-FFF", "jwt": "jwt-GGG",
                "card": ["number": "4111111111111111", "cvv": "cvv-HHH"] as [String: any Sendable],
                "shipping": "ground",
            ]
        }
        #expect(response.json?["json"]?["pin"]?.string == "pin-CCC", "the server saw the values")
        let printed = log.all.joined()
        let secrets = [
            "sig-AAA", "otp-BBB", "pin-CCC", "otp-DDD", "ssn-EEE", "pc-FFF", "jwt-GGG", "cvv-HHH", "4111111111111111",
        ]
        for secret in secrets { #expect(!printed.contains(secret), "\(engineName): \(secret) leaked") }
        #expect(
            printed.contains("ground"), "\(engineName): a name that holds a short word inside another is not secret")
        #expect(printed.contains("page=2"), "\(engineName)")
    }

    /// A secret word followed by a combining mark (`token` then U+0301) is still in the name: the name was compared
    /// by character, in which the word's last letter and the mark are one, and the value was printed. In a JSON
    /// body and its echo, a form body, and a query, over loopback on both engines.
    @Test(arguments: bothEngines)
    func aSecretWordFollowedByACombiningMarkIsStillSecret(engineName: String) async throws {
        let log = EventLog()
        let center = try loggingLoopbackCenter(engineName, log)
        let json = try await center.send { request in
            request.api = "anything?access_token\u{301}=tok-AAA&page=2"
            request.method = .post
            request.requestSerializer = .json
            request.parameters = ["token\u{301}": "tok-BBB", "api_key\u{301}s": ["tok-CCC"], "user": "ada"]
        }
        #expect(json.json?["json"]?["token\u{301}"]?.string == "tok-BBB", "the server saw the values")
        _ = try await center.send { request in
            request.api = "post"
            request.method = .post
            request.parameters = ["secret\u{301}": "tok-DDD"]
        }
        let printed = log.all.joined()
        for secret in ["tok-AAA", "tok-BBB", "tok-CCC", "tok-DDD"] {
            #expect(!printed.contains(secret), "\(engineName): \(secret) leaked")
        }
        #expect(printed.contains("ada") && printed.contains("page=2"), "\(engineName)")
    }

    /// A center on loopback that logs to `log`.
    func loggingLoopbackCenter(_ engineName: String, _ log: EventLog) throws -> Center {
        try loopbackCenter(engineName) { config in
            config.consoleLog = true
            config.consoleLogHandler = { log.record($0) }
        }
    }

    /// The same bodies through a real engine over loopback, on both: a property list and a multipart form, each
    /// sent with secret fields and echoed back by the server, are printed with the secrets hidden (in the response
    /// banner), and the rest shown.
    @Test(arguments: bothEngines)
    func bodiesEchoedOverLoopbackAreRedacted(engineName: String) async throws {
        let log = EventLog()
        let center = try loggingLoopbackCenter(engineName, log)
        let list = try await center.send { request in
            request.api = "echo-body"
            request.method = .post
            request.requestSerializer = .plist
            request.responseSerializer = .plist
            request.parameters = ["user": "ada", "password": "pw-HHH", "device": ["push_token": "tok-AAA"]]
        }
        #expect(String(decoding: list.data, as: UTF8.self).contains("pw-HHH"))
        let form = try await center.send { request in
            request.api = "echo-body"
            request.kind = .upload
            request.responseSerializer = .raw
            request.parameters = ["user": "ada", "api_key": "key-DDD"]
            request.addFormData(name: "photo", data: Data("jpeg-bytes".utf8), fileName: "me.jpg")
        }
        #expect(String(decoding: form.data, as: UTF8.self).contains("key-DDD"))
        let printed = log.all.joined()
        for secret in ["pw-HHH", "tok-AAA", "key-DDD"] { #expect(!printed.contains(secret), "\(secret) leaked") }
        #expect(printed.contains("<key>user</key>"))
        #expect(printed.contains("<string>ada</string>"))
        #expect(printed.contains("jpeg-bytes"))
    }
}
