import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
@testable import Switchboard
import SwitchboardTestSupport

/// Requests through `URLSessionEngine` to an httpbin-compatible server: the loopback server, or a real httpbin when
/// `SWITCHBOARD_HTTPBIN_URL` is set (CI runs this suite both ways).
@Suite struct RequestTests {
    /// A center with a general server, header and parameter, as an app would configure one.
    func center(_ configure: (inout Center.Configuration) -> Void = { _ in }) -> Center {
        Server.center { config in
            config.headers["X-Client"] = "switchboard-tests"
            config.parameters["app_version"] = "1.2"
            configure(&config)
        }
    }

    @Test func theServerUnderTestIsTheOneConfigured() async throws {
        let response = try await center().send { $0.api = "get" }
        let server = response.headers["Server"] ?? ""
        #expect(server.contains(Server.isRealHttpbin ? "gunicorn" : "SwitchboardLoopback"), "Server: \(server)")
    }

    @Test func getWithGeneralServerAndAPI() async throws {
        let response = try await center().send {
            $0.api = "get"; $0.parameters = ["q": "a b&c", "n": 3]
        }
        #expect(response.status == 200)
        let json = try #require(response.json)
        #expect(json["url"]?.string == Server.base + "/get?app_version=1.2&n=3&q=a%20b%26c")
        #expect(json["args"]?["q"]?.string == "a b&c")
        #expect(json["args"]?["n"]?.string == "3")
        #expect(json["args"]?["app_version"]?.string == "1.2")
        #expect(json["headers"]?["X-Client"]?.string == "switchboard-tests")
    }

    @Test func getWithGeneralParametersAndHeadersSwitchedOff() async throws {
        let response = try await center().send { request in
            request.api = "get"
            request.parameters = ["only": "mine"]
            request.useGeneralParameters = false
            request.useGeneralHeaders = false
        }
        let json = try #require(response.json)
        #expect(json["args"] == ["only": "mine"])
        #expect(json["headers"]?["X-Client"] == nil)
    }

    @Test func postForm() async throws {
        let response = try await center().send { request in
            request.api = "post"
            request.method = .post
            request.parameters = ["name": "Ada Lovelace", "tags": ["a", "b"], "admin": true]
        }
        let json = try #require(response.json)
        #expect(json["form"]?["name"]?.string == "Ada Lovelace")
        #expect(json["form"]?["tags[]"] == ["a", "b"])
        #expect(json["form"]?["admin"]?.string == "true")
        #expect(json["form"]?["app_version"]?.string == "1.2")
        #expect(json["headers"]?["X-Client"]?.string == "switchboard-tests")
        #expect(json["headers"]?["Content-Type"]?.string?.hasPrefix("application/x-www-form-urlencoded") == true)
    }

