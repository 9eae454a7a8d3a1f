import Foundation
import Testing

@testable import Switchboard

/// Each step of the pipeline on its own: no center, no engine, no socket. A step is given a request, a configuration
/// and a context, and its result is compared; the pipeline's order of steps is covered by the tests that send.
@Suite struct PipelineStepTests {
    /// A pipeline with nothing behind it: a registry of its own, and no center for a refresh.
    let pipeline = Pipeline(registry: Registry(), inFlight: InFlight(), owner: NoOwner())

    final class NoOwner: Sendable {}

    static func configuration(_ configure: (inout CenterConfiguration) -> Void = { _ in }) -> CenterConfiguration {
        var configuration = CenterConfiguration()
        configuration.server = "https://api.example.com/v1/"
        configuration.headers["X-Client"] = "ios"
        configuration.headers["Authorization"] = "Bearer center-token"
        configuration.parameters = ["app": "demo", "access_token": "secret-AAA"]
        configure(&configuration)
        return configuration
    }

    func context(_ request: Request, _ configuration: CenterConfiguration) -> RequestContext {
        RequestContext(request, configuration, owner: pipeline.owner, progress: nil, cancellation: nil, stream: nil)
    }

    func prepared(
        _ request: Request, _ configuration: CenterConfiguration, idempotencyKey: String? = nil
    ) async throws(HTTPError) -> (PreparedRequest, key: String?) {
        var request = request
        var key = idempotencyKey
        let context = context(request, configuration)
        let prepared = try await pipeline.prepare(&request, context, idempotencyKey: &key)
        return (prepared, key)
    }

    // MARK: - Prepare

    @Test func prepareMergesTheCenterAndComposesTheURL() async throws {
        let request = Request {
            $0.api = "users"; $0.headers["X-Client"] = "watch"; $0.parameters = ["page": 2]
        }
        let (prepared, _) = try await prepared(request, Self.configuration())
        #expect(prepared.id == request.id)
        #expect(prepared.request.url == "https://api.example.com/v1/users")
        #expect(prepared.request.headers["X-Client"] == "watch")
        #expect(prepared.request.headers["Authorization"] == "Bearer center-token")
        #expect(prepared.request.parameters["app"] as? String == "demo")
        #expect(prepared.request.parameters["access_token"] as? String == "secret-AAA")
        #expect(prepared.request.responseSerializer == .json && prepared.request.requestSerializer == .form)
        #expect(prepared.request.timeout == .seconds(60))
    }

    @Test func prepareRunsPluginsThenTheHookAndComposesAfterThem() async throws {
        struct Versioned: Plugin {
            func prepare(_ request: inout Request) async throws { request.api = "v2/" + (request.api ?? "") }
        }
        let configuration = Self.configuration {
            $0.plugins = [Versioned()]
            $0.onRequest = { request in request.headers["X-Seen-API"] = request.api }
        }
        let (prepared, _) = try await prepared(Request { $0.api = "users" }, configuration)
        #expect(prepared.request.headers["X-Seen-API"] == "v2/users")
        #expect(prepared.request.url == "https://api.example.com/v1/v2/users")
    }

    @Test func prepareWithholdsTheCentersCredentialsFromAnotherOrigin() async throws {
        let request = Request { $0.url = "https://cdn.example.net/image.png" }
        let (prepared, _) = try await prepared(request, Self.configuration())
        #expect(prepared.request.headers["Authorization"] == nil)
        #expect(prepared.request.parameters["access_token"] == nil)
        #expect(prepared.request.parameters["app"] as? String == "demo")
        #expect(prepared.request.headers["X-Client"] == "ios")
    }

    @Test func prepareGivesAPostOneIdempotencyKeyForEveryAttempt() async throws {
        let configuration = Self.configuration { $0.retryPolicy.idempotencyKey = "Idempotency-Key" }
        let post = Request {
            $0.api = "payments"; $0.method = .post
        }
        let (first, key) = try await prepared(post, configuration)
        let made = try #require(key)
        #expect(first.request.headers["Idempotency-Key"] == made)
        let (second, again) = try await prepared(post, configuration, idempotencyKey: key)
        #expect(second.request.headers["Idempotency-Key"] == made && again == made)
        let (get, none) = try await prepared(Request { $0.api = "payments" }, configuration)
        #expect(get.request.headers["Idempotency-Key"] == nil && none == nil)
    }

