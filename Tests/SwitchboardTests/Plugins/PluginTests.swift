import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
@testable import Switchboard
import SwitchboardTestSupport

/// A plugin that records each step it sees, under its name.
private struct Recorder: Plugin {
    let name: String
    let log: EventLog

    func prepare(_ request: inout Request) async throws { log.record("\(name) prepare") }
    func adapt(_ request: inout EngineRequest, for original: Request) async throws { log.record("\(name) adapt") }
    func willSend(_ request: EngineRequest, for original: Request) async { log.record("\(name) willSend") }
    func didReceive(_ result: Result<Response, HTTPError>, for original: Request) async {
        log.record("\(name) didReceive")
    }
    func respond(_ response: Response, for original: Request) async throws -> Response {
        log.record("\(name) respond")
        return response
    }
    func process(_ result: Result<Response, HTTPError>, for original: Request) async -> Result<Response, HTTPError> {
        log.record("\(name) process")
        return result
    }
}

/// The plugin seam: order, what each step may change, errors, retries, and the three plugins that ship.
@Suite struct PluginTests {
    @Test func stepsRunInOrderCenterNodeRequestAndBackOnTheWayOut() async throws {
        let log = EventLog()
        let (center, stub) = stubCenter { config in
            config.plugins = [Recorder(name: "center", log: log)]
            config.nodePlugins[.default] = [Recorder(name: "node", log: log)]
        }
        stub.on(nil, "*") { _ in .json(["ok": true]) }
        _ = try await center.send { request in
            request.api = "users"
            request.plugins = [Recorder(name: "request", log: log)]
        }
        #expect(
            log.all == [
                "center prepare", "node prepare", "request prepare",
                "center adapt", "node adapt", "request adapt",
                "center willSend", "node willSend", "request willSend",
                "request didReceive", "node didReceive", "center didReceive",
                "request respond", "node respond", "center respond",
                "request process", "node process", "center process",
            ])
    }

    /// With plugins of a node and of the request, the hooks still come after all of them.
    @Test func hooksComeAfterNodeAndRequestPlugins() async throws {
        let log = EventLog()
        let (center, stub) = stubCenter { config in
            config.plugins = [Recorder(name: "center", log: log)]
            config.nodePlugins[.default] = [Recorder(name: "node", log: log)]
            config.onRequest = { _ in log.record("onRequest") }
            config.onResponse = { _, response in
                log.record("onResponse")
                return response
            }
        }
        stub.on(nil, "*") { _ in .json(["ok": true]) }
        _ = try await center.send { request in
            request.api = "users"
            request.plugins = [Recorder(name: "request", log: log)]
        }
        let steps = log.all.filter { $0.hasSuffix("prepare") || $0.hasSuffix("respond") || $0.hasPrefix("on") }
        #expect(
            steps == [
                "center prepare", "node prepare", "request prepare", "onRequest",
                "onResponse", "request respond", "node respond", "center respond",
            ])
    }

    /// The `onRequest` and `onResponse` hooks are the plugin after every other: the last to prepare, the first to
    /// respond; `respond` runs before the request's `validate`, and what it throws fails the attempt as `.business`,
    /// which the retry policy judges as any failure.
    @Test func hooksAreThePluginAfterEveryOtherAndRespondMayFailAnAttempt() async throws {
        struct Refused: Error {}
        struct BusinessCode: Plugin {
            let log: EventLog
            func respond(_ response: Response, for original: Request) async throws -> Response {
                log.record("code respond")
                if response.json?["code"]?.int != 0 { throw Refused() }
                return response
            }
        }
        let log = EventLog()
        let (center, stub) = stubCenter { config in
            config.plugins = [BusinessCode(log: log)]
            config.onRequest = { _ in log.record("onRequest") }
            config.onResponse = { _, response in
                log.record("onResponse")
                return response
            }
            config.retryPolicy = RetryPolicy(maxAttempts: 2, initialDelay: .zero, jitter: 0, errorCodes: [.business])
        }
        stub.on(nil, "*", replies: [.json(["code": 7]), .json(["code": 0])])
        let response = try await center.send {
            $0.api = "orders"
            $0.validate = { response in
                log.record("validate")
                return response
            }
        }
        #expect(response.attempts == 2)
        #expect(
            log.all == [
                "onRequest", "onResponse", "code respond",
                "onRequest", "onResponse", "code respond", "validate",
            ])

        stub.on(nil, "*", reply: .json(["code": 3]))
        do {
            _ = try await center.send {
                $0.api = "orders"; $0.retryCount = 0
            }
            Issue.record("a refused response passed")
        } catch {
            #expect(error.code == .business && error.underlying is Refused)
            #expect(error.message.hasPrefix("a plugin rejected the response"), "\(error.message)")
            #expect(error.response?.json?["code"]?.int == 3)
        }
    }

    @Test func nodePluginsApplyToTheirNodeOnly() async throws {
        let log = EventLog()
        let (center, stub) = stubCenter { config in
            config.nodes["payments"] = "https://pay.example.com/"
            config.nodePlugins["payments"] = [Recorder(name: "payments", log: log)]
        }
        stub.on(nil, "*") { _ in .json(["ok": true]) }
        _ = try await center.send { $0.api = "users" }
        #expect(log.all.isEmpty)
        _ = try await center.send {
            $0.api = "charges"; $0.node = "payments"
        }
        #expect(log.all.first == "payments prepare")
    }

    /// `prepare` runs before the URL is composed: changing `api` or `node` there moves the request.
    @Test func prepareMayMoveTheRequest() async throws {
        struct Versioned: Plugin {
            func prepare(_ request: inout Request) async throws {
                request.api = "v2/" + (request.api ?? "")
                request.node = "mirror"
                request.headers["X-Version"] = "2"
            }
        }
        let (center, stub) = stubCenter { config in
            config.nodes["mirror"] = "https://mirror.example.com/"
            config.plugins = [Versioned()]
        }
        stub.on(nil, "*") { echoReply($0) }
        _ = try await center.send { $0.api = "users" }
        let sent = try #require(stub.requests.first)
        #expect(sent.url?.absoluteString == "https://mirror.example.com/v2/users")
        #expect(sent.urlRequest.value(forHTTPHeaderField: "X-Version") == "2")
    }

    @Test func aPluginThatThrowsEndsTheRequestBeforeTheEngine() async {
        struct Offline: Error {}
        struct Refuse: Plugin {
            let error: any Error
            func prepare(_ request: inout Request) async throws { throw error }
        }
        let (center, stub) = stubCenter { $0.plugins = [Refuse(error: Offline())] }
        let vetoed = await center.sendRecording { $0.api = "users" }
        #expect(vetoed.error?.code == .vetoed)
        #expect(vetoed.error?.underlying is Offline)
        let own = HTTPError(.authentication, "log in first")
        let (other, _) = stubCenter(stub) { $0.plugins = [Refuse(error: own)] }
        let kept = await other.sendRecording { $0.api = "users" }
        #expect(kept.error?.code == .authentication)
        #expect(kept.error?.message == "log in first")
        #expect(stub.requests.isEmpty)
    }

    /// A plugin can retry what the policy would not (here a 503 once), and turn a failure into a response.
    @Test func retryDelayAndProcessDecideTheOutcome() async throws {
        struct RetryUnavailableOnce: Plugin {
            func retryDelay(after error: HTTPError, attempt: Int, for original: Request) async -> Duration? {
                error.status == 503 && attempt == 1 ? .milliseconds(1) : nil
            }
        }
        struct NotFoundIsEmpty: Plugin {
            func process(
                _ result: Result<Response, HTTPError>, for original: Request
            ) async -> Result<Response, HTTPError> {
                guard case .failure(let error) = result, error.status == 404, let response = error.response else {
                    return result
                }
                return .success(response)
            }
        }
        let (center, stub) = stubCenter { $0.plugins = [RetryUnavailableOnce(), NotFoundIsEmpty()] }
        let calls = Locked(0)
        stub.on(nil, "/v1/flaky") { _ in
            calls.withLock { count -> Int in
                count += 1; return count
            } == 1 ? .status(503) : .json(["ok": true])
        }
        stub.on(nil, "/v1/missing") { _ in .status(404) }
        let flaky = try await center.send { $0.api = "flaky" }
        #expect(flaky.attempts == 2)
        let missing = try await center.send { $0.api = "missing" }
        #expect(missing.status == 404)
    }

    /// The outcome passes `onError` first (the hooks are the innermost plugin), then the plugins' `process`; a
    /// cancelled request's plugins see it cancelled, and none of them can make it a success.
    @Test(arguments: bothEngines)
    func theOutcomePassesOnErrorThenThePluginsAndACancelStaysAFailure(engineName: String) async throws {
        struct Recovering: Plugin {
            let seen: EventLog
            let sent: Locked<Bool>
            func willSend(_ request: EngineRequest, for original: Request) async { sent.withLock { $0 = true } }
            func process(
                _ result: Result<Response, HTTPError>, for original: Request
            ) async -> Result<Response, HTTPError> {
                guard case .failure(let error) = result else { return result }
                seen.record("\(error.code) \(error.message)")
                return .success(Response(request: original, status: 200))
            }
        }
        let (seen, sent) = (EventLog(), Locked(false))
        let center = try loopbackCenter(engineName) { config in
            config.plugins = [Recovering(seen: seen, sent: sent)]
            config.onError = { _, error in
                error.status == 404 ? HTTPError(.business, "no such user", response: error.response) : error
            }
        }
        let recovered = try await center.send { $0.api = "status/404" }
        #expect(recovered.status == 200)
        #expect(seen.all == ["business no such user"])

        let task = Task { try await center.send { $0.api = "delay/5" } }
        await waitUntil { sent.withLock { $0 } }
        task.cancel()
        switch await task.result {
        case .success(let response): Issue.record("a cancelled request answered \(response.status)")
        case .failure(let error): #expect((error as? HTTPError)?.code == .cancelled, "\(error)")
        }
        #expect(seen.all.dropFirst().first?.hasPrefix("cancelled") == true, "\(seen.all)")
    }

    // MARK: - SigningPlugin

    /// RFC 4231, test cases 2 and 6.
    @Test func hmacMatchesTheRFCVectors() {
        let short = SHA256Hasher.hmac(key: Data("Jefe".utf8), message: Data("what do ya want for nothing?".utf8))
        #expect(
            short.map { String(format: "%02x", $0) }.joined()
                == "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843")
        let long = SHA256Hasher.hmac(
            key: Data(repeating: 0xaa, count: 131),
            message: Data("Test Using Larger Than Block-Size Key - Hash Key First".utf8))
        #expect(
            long.map { String(format: "%02x", $0) }.joined()
                == "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54")
    }

    /// The loopback server recomputes each signature from the request as it arrived, on both engines: a query with
    /// escapes, a JSON body, a file body; a wrong key is refused.
    @Test(arguments: bothEngines)
    func signaturesVerifyOnTheServer(engineName: String) async throws {
        let engine = try namedEngine(engineName)
        let center = Center { config in
            config.engine = engine
            config.server = LoopbackServer.shared.baseURL + "/"
            config.plugins = [SigningPlugin(key: Httpbin.signingKey, keyID: "test-1")]
        }
        let get = try await center.send { request in
            request.api = "signed/users"
            request.parameters = ["q": "a b&c", "page": 2]
        }
        #expect(get.json?["valid"]?.bool == true, "\(engineName)")
        #expect(get.json?["keyId"]?.string == "test-1")
        let post = try await center.send { request in
            request.api = "signed/charges"
            request.method = .post
            request.requestSerializer = .json
            request.parameters = ["amount": 1250, "currency": "eur"]
        }
        #expect(post.json?["valid"]?.bool == true, "\(engineName)")
        let scratch = Scratch()
        let file = scratch.file("signed.bin")
        try Data(repeating: 7, count: 100_000).write(to: file)
        let upload = try await center.send { request in
            request.kind = .upload
            request.api = "signed/upload"
            request.method = .put
            request.body = .file(file)
        }
        #expect(upload.json?["valid"]?.bool == true, "\(engineName)")
        #expect(upload.json?["bodyLength"]?.int == 100_000)

        let wrong = Center { config in
            config.engine = engine
            config.server = LoopbackServer.shared.baseURL + "/"
            config.plugins = [SigningPlugin(key: Data("not the key".utf8))]
        }
        let refused = await wrong.sendRecording { $0.api = "signed/users" }
        #expect(refused.error?.status == 401, "\(engineName)")
    }

    // MARK: - ActivityPlugin

    @Test func activityCountsExchangesUnderWayAndNotCacheHits() async throws {
        let seen = Locked<[Int]>([])
        let activity = ActivityPlugin { count in seen.withLock { $0.append(count) } }
        let center = testCenter { config in
            config.server = LoopbackServer.shared.baseURL + "/"
            config.plugins = [activity]
        }
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<6 {
                group.addTask { _ = await center.sendRecording { $0.api = "delay/3" } }
            }
            group.addTask {
                await waitUntil({ activity.current == 6 }, timeout: .seconds(120))
            }
        }
        #expect(activity.current == 0)
        await waitUntil({ seen.withLock { $0.count } == 12 }, timeout: .seconds(120))
        let counts = seen.withLock { $0 }
        #expect(counts.count == 12)
        #expect(counts.max() == 6)
        #expect(counts.last == 0)
        // A cached response never reaches the engine, so it never counts.
        let cache = ResponseCache()
        let cached = testCenter { config in
            config.server = LoopbackServer.shared.baseURL + "/"
            config.plugins = [activity]
            config.cache = cache
        }
        _ = try await cached.send {
            $0.api = "get"; $0.cachePolicy = .cacheElseNetwork(maxAge: .seconds(60))
        }
        _ = try await cached.send {
            $0.api = "get"; $0.cachePolicy = .cacheElseNetwork(maxAge: .seconds(60))
        }
        await waitUntil({ seen.withLock { $0.count } == 14 }, timeout: .seconds(120))
        #expect(seen.withLock { $0.count } == 14)
    }

    // MARK: - CURLLogPlugin

    @Test func curlCommandsRedactSecretsEverywhere() async throws {
        let lines = Locked<[String]>([])
        let (center, stub) = stubCenter { config in
            config.plugins = [CURLLogPlugin(secretNames: ["pin"]) { line in lines.withLock { $0.append(line) } }]
        }
        stub.on(nil, "*") { _ in .json(["ok": true]) }
        _ = try await center.send { request in
            request.api = "login"
            request.method = .post
            request.requestSerializer = .json
            request.parameters = ["user": "o'brien", "password": "hunter2", "pin": "1234"]
            request.headers["Private-Token"] = "abc123"
            request.headers["X-Trace"] = "t-1"
        }
        _ = try await center.send { request in
            request.url = "https://api.example.com/v1/search?q=x&access_token=tok-999"
        }
        let all = lines.withLock { $0 }
        #expect(all.count == 2)
        let post = try #require(all.first)
        #expect(post.hasPrefix("curl -X POST 'https://api.example.com/v1/login'"))
        #expect(post.contains("-H 'X-Trace: t-1'"))
        #expect(post.contains("o'\\''brien"))
        for secret in ["hunter2", "1234", "abc123", "tok-999"] {
            #expect(!all.joined().contains(secret), "\(secret) printed")
        }
        #expect(post.contains("<redacted>"))
        #expect(all[1].hasPrefix("curl 'https://api.example.com/v1/search?q=x&access_token=<redacted>'"))
    }

    /// A secret whose value holds `'`, `,`, `;` or `)` is hidden whole, and the command still reads as the shell
    /// reads it: its value was hidden up to that character and the rest printed, and hiding a value in the quoted
    /// command could take its closing quote with it.
    @Test func curlCommandsHideSecretsWithQuotesWholeAndStayWellFormed() async throws {
        let lines = Locked<[String]>([])
        let (center, stub) = stubCenter { config in
            config.plugins = [CURLLogPlugin { line in lines.withLock { $0.append(line) } }]
        }
        stub.on(nil, "*") { _ in .json(["ok": true]) }
        _ = try await center.send { request in
            request.url = "https://api.example.com/v1/login?user=ada&password=hu'n,te;r)2&x=1"
            request.method = HTTPMethod(rawValue: "PATCH'$")
            request.headers["X-Note"] = "password=se'cr,et;9) and more"
            request.body = .string("user=ada&token=to'k,e;n)7&y=2", contentType: "application/x-www-form-urlencoded")
        }
        let command = try #require(lines.withLock { $0.first })
        for secret in ["hu'n", "n,te", "te;r", "r)2", "se'cr", "cr,et", "et;9", "to'k", "k,e", "e;n", "n)7"] {
            #expect(!command.contains(secret), "\(secret) printed: \(command)")
            #expect(!command.contains(secret.replacingOccurrences(of: "'", with: "'\\''")), "\(secret) printed")
        }
        #expect(command.contains("&x=1"))
        #expect(command.contains("&y=2"))
        // The shell reads it: the words are those printed, unbroken by a quote.
        let shell = try ProcessLaunch.spawn("/bin/sh", ["-n", "-c", command])
        #expect(ProcessLaunch.exitStatus(of: shell) == 0, "\(command)")
        #expect(command.hasPrefix("curl -X 'PATCH'\\''$' 'https://api.example.com/v1/login?"))
    }

    /// A `'` that a combining mark follows (U+0301) is one character with the mark: escaped by character, it was left
    /// as it was and ended the command's quoting, so that the rest of the value ran as shell code when the command was
    /// pasted into a shell. Each `'` scalar is escaped: the shell reads the value back as sent, and runs nothing.
    @Test func aQuoteThatACombiningMarkFollowsStaysQuoted() async throws {
        let scratch = Scratch()
        let marker = scratch.file("ran")
        let lines = Locked<[String]>([])
        let (center, stub) = stubCenter { config in
            config.plugins = [CURLLogPlugin { line in lines.withLock { $0.append(line) } }]
        }
        stub.on(nil, "*") { _ in .json(["ok": true]) }
        let value = "a'\u{301} $(touch \(marker.path)) '\u{301}"
        _ = try await center.send { request in
            request.url = "https://api.example.com/v1/items"
            request.headers["X-Note"] = value
        }
        let command = try #require(lines.withLock { $0.first })
        #expect(command.hasPrefix("curl "))
        // The shell prints each word of the command (after `curl`) on a line of its own.
        let output = scratch.file("words")
        try Data().write(to: output)
        let handle = try FileHandle(forWritingTo: output)
        let shell = try ProcessLaunch.spawn(
            "/bin/sh", ["-c", "printf '%s\\n' " + command.dropFirst("curl ".count)], output: handle)
        let status = try await offPool { ProcessLaunch.exitStatus(of: shell) }
        try handle.close()
        #expect(status == 0, "\(command)")
        #expect(!FileManager.default.fileExists(atPath: marker.path), "the value ran as shell code: \(command)")
        let words = String(decoding: try Data(contentsOf: output), as: UTF8.self).split(separator: "\n")
        #expect(words.contains { $0.unicodeScalars.elementsEqual("X-Note: \(value)".unicodeScalars) }, "\(words)")
    }

    /// Bodies the console log never prints but a cURL command does: a property list and a multipart form, each with
    /// secret fields.
    @Test func curlCommandsRedactPlistAndMultipartBodies() async throws {
        let lines = Locked<[String]>([])
        let (center, stub) = stubCenter { config in
            config.plugins = [CURLLogPlugin { line in lines.withLock { $0.append(line) } }]
        }
        stub.on(nil, "*") { _ in .json(["ok": true]) }
        _ = try await center.send { request in
            request.api = "login"
            request.method = .post
            request.requestSerializer = .plist
            request.parameters = ["user": "ada", "password": "hunter2", "device": ["push_token": "tok-999"]]
        }
        _ = try await center.send { request in
            request.api = "avatar"
            request.kind = .upload
            request.parameters = ["user": "ada", "api_key": "key-123"]
            request.addFormData(name: "secret_note", data: Data("s3cr3t".utf8))
            request.addFormData(name: "photo", data: Data("jpeg-bytes".utf8), fileName: "me.jpg")
        }
        let all = lines.withLock { $0 }
        #expect(all.count == 2)
        for secret in ["hunter2", "tok-999", "key-123", "s3cr3t"] {
            #expect(!all.joined().contains(secret), "\(secret) printed")
        }
        #expect(all[0].contains("<key>user</key>"))
        #expect(all[0].contains("<string>ada</string>"))
        #expect(all[1].contains("jpeg-bytes"))
        #expect(all[1].contains("name=\"user\""))
    }

    /// A body limit below zero prints none of the body (cutting to it stopped the process).
    @Test func aBodyLimitBelowZeroPrintsNoBody() async throws {
        let lines = Locked<[String]>([])
        let (center, stub) = stubCenter { config in
            config.plugins = [CURLLogPlugin(bodyLimit: -5) { line in lines.withLock { $0.append(line) } }]
        }
        stub.on(nil, "*", reply: .status(204))
        _ = try await center.send { request in
            request.api = "notes"
            request.method = .post
            request.parameters = ["text": "hello"]
        }
        let line = try #require(lines.withLock { $0.first })
        #expect(line.contains("--data-binary '… ("))
        #expect(!line.contains("hello"))
    }

    @Test func endpointsBringTheirPlugins() async throws {
        let log = EventLog()
        struct Profile: Endpoint {
            typealias Response = JSON
            let log: EventLog
            var path: String { "profile" }
            var plugins: [any Plugin] { [Recorder(name: "endpoint", log: log)] }
        }
        let (center, stub) = stubCenter()
        stub.on(nil, "*") { _ in .json(["ok": true]) }
        _ = try await center.send(Profile(log: log))
        #expect(log.all.contains("endpoint prepare"))
        #expect(log.all.contains("endpoint process"))
    }
}