    /// Money and Foundation's numbers reach the server as they were given: a `Decimal` price (which went through
    /// `Double` and arrived as 19.990000000000002), JSONSerialization's 1 (an `NSNumber`, which arrived as `true`), a
    /// `Float` (widened, 0.1 arrived as 0.10000000149011612), -0.0 (arrived as 0) and `NSNull` (refused).
    @Test func decimalsAndFoundationNumbersArriveAsGiven() async throws {
        let parsed = try JSONSerialization.jsonObject(with: Data(#"{"count":1,"ratio":0.1}"#.utf8))
        let response = try await center().send { request in
            request.api = "post"
            request.method = .post
            request.requestSerializer = .json
            request.parameters = [
                "price": Decimal(string: "19.99")!, "total": Decimal(string: "12345678901234567.891")!,
                "parsed": parsed as? [String: any Sendable] ?? [:], "weight": Float(0.1), "zero": -0.0,
                "none": NSNull(),
            ]
        }
        let sent = try #require(response.json?["data"]?.string)
        #expect(sent.contains(#""price":19.99"#), "\(sent)")
        #expect(sent.contains(#""total":12345678901234567.891"#), "\(sent)")
        #expect(sent.contains(#""parsed":{"count":1,"ratio":0.1}"#), "\(sent)")
        #expect(sent.contains(#""weight":0.1,"zero":-0.0"#), "\(sent)")
        #expect(sent.contains(#""none":null"#), "\(sent)")
    }

    @Test func postJSON() async throws {
        let response = try await center().send { request in
            request.api = "post"
            request.method = .post
            request.requestSerializer = .json
            request.parameters = ["name": "Ada", "id": 9_007_199_254_740_993 as Int64, "nested": ["k": [1, 2.5]]]
        }
        let json = try #require(response.json)
        #expect(json["json"]?["name"]?.string == "Ada")
        #expect(json["json"]?["nested"]?["k"] == [1, 2.5])
        #expect(json["json"]?["app_version"]?.string == "1.2")
        // The integer went over the wire exactly (it is above 2^53, where a Double would round it).
        #expect(json["data"]?.string?.contains("\"id\":9007199254740993") == true)
        #expect(json["headers"]?["Content-Type"]?.string == "application/json")
        #expect(json["headers"]?["X-Client"]?.string == "switchboard-tests")
    }

    @Test func postPlist() async throws {
        let response = try await center().send { request in
            request.api = "post"
            request.method = .post
            request.requestSerializer = .plist
            request.parameters = ["name": "Ada", "count": 2]
        }
        let json = try #require(response.json)
        let text = try #require(json["data"]?.string)
        let plist = try PropertyListSerialization.propertyList(from: Data(text.utf8), format: nil) as? [String: Any]
        #expect(plist?["name"] as? String == "Ada")
        #expect((plist?["count"] as? NSNumber)?.intValue == 2)
        #expect(plist?["app_version"] as? String == "1.2")
        #expect(json["headers"]?["Content-Type"]?.string == "application/x-plist")
        #expect(json["headers"]?["X-Client"]?.string == "switchboard-tests")
    }

    @Test func explicitJSONBodyOverridesParameters() async throws {
        struct NewUser: Codable, Sendable { var name: String; var age: Int }
        let response = try await center().send { request in
            request.api = "anything"
            request.method = .post
            request.body = .json(NewUser(name: "Ada", age: 36))
        }
        let json = try #require(response.json)
        #expect(json["json"] == ["name": "Ada", "age": 36])
        #expect(json["form"] == [:])
    }

    /// Parameters beside an explicit body travel in the query, the center's general ones too, as beside a file or
    /// stream body; they were dropped without a word.
    @Test func parametersBesideAnExplicitBodyTravelInTheQuery() async throws {
        let center = Server.center { $0.parameters["app_version"] = "1.2" }
        for method in [HTTPMethod.post, .put, .patch] {
            let response = try await center.send { request in
                request.api = "anything"
                request.method = method
                request.parameters = ["invite": "x y", "page": 2]
                request.body = .json(["name": "Ada"])
            }
            let json = try #require(response.json)
            #expect(json["method"]?.string == method.rawValue)
            #expect(json["args"] == ["app_version": "1.2", "invite": "x y", "page": "2"], "\(method)")
            #expect(json["json"] == ["name": "Ada"], "\(method)")
            #expect(json["form"] == [:], "\(method)")
        }
    }

    @Test func rawResponse() async throws {
        let response = try await center().send {
            $0.api = "bytes/2048"; $0.parameters = ["seed": 7]; $0.responseSerializer = .raw
        }
        guard case .data(let data) = response.value else { Issue.record("expected raw data"); return }
        #expect(data.count == 2048)
        #expect(data == response.data)
    }

    @Test func jsonResponse() async throws {
        let response = try await center().send { $0.api = "json" }
        guard case .json(let json) = response.value else { Issue.record("expected JSON"); return }
        #expect(json["slideshow"]?["title"]?.string == "Sample Slide Show")
        #expect(json["slideshow"]?["slides"]?[1]?["items"]?.array?.count == 2)
    }

    @Test func xmlResponse() async throws {
        let response = try await center().send {
            $0.api = "xml"; $0.responseSerializer = .xml
        }
        guard case .xml(let root) = response.value else { Issue.record("expected XML"); return }
        #expect(root.name == "slideshow")
        #expect(root.attributes["title"] == "Sample Slide Show")
        #expect(root.all("slide").count == 2)
        #expect(root["slide"]?["title"]?.text == "Wake up to WonderWidgets!")
    }

    @Test func stringResponse() async throws {
        let response = try await center().send {
            $0.api = "html"; $0.responseSerializer = .string
        }
        guard case .string(let text) = response.value else { Issue.record("expected text"); return }
        #expect(text.contains("Herman Melville - Moby-Dick"))
    }

    @Test func headIsASuccessWithAnEmptyBody() async throws {
        let response = try await center().send {
            $0.api = "get"; $0.method = .head
        }
        #expect(response.status == 200)
        #expect(response.value == .empty)
        #expect(response.data.isEmpty)
    }

    @Test(arguments: [(HTTPMethod.head, "get", 200), (.get, "status/204", 204), (.get, "status/205", 205)])
    func responsesWithoutABodyDecodeAsEmptyBody(method: HTTPMethod, api: String, status: Int) async throws {
        let center = center()
        try await center.send(EmptyBody.self) {
            $0.api = api; $0.method = method
        }
        try await center.send(NoBodyEndpoint(path: api, method: method))
        do {
            _ = try await center.send(JSON.self) {
                $0.api = api; $0.method = method
            }
            Issue.record("an empty \(status) body decoded as JSON")
        } catch {
            #expect(error.code == .decoding)
            #expect(error.message.contains("\(status)"), "\(error.message)")
            #expect(error.status == status)
        }
        // An optional decodes as `nil`, as it does from a `null` body (it failed as the plain type does).
        let absent = try await center.send(JSON?.self) {
            $0.api = api; $0.method = method
        }
        #expect(absent == nil)
    }

    @Test func nestedParametersOfMixedTypesAsAJSONLiteral() async throws {
        let filter: JSON = ["tags": ["linux", "ios"], "limit": 3, "open": true]
        let posted = try await center().send { request in
            request.api = "post"
            request.method = .post
            request.requestSerializer = .json
            request.useGeneralParameters = false
            request.parameters = ["query": "swift", "filter": filter]
        }
        #expect(posted.json?["json"] == ["query": "swift", "filter": filter])
        let queried = try await center().send { request in
            request.api = "get"
            request.useGeneralParameters = false
            request.parameters = ["filter": ["tags": ["linux", "ios"], "limit": 3] as JSON]
        }
        #expect(queried.json?["args"] == ["filter[limit]": "3", "filter[tags][]": ["linux", "ios"]])
    }

    @Test func put() async throws {
        let response = try await center().send {
            $0.api = "put"; $0.method = .put; $0.parameters = ["k": "v"]
        }
        #expect(response.json?["form"]?["k"]?.string == "v")
    }

    @Test func deleteSendsParametersInTheQuery() async throws {
        let response = try await center().send {
            $0.api = "delete"; $0.method = .delete; $0.parameters = ["id": 42]
        }
        let json = try #require(response.json)
        #expect(json["args"]?["id"]?.string == "42")
        #expect(json["data"]?.string == "")
    }

    @Test func patch() async throws {
        let response = try await center().send {
            $0.api = "patch"; $0.method = .patch; $0.requestSerializer = .json; $0.parameters = ["k": "v"]
        }
        #expect(response.json?["json"]?["k"]?.string == "v")
    }

    @Test func defaultAndCustomUserAgent() async throws {
        let standard = try await center().send { $0.api = "user-agent" }
        #expect(standard.json?["user-agent"]?.string?.hasPrefix("Switchboard/") == true)
        let custom = try await center().send {
            $0.api = "user-agent"; $0.headers["user-agent"] = "MyApp/2.0"
        }
        #expect(custom.json?["user-agent"]?.string == "MyApp/2.0")
    }

    @Test func notFoundFailsWithTheBodyKept() async {
        let outcome = await center().sendRecording { $0.api = "no/such/route" }
        #expect(outcome.events == ["failure:unacceptableStatus", "finished"])
        let error = outcome.error
        #expect(error?.status == 404)
        #expect(error?.response?.string?.contains("Not Found") == true)
        #expect(
            error?.description.contains("HTTPError.unacceptableStatus (404) GET \(Server.base)/no/such/route") == true)
    }

    @Test func aSlowServerTimesOut() async {
        // The server answers after 10 s; only the 1 s timeout can make this fail with `.timedOut`.
        let outcome = await center().sendRecording {
            $0.api = "delay/10"; $0.timeout = .seconds(1)
        }
        #expect(outcome.error?.code == .timedOut)
        #expect(outcome.events == ["failure:timedOut", "finished"])
    }

    @Test func theTotalTimeoutIsEnforcedWhileDataKeepsArriving() async {
        // 16 bytes over 8 s: never idle for a whole second, so only the total limit can stop it; without it the
        // request would succeed.
        let outcome = await center().sendRecording { request in
            request.api = "drip"
            request.parameters = ["numbytes": 16, "duration": 8]
            request.responseSerializer = .raw
            request.timeout = .seconds(2)
            request.totalTimeout = .seconds(1)
        }
        #expect(outcome.error?.code == .timedOut)
        #expect(outcome.error?.message.contains("total timeout") == true)
    }

    /// `/stream/N` as JSON Lines: each line a JSON object with its `id`, read as it arrives.
    @Test func streamedJSONLines() async throws {
        struct Line: Decodable { var id: Int; var args: [String: String] }
        let stream = try await center().stream { $0.api = "stream/6" }
        var ids: [Int] = []
        for try await line in stream.jsonLines(Line.self) {
            ids.append(line.id)
            #expect(line.args["app_version"] == "1.2")
        }
        #expect(ids == Array(0..<6))
    }

    /// `/drip` as bytes: 12 asterisks over a second, in more than one piece, none changed.
    @Test func streamedDripArrivesPieceByPiece() async throws {
        let stream = try await center().stream { request in
            request.api = "drip"
            request.parameters = ["numbytes": 12, "duration": 1, "delay": 0]
        }
        var received = Data()
        var pieces = 0
        for try await chunk in stream {
            received.append(chunk)
            pieces += 1
        }
        #expect(received == Data(repeating: UInt8(ascii: "*"), count: 12))
        #expect(pieces > 1)
    }

    @Test func cancellingARunningRequestByIdentifier() async {
        let center = center()
        let cancelled = Locked<Request?>(nil)
        let outcome = await center.sendRecording {
            $0.answerOverAMinute()
        } afterSending: { id in
            Task {
                // Once the URL is composed, the request is on its way to the server.
                await waitUntil { center.request(for: id)?.request?.url != nil }
                try await Task.sleep(for: .milliseconds(100))
                center.cancel(id) { work in cancelled.withLock { $0 = work?.request } }
            }
        }
        #expect(outcome.events == ["failure:cancelled", "finished"])
        #expect(cancelled.snapshot?.id == outcome.id)
        #expect(cancelled.snapshot?.url == Server.base + "/drip")
    }

    @Test func callbacksOnTheMainQueueOverTheNetwork() async {
        let key = DispatchSpecificKey<String>()
        DispatchQueue.main.setSpecific(key: key, value: "main")
        let center = center { $0.callbackQueue = .main }
        let seen = await withCheckedContinuation { (continuation: CheckedContinuation<String?, Never>) in
            center.send {
                $0.api = "get"
            } onFinished: { _ in
                continuation.resume(returning: DispatchQueue.getSpecific(key: key))
            }
        }
        #expect(seen == "main")
    }

    @Test func basicAuthWithoutCredentialsReturns401() async {
        // Plain URLSession on Linux never completes this request, whatever its timeouts. Should that come back, the
        // total timeout ends the test with `.timedOut` instead of hanging it.
        let outcome = await center().sendRecording { request in
            request.api = "basic-auth/user/passwd"
            request.totalTimeout = .seconds(30)
        }
        #expect(outcome.error?.code == .unacceptableStatus)
        #expect(outcome.error?.status == 401)
        #expect(outcome.error?.response?.headers["www-authenticate"]?.hasPrefix("Basic") == true)
        if !Server.isRealHttpbin {
            // The loopback 401 has a body (httpbin's is empty); URLSessionEngine dropped it before.
            #expect(outcome.error?.response?.json?["reason"]?.string == "no credentials")
        }
    }

    @Test func basicAuthWithoutCredentialsReturns401WhenNobodyWatchesProgress() async {
        // Without a progress observer URLSessionEngine takes the whole body from a completion handler, which never
        // sees the body of a challenged 401: it asks again through the delegate, so the outcome is the same.
        do {
            _ = try await center().send { request in
                request.api = "basic-auth/user/passwd"
                request.totalTimeout = .seconds(30)
            }
            Issue.record("a 401 should fail")
        } catch {
            #expect(error.code == .unacceptableStatus)
            #expect(error.status == 401)
            #expect(error.response?.headers["www-authenticate"]?.hasPrefix("Basic") == true)
            if !Server.isRealHttpbin {
                #expect(error.response?.json?["reason"]?.string == "no credentials")
            }
        }
    }

    @Test func basicAuthWithCredentials() async throws {
        let token = Data("user:passwd".utf8).base64EncodedString()
        let response = try await center().send {
            $0.api = "basic-auth/user/passwd"
            $0.headers["Authorization"] = "Basic \(token)"
        }
        #expect(response.json?["authenticated"]?.bool == true)
    }

    @Test func redirectsAreFollowed() async throws {
        let response = try await center().send { $0.api = "redirect/3" }
        #expect(response.status == 200)
        #expect(response.url?.path == "/get")
    }

    @Test func aCrossOriginRedirectDoesNotCarryCredentials() async throws {
        // 127.0.0.1 and localhost are different origins for the same server.
        let other =
            Server.base.contains("127.0.0.1")
            ? Server.base.replacingOccurrences(of: "127.0.0.1", with: "localhost")
            : Server.base.replacingOccurrences(of: "localhost", with: "127.0.0.1")
        let response = try await center().send { request in
            request.api = "redirect-to"
            request.parameters = ["url": other + "/headers"]
            request.headers["Authorization"] = "Bearer secret"
            request.headers["Cookie"] = "session=abc"
            request.headers["X-Trace"] = "kept"
        }
        let headers = try #require(response.json?["headers"])
        #expect(response.url?.absoluteString == other + "/headers")
        #expect(headers["Authorization"] == nil)
        #expect(headers["Cookie"] == nil)
        #expect(headers["X-Trace"]?.string == "kept")
    }

    @Test func aSameOriginRedirectKeepsCredentials() async throws {
        let response = try await center().send { request in
            request.api = "redirect-to"
            request.parameters = ["url": "/headers"]
            request.headers["Authorization"] = "Bearer secret"
        }
        #expect(response.json?["headers"]?["Authorization"]?.string == "Bearer secret")
    }

    @Test(arguments: [307, 308])
    func aPostRedirectedWith307Or308KeepsItsBody(status: Int) async throws {
        let response = try await center().send { request in
            request.url = Server.base + "/redirect-to?url=%2Fanything&status_code=\(status)"
            request.method = .post
            request.body = .json(["payload": "kept"])
        }
        let json = try #require(response.json)
        #expect(json["method"]?.string == "POST")
        #expect(json["json"]?["payload"]?.string == "kept")
        #expect(response.url?.path == "/anything")
    }

    @Test func aPostRedirectedWith302BecomesAGet() async throws {
        let response = try await center().send { request in
            request.url = Server.base + "/redirect-to?url=%2Fanything&status_code=302"
            request.method = .post
            request.body = .string("dropped")
        }
        #expect(response.json?["method"]?.string == "GET")
        #expect(response.json?["data"]?.string == "", "no body after the redirect")
        #expect(response.json?["headers"]?["Content-Length"] == nil)
    }

    /// A `301`/`302` keeps the method and body of anything but a `POST`; a `303` drops them, whatever the body.
    @Test(arguments: ["file", "stream", "data"])
    func redirectsKeepOrDropTheBodyAsTheRulesSay(body kind: String) async throws {
        let scratch = Scratch()
        let file = scratch.write("body.bin", bytes: 100_000, seed: 8)
        let content = try Data(contentsOf: file)
        func body() -> Request.Body {
            switch kind {
            case "file": .file(file)
            case "stream": .stream(length: Int64(content.count)) { InputStream(data: content) }
            default: .data(content)
            }
        }
        let kept = try await center().send { request in
            request.url = Server.base + "/redirect-to?url=%2Fanything&status_code=302"
            request.method = .put
            request.body = body()
        }
        #expect(kept.json?["method"]?.string == "PUT")
        #expect(kept.json?["headers"]?["Content-Length"]?.string == "100000", "\(kind)")
        #expect(kept.json?["data"]?.string?.count ?? 0 > 0, "\(kind): the body was sent again")
        let dropped = try await center().send { request in
            request.url = Server.base + "/redirect-to?url=%2Fanything&status_code=303"
            request.method = .put
            request.body = body()
        }
        #expect(dropped.json?["method"]?.string == "GET")
        #expect(dropped.json?["data"]?.string == "", "\(kind)")
        #expect(dropped.json?["headers"]?["Content-Length"] == nil, "\(kind)")
    }

    /// A HEAD stays a HEAD through every redirect, a `303` too: URLSessionEngine sent a GET after a `303`, and the
    /// response to the HEAD came with the body it was sent to do without.
    @Test(arguments: [301, 302, 303, 307, 308])
    func aHeadStaysAHeadThroughRedirects(status: Int) async throws {
        let response = try await center().send { request in
            request.url = Server.base + "/redirect-to?url=%2Fbytes%2F4096&status_code=\(status)"
            request.method = .head
        }
        #expect(response.status == 200, "\(status)")
        #expect(response.data.isEmpty, "\(status): \(response.data.count) bytes came back for a HEAD")
        #expect(response.headers["Content-Length"] == "4096", "\(status)")
    }

    /// No body waits for a `100 Continue` (libcurl asks for one before a body of unknown length or over 1 MiB):
    /// CurlEngine turns it off, and URLSession on Linux does.
    @Test(arguments: ["data", "file", "sized stream", "stream"])
    func noBodyIsSentWithExpectContinue(body kind: String) async throws {
        let scratch = Scratch()
        let content = Data(repeating: 7, count: 2 << 20)
        let file = scratch.file("body.bin")
        try content.write(to: file)
        let response = try await center().send { request in
            request.api = "anything"
            request.method = .post
            switch kind {
            case "data": request.body = .data(content)
            case "file": request.body = .file(file)
            case "sized stream": request.body = .stream(length: Int64(content.count)) { InputStream(data: content) }
            default: request.body = .stream { InputStream(data: content) }
            }
        }
        #expect(response.json?["headers"]?["Expect"] == nil, "\(kind)")
        #expect(response.json?["data"]?.string?.utf8.count == content.count, "\(kind)")
    }

    /// An empty body is still a body: a `POST` with one says `Content-Length: 0` (servers may refuse a `POST` without
    /// a length).
    @Test func anEmptyBodyIsSentWithALengthOfZero() async throws {
        let response = try await center().send { request in
            request.api = "anything"
            request.method = .post
            request.body = .data(Data())
        }
        #expect(response.json?["method"]?.string == "POST")
        #expect(response.json?["headers"]?["Content-Length"]?.string == "0")
    }

    /// An empty file is an empty body, sent with its length of zero.
    @Test func anEmptyFileIsSentWithALengthOfZero() async throws {
        let scratch = Scratch()
        let file = scratch.file("empty.bin")
        try Data().write(to: file)
        let response = try await center().send { request in
            request.api = "anything"
            request.method = .put
            request.body = .file(file)
        }
        #expect(response.json?["method"]?.string == "PUT")
        #expect(response.json?["headers"]?["Content-Length"]?.string == "0")
        #expect(response.json?["data"]?.string == "")
    }

    @Test func anUnreachablePortFailsToConnect() async {
        let outcome = await center().sendRecording { $0.url = "http://127.0.0.1:1/get" }
        #expect(outcome.error?.code == .cannotConnect)
        #expect(outcome.error?.description.contains("http://127.0.0.1:1/get") == true)
    }

    @Test func theConsoleLogHidesSecretsInTheEnginesOwnErrorText() async {
        let log = EventLog()
        let center = center { config in
            config.consoleLog = true
            config.consoleLogHandler = { log.record($0) }
        }
        let outcome = await center.sendRecording { $0.url = "http://ada:pw-HHH@127.0.0.1:1/get?token=tok-AAA&page=2" }
        #expect(outcome.error?.code == .cannotConnect)
        let printed = log.all.joined(separator: "\n")
        #expect(printed.contains("underlying:"))
        #expect(printed.contains("page=2"))
        for secret in ["tok-AAA", "pw-HHH"] { #expect(!printed.contains(secret), "\(secret) leaked:\n\(printed)") }
    }

    @Test func aBodyThatIsNotJSONFailsDecodingAndKeepsTheResponse() async {
        let outcome = await center().sendRecording { $0.api = "html" }
        #expect(outcome.error?.code == .decoding)
        #expect(outcome.error?.status == 200)
        #expect(outcome.error?.message.contains("text/html") == true)
        #expect(outcome.error?.response?.string?.contains("Moby-Dick") == true)
    }

    @Test func typedDecoding() async throws {
        struct Echo: Decodable { var url: String; var args: [String: String] }
        let echo = try await center().send(Echo.self) {
            $0.api = "get"; $0.parameters = ["a": "1"]
        }
        #expect(echo.args["a"] == "1")
        #expect(echo.url.hasPrefix(Server.base + "/get?"))
    }
}

/// Cookies kept between requests, on the engine's cookie storage (a private one here, so other tests never see it).
@Suite struct CookieRequestTests {
    func engine() -> any Engine {
        let storage = privateCookieStorage()
        if TestEngine.isCurl {
            return try! CurlEngine(cookies: storage)
        }
        let configuration = URLSessionConfiguration.ephemeral
        configuration.httpCookieStorage = storage
        return URLSessionEngine(configuration: configuration)
    }

    @Test func aCookieSetByTheServerIsSentBack() async throws {
        let center = Server.center { $0.engine = engine() }
        // httpbin sets the cookie on a redirect to /cookies, which already carries it.
        let set = try await center.send {
            $0.api = "cookies/set"; $0.parameters = ["flavour": "oat"]
        }
        #expect(set.json?["cookies"]?["flavour"]?.string == "oat")
        let later = try await center.send { $0.api = "cookies" }
        #expect(later.json?["cookies"]?["flavour"]?.string == "oat")
    }
}

/// Compressed bodies come back decoded (real httpbin only: the loopback server does not compress).
@Suite(.enabled(if: Server.isRealHttpbin, "the loopback server does not compress"))
struct CompressionRequestTests {
    @Test(arguments: [("gzip", "gzipped"), ("deflate", "deflated"), ("brotli", "brotli")])
    func compressedBodiesAreDecoded(_ route: String, _ flag: String) async throws {
        let response = try await Server.center().send { $0.api = route }
        #expect(response.json?[flag]?.bool == true)
    }
}

/// An endpoint that answers without a body.
struct NoBodyEndpoint: Endpoint {
    typealias Response = EmptyBody
    var path: String
    var method: HTTPMethod
}