    /// A center without credentials of its general headers or parameters, whose requests can be prepared early.
    static func plainConfiguration(
        _ configure: (inout CenterConfiguration) -> Void = { _ in }
    ) -> CenterConfiguration {
        configuration {
            $0.headers["Authorization"] = nil
            $0.parameters = ["app": "demo"]
            configure(&$0)
        }
    }

    @Test func aRequestPreparedEarlyIsTheRequestThePrepareStepMakes() async throws {
        let configuration = Self.plainConfiguration { $0.timeout = .seconds(7) }
        let written = Request {
            $0.api = "users"; $0.headers["X-Client"] = "watch"; $0.parameters = ["page": 2]
        }
        var early = written
        Pipeline.prepareEarly(&early, configuration)
        #expect(early.fields.early?.id == written.id && early.fields.early?.urlIsPlain == true)
        let (fromEarly, _) = try await prepared(early, configuration)
        let (inStep, _) = try await prepared(written, configuration)
        #expect(!fromEarly.changed && inStep.changed)
        for request in [fromEarly.request, inStep.request] {
            #expect(request.url == "https://api.example.com/v1/users")
            #expect(request.headers["X-Client"] == "watch")
            #expect(request.parameters["app"] as? String == "demo")
            #expect(request.parameters["page"] as? Int == 2)
            #expect(request.timeout == .seconds(7) && request.responseSerializer == .json)
        }
        #expect(fromEarly.urlIsPlain == inStep.urlIsPlain)
        // A POST that gets an idempotency key differs from the request registered.
        let keyed = Self.plainConfiguration { $0.retryPolicy.idempotencyKey = "Idempotency-Key" }
        var post = Request {
            $0.api = "payments"; $0.method = .post
        }
        Pipeline.prepareEarly(&post, keyed)
        let (withKey, key) = try await prepared(post, keyed)
        #expect(withKey.changed && key != nil && withKey.request.headers["Idempotency-Key"] == key)
    }

    @Test func aRequestIsPreparedEarlyOnlyWhenNothingLaterNeedsItAsWritten() {
        struct Versioned: Plugin {}
        func isEarly(_ configuration: CenterConfiguration, _ configure: (inout Request) -> Void = { _ in }) -> Bool {
            var request = Request {
                $0.api = "users"
                configure(&$0)
            }
            Pipeline.prepareEarly(&request, configuration)
            return request.fields.early != nil
        }
        #expect(isEarly(Self.plainConfiguration()))
        // The center's credentials are judged on the final URL, against what the request set itself.
        #expect(!isEarly(Self.configuration()))
        #expect(!isEarly(Self.plainConfiguration { $0.parameters = ["access_token": "secret"] }))
        #expect(
            isEarly(Self.configuration()) {
                $0.useGeneralHeaders = false; $0.useGeneralParameters = false
            })
        // Plugins and hooks may change what the URL is composed from.
        #expect(!isEarly(Self.plainConfiguration { $0.plugins = [Versioned()] }))
        #expect(!isEarly(Self.plainConfiguration { $0.onRequest = { _ in } }))
        #expect(!isEarly(Self.plainConfiguration { $0.nodePlugins[.default] = [Versioned()] }))
        #expect(!isEarly(Self.plainConfiguration()) { $0.plugins = [Versioned()] })
        let authenticator = Authenticator(credential: "token") { token, request in
            request.headers["Authorization"] = "Bearer \(token)"
        } refresh: { _, _ in
            "fresh"
        }
        #expect(!isEarly(Self.plainConfiguration { $0.authenticator = authenticator }))
        #expect(isEarly(Self.plainConfiguration { $0.authenticator = authenticator }) { $0.usesAuthenticator = false })
        #expect(!isEarly(Self.plainConfiguration { $0.consoleLog = true }))
    }

    @Test func anEarlyPreparationHoldsOnlyForTheIdentifierItWasMadeFor() async throws {
        var first = Request { $0.api = "users" }
        Pipeline.prepareEarly(&first, Self.plainConfiguration())
        // Sent again (`$0 = saved` gives it an identifier of its own) through a center with other headers: merged
        // with that center's.
        var again = first
        again.id = RequestID.next()
        let other = Self.plainConfiguration { $0.headers["X-Other"] = "yes" }
        let (prepared, _) = try await prepared(again, other)
        #expect(prepared.changed && prepared.request.headers["X-Other"] == "yes")
        #expect(prepared.request.url == "https://api.example.com/v1/users")
    }

    @Test func aURLThatDoesNotComposeEarlyFailsInThePrepareStep() async {
        let configuration = Self.plainConfiguration { $0.server = nil }
        var request = Request { $0.api = "users" }
        Pipeline.prepareEarly(&request, configuration)
        #expect(request.fields.early != nil && request.fields.early?.urlIsPlain == nil)
        do {
            _ = try await prepared(request, configuration)
            Issue.record("a request without a server was prepared")
        } catch {
            #expect(error.code == .invalidURL)
        }
    }

    @Test func anUploadLeftAtGETIsSentAsAPOSTUnlessAPluginChoseGET() async throws {
        struct AsGET: Plugin {
            func prepare(_ request: inout Request) async throws { request.method = .get }
        }
        var upload = Request { $0.api = "files" }
        upload.kind = .upload
        let (left, _) = try await prepared(upload, Self.plainConfiguration())
        #expect(left.request.method == .post)
        // The rule is for a method left at its default, once: a plugin's choice after it stands.
        let (chosen, _) = try await prepared(upload, Self.plainConfiguration { $0.plugins = [AsGET()] })
        #expect(chosen.request.method == .get)
    }

    @Test func prepareReportsAHookRefusalAsVetoed() async {
        struct Offline: Error {}
        let configuration = Self.configuration { $0.onRequest = { _ in throw Offline() } }
        do {
            _ = try await prepared(Request { $0.api = "users" }, configuration)
            Issue.record("the hook's refusal was ignored")
        } catch {
            #expect(error.code == .vetoed)
            #expect(error.underlying is Offline)
            #expect(error.request?.url == "https://api.example.com/v1/users")
        }
    }

    // MARK: - Encode

    @Test func encodeMakesTheEngineRequest() async throws {
        let configuration = Self.configuration {
            $0.maxResponseBytes = 1_000
            $0.allowsInsecureRedirects = true
        }
        let (prepared, _) = try await prepared(
            Request {
                $0.api = "users"; $0.parameters = ["page": 2]
            }, configuration)
        let context = context(prepared.request, configuration)
        let exchange = try pipeline.encode(prepared, context)
        let engineRequest = exchange.engineRequest
        #expect(
            engineRequest.url?.absoluteString
                == "https://api.example.com/v1/users?access_token=secret-AAA&app=demo&page=2")
        #expect(engineRequest.method == .get && engineRequest.id == prepared.id)
        #expect(engineRequest.headers["Accept"] == "application/json, */*;q=0.8")
        #expect(engineRequest.headers["User-Agent"]?.hasPrefix("Switchboard/") == true)
        #expect(engineRequest.maxResponseBytes == 1_000 && engineRequest.allowsInsecureRedirects)
        #expect(exchange.download == nil)
    }

    @Test func encodeRefusesABodyOnAGet() async throws {
        let configuration = Self.configuration()
        let (prepared, _) = try await prepared(
            Request {
                $0.api = "users"; $0.body = .string("x")
            }, configuration)
        let context = context(prepared.request, configuration)
        #expect(throws: HTTPError.self) { try pipeline.encode(prepared, context) }
    }

    /// The fields a request sends, in order, made once for a center's headers (`SendingHeaders`) or for the request:
    /// the same, and made once only where they can be.
    @Test func theCentersHeadersMadeOnceAreTheFieldsTheRequestWouldSend() throws {
        func lines(_ headers: HTTPHeaders) -> [String] { headers.map { "\($0.name): \($0.value)" } }
        let avatar = ResponseSerializer("avatar", accept: "image/png") { _ in .empty }
        let cases: [(center: HTTPHeaders, configure: (inout Request) -> Void, once: Bool)] = [
            (["X-Client": "ios"], { _ in }, true),
            ([:], { _ in }, true),
            (["X-Client": "ios"], { $0.responseSerializer = .json }, true),
            (["X-Client": "ios"], { $0.responseSerializer = .raw }, true),
            (["X-Client": "ios"], { $0.responseSerializer = .string }, true),
            ([:], { $0.responseSerializer = .raw }, true),
            (["X-Client": "ios"], { $0.responseSerializer = .xml }, false),
            (["X-Client": "ios"], { $0.responseSerializer = avatar }, false),
            (["X-Client": "ios", "Accept": "text/csv"], { $0.responseSerializer = .raw }, true),
            (["X-Client": "ios", "Accept": "text/csv"], { $0.responseSerializer = avatar }, true),
            (["X-Client": "ios", "User-Agent": "App/1"], { _ in }, true),
            (["X-Client": "ios"], { $0.headers["X-Trace"] = "1" }, false),
            (["X-Client": "ios"], { $0.headers["Accept"] = "text/plain" }, false),
            (["X-Client": "ios"], { $0.useGeneralHeaders = false }, false),
        ]
        for (index, (center, configure, once)) in cases.enumerated() {
            let configuration = Self.configuration {
                $0.headers = center
                $0.responseSerializer = .json
            }
            var request = Request(configure)
            request.url = "https://api.example.com/v1/users"
            request.merge(with: configuration)
            let made = try RequestEncoding.encode(request, defaults: configuration.sendingHeaders)
            let each = try RequestEncoding.encode(request)
            #expect(lines(made.headers) == lines(each.headers), "case \(index)")
            #expect((configuration.sendingHeaders.headers(for: request) != nil) == once, "case \(index)")
        }
        // A field of the center's that cannot be sent is refused the same way, made once or not.
        let broken = Self.configuration { $0.headers = ["X-Client": "ios", "X-Note": "a\r\nX-Injected: 1"] }
        var request = Request { $0.url = "https://api.example.com/v1/users" }
        request.merge(with: broken)
        #expect(broken.sendingHeaders.headers(for: request) != nil)
        let refusals = [
            Result { () throws(HTTPError) in try RequestEncoding.encode(request, defaults: broken.sendingHeaders) },
            Result { () throws(HTTPError) in try RequestEncoding.encode(request) },
        ].map { result -> String? in
            guard case .failure(let error) = result else { return nil }
            return "\(error.code): \(error.message)"
        }
        #expect(refusals[0] != nil && refusals[0] == refusals[1], "\(refusals)")
    }

    // MARK: - Validate, decode, hook

    func processed(
        _ response: Response, _ configuration: CenterConfiguration
    ) async throws(HTTPError) -> Response {
        var request = response.request
        request.merge(with: configuration)
        let context = context(request, configuration)
        return try await pipeline.postProcess(response, request, context)
    }

    @Test func respondValidatesTheStatusThenDecodesThenRunsTheHook() async throws {
        let configuration = Self.configuration {
            $0.onResponse = { _, response in
                var response = response
                response.headers["X-Hooked"] = response.json?["name"]?.string
                return response
            }
        }
        let ok = Response(request: Request(), status: 200, data: Data(#"{"name":"Ada"}"#.utf8))
        let done = try await processed(ok, configuration)
        #expect(done.value == .json(["name": "Ada"]))
        #expect(done.headers["X-Hooked"] == "Ada")

        let missing = Response(request: Request(), status: 404, data: Data("gone".utf8))
        do {
            _ = try await processed(missing, configuration)
            Issue.record("a 404 passed")
        } catch {
            #expect(error.code == .unacceptableStatus && error.response?.data == Data("gone".utf8))
        }
    }

    /// The request's own codes, else the center's, else a `2xx`: the center's are not copied into the request (a
    /// center at its default is checked by range), and whichever applies is the only one asked.
    @Test func theStatusIsJudgedByTheRequestsCodesElseTheCenters() {
        func accepts(_ status: Int, own: Set<Int>?, center: Set<Int>?) -> Bool {
            var configuration = CenterConfiguration()
            if let center { configuration.acceptableStatusCodes = center }
            var request = Request()
            request.acceptableStatusCodes = own
            request.merge(with: configuration)
            #expect(request.acceptableStatusCodes == own, "the merge leaves the request's own codes as they are")
            return pipeline.acceptable(Response(request: request, status: status), for: request, configuration)
        }
        #expect(accepts(204, own: nil, center: nil) && !accepts(304, own: nil, center: nil))
        #expect(accepts(304, own: nil, center: Set(200...299).union([304])))
        #expect(!accepts(201, own: nil, center: [200]))
        #expect(accepts(404, own: [404], center: [200]) && !accepts(200, own: [404], center: [200]))
        #expect(!accepts(500, own: nil, center: Set(200...299)))
        var configuration = CenterConfiguration()
        #expect(configuration.acceptableStatusCodes == Set(200...299))
        configuration.acceptableStatusCodes.insert(304)
        #expect(configuration.acceptableStatusCodes == Set(200...299).union([304]))
        configuration.acceptableStatusCodes.remove(304)
        #expect(configuration.unusualAcceptableStatusCodes == nil)
    }

    @Test func respondTurnsAValidationFailureIntoABusinessError() async {
        struct Refused: Error {}
        var request = Request()
        request.validate = { response in
            if response.json?["code"]?.int != 0 { throw Refused() }
            return response
        }
        let response = Response(request: request, status: 200, data: Data(#"{"code":7}"#.utf8))
        do {
            _ = try await processed(response, Self.configuration())
            Issue.record("a failed validation passed")
        } catch {
            #expect(error.code == .business && error.underlying is Refused)
        }
    }

    // MARK: - Cache

    @Test func cacheServesAFreshEntryAndStoresWhatCameBack() throws {
        let cache = ResponseCache()
        let configuration = Self.configuration { $0.cache = cache }
        var request = Request {
            $0.api = "users"; $0.cachePolicy = .http
        }
        request.merge(with: configuration)
        request.url = try URLComposition.compose(request).text
        let engineRequest = try RequestEncoding.encode(request)
        let first = try #require(
            CacheStep(request: request, engineRequest: engineRequest, configuration: configuration))
        #expect(try first.beforeNetwork() == nil)
        let fromNetwork = Response(
            request: request, status: 200, headers: ["Cache-Control": "max-age=60"], data: Data("[1]".utf8))
        _ = first.afterNetwork(fromNetwork)

        let second = try #require(
            CacheStep(request: request, engineRequest: engineRequest, configuration: configuration))
        let cached = try #require(try second.beforeNetwork())
        #expect(cached.source == .cache && cached.data == Data("[1]".utf8))
        // `.networkOnly` does not use the cache at all.
        var plain = request
        plain.cachePolicy = .networkOnly
        #expect(CacheStep(request: plain, engineRequest: engineRequest, configuration: configuration) == nil)
    }

    // MARK: - Stub and deduplication

    @Test func stubAnswersAsTheEndpointDeclaredWithoutAnEngine() async throws {
        let configuration = Self.configuration()
        let (prepared, _) = try await prepared(Request { $0.api = "users/7" }, configuration)
        let context = context(prepared.request, configuration)
        let engineRequest = try pipeline.encode(prepared, context).engineRequest
        let reply = StubReply.json(["id": 7], status: 201)
        let response = try await pipeline.stubbed(reply, engineRequest, prepared.request, context)
        #expect(response.source == .stub && response.status == 201)
        #expect(response.url?.absoluteString == "https://api.example.com/v1/users/7?access_token=secret-AAA&app=demo")
        #expect(try JSON(data: response.data) == ["id": 7])

        struct Offline: Error {}
        do {
            _ = try await pipeline.stubbed(.failure(Offline()), engineRequest, prepared.request, context)
            Issue.record("a failing stub answered")
        } catch {
            #expect(error.underlying is Offline && error.request?.id == prepared.id)
        }
    }

    @Test func identicalExchangesInFlightShareOneEngineCall() async throws {
        let engine = StubEngine()
        engine.on(nil, "*", reply: StubReply.json(["n": 1]).delayed(by: .milliseconds(200)))
        let url = try #require(URL(string: "https://api.example.com/v1/feed"))
        let request = EngineRequest(url: url, headers: ["Accept": "application/json"])
        let key = try #require(InFlight.Key(request))
        let inFlight = pipeline.inFlight
        async let first = inFlight.perform(request, key: key, engine: engine, progress: { _ in })
        async let second = inFlight.perform(request, key: key, engine: engine, progress: { _ in })
        let (a, b) = try await (first, second)
        #expect(engine.requests.count == 1)
        #expect(a.body == b.body && a.status == 200)
        #expect(inFlight.count == 0)
        // A request that differs (another header) is its own exchange.
        var other = request
        other.headers["Accept"] = "text/plain"
        #expect(InFlight.Key(other) != key)
    }
}
