// swift-format-ignore-file
// (This file keeps the layout of the documentation's examples it grew from.)
import Foundation
import Switchboard

// Call sites of every part of the public API, as the guides show them, inside `async` functions, so that the compiler
// checks them where the guides' own blocks are not compiled: Swift 5 mode, with and without strict concurrency
// checking, and a `@MainActor` host. (`.ci/snippets` compiles the README's and the guides' blocks themselves, as
// shown, in a Swift 6 target and a default-`MainActor` target.)
//
// This one file is compiled by several test targets (the others hold a link to it), each declaring `ReadmeSnippets`
// in its own way: a plain enum in Swift 6 mode, a `@MainActor` class, an enum in a target whose default isolation is
// `MainActor`, and an enum in Swift 5 mode with and without strict concurrency checking. So every snippet must compile,
// unchanged, in each of those places.

/// The app's model type. `nonisolated`: in a target whose default isolation is `MainActor`, a type's `Codable`
/// conformance is otherwise main-actor isolated, and endpoints and callbacks decode it off the main actor.
nonisolated struct User: Codable, Sendable {
    let id: Int
    let name: String
}

/// Stands in for an app's session in the configuration example.
actor AppSession {
    private(set) var loggedOut = false
    func logOut() { loggedOut = true }
}

let session = AppSession()

enum AccountAPI: Endpoint {
    case login(user: String, password: String)
    case profile(id: Int)

    typealias Response = JSON
    var path: String {
        switch self {
        case .login: "login"
        case .profile(let id): "users/\(id)"
        }
    }
    var method: HTTPMethod {
        if case .login = self { .post } else { .get }
    }
    var parameters: [String: any Sendable] {
        if case .login(let user, let password) = self { ["user": user, "password": password] } else { [:] }
    }
}

struct GetUser: Endpoint {
    typealias Response = User
    var id: Int
    var path: String { "users/\(id)" }
    var cachePolicy: CachePolicy { .cacheElseNetwork(maxAge: .seconds(300)) }
    var stub: StubReply? { .json(["id": 1, "name": "Sample"]) }   // while the back end is not ready
}

extension Node {
    static let payment: Node = "payment"
}

/// An engine of the app's own, as an app writes one: it answers from memory, and writes a download's body into its
/// file through `fileSink(for:)`, as the built-in engines do. `CallSiteTests` downloads through it.
struct MemoryEngine: Engine {
    let body: Data

    func perform(
        _ request: EngineRequest, progress: @escaping @Sendable (TransferProgress) -> Void
    ) async throws -> EngineResponse {
        var response = EngineResponse(
            status: 200, url: request.url, headers: ["Content-Length": String(body.count)], body: Data())
        if let sink = try request.fileSink(for: response) {      // a download: into its file
            do {
                try sink.write(body)
                response.fileLength = try sink.close()
            } catch {
                sink.abandon()
                throw error
            }
        } else {
            response.body = body
        }
        return response
    }
}

/// A plugin as an app writes one.
struct TraceHeader: Plugin {
    func prepare(_ request: inout Request) async throws {
        request.headers["X-Trace"] = UUID().uuidString
    }

    func didReceive(_ result: Result<Response, HTTPError>, for original: Request) async {
        if case .failure(let error) = result { print("trace failed:", error.code) }
    }
}

/// An observer as an app writes one.
struct Timeline: RequestObserver {
    func observe(_ event: RequestEvent) async {
        switch event.kind {
        case .redirected(let status, _, let to): print(event.id, "redirected:", status, to?.path ?? "")
        case .retried(let attempt, let error, let delay): print(event.id, "attempt", attempt, error.code, "again in", delay)
        case .finished(let result): print(event.id, "finished:", (try? result.get().status) ?? 0)
        default: break
        }
    }
}

extension ReadmeSnippets {
    static func plugins() async throws {
        let paymentKey = Data("secret".utf8)
        let activity = ActivityPlugin { count in print("requests under way:", count) }
        Center.shared.setup { config in
            config.plugins = [TraceHeader(), activity, CURLLogPlugin()]
            config.nodePlugins[.payment] = [SigningPlugin(key: paymentKey, keyID: "app-1")]
        }
        let charges = try await Center.shared.send { request in
            request.node = .payment
            request.api = "charges"
            request.plugins.append(TraceHeader())     // this request alone
        }
        print(charges.status)
        Center.shared.setup { $0.plugins.append(Timeline()) }
    }

    static func endpoints() async throws {
        let user = try await Center.shared.send(GetUser(id: 7))          // a User
        let profile = try await Center.shared.send(AccountAPI.profile(id: 7))
        Center.shared.send(AccountAPI.login(user: "ada", password: "secret")) { json in
            print(json["token"]?.string ?? "no token")  // onSuccess: the decoded response
        } onFailure: { error in
            print(error)
        }
        let both = try await Center.shared.batch { batch in
            batch.add(GetUser(id: 1))
            batch.add(AccountAPI.profile(id: 1))
        }
        print(user.name, profile, both.count)
    }

    static func environments() async throws {
        Center.shared.setup { config in
            config.server = "https://api.example.com/v1/"                // the default node
            config.nodes[.payment] = "https://pay.example.com/"
        }
        Center.shared.setNode(.payment, to: "https://pay.staging.example.com/")   // switch at run time
        let charges = try await Center.shared.send { $0.node = .payment; $0.api = "charges" }   // or `var node: Node`
        print(charges.status)
    }

    static func pagination() async throws {
        var pages = Paginator(pageSize: 20)                 // `page` and `per_page`; the total read at "total"
        var items: [JSON] = []
        while pages.hasMore {
            let response = try await Center.shared.send { request in
                request.api = "items"
                pages.apply(to: &request)
            }
            items += response.json?["items"]?.array ?? []
            pages.advance(after: response)
        }
    }

    static func caching() async throws {
        let cache = ResponseCache(directory: URL(fileURLWithPath: "/path/to/Caches/api"), diskCapacity: 50 << 20)
        cache.version = "1.2"                               // an app update misses every older entry
        Center.shared.setup { $0.cache = cache }
        cache.userKey = "user-42"                           // on login; another user (or none) never sees these entries

        let articles = try await Center.shared.send { request in
            request.api = "articles"
            request.cachePolicy = .http                     // fresh by the response's max-age or Expires, else revalidated
        }
        print(articles.source)                              // .network, then .cache while fresh

        Center.shared.send { request in
            request.api = "feed"
            request.cachePolicy = .cacheThenNetwork         // onSuccess twice: cached first, then fresh
        } onSuccess: { response in
            print(response.source)                          // .cache, then .network
        }
        for try await response in Center.shared.responses({ $0.api = "feed"; $0.cachePolicy = .cacheThenNetwork }) {
            print(response.source, response.status)
        }
        cache.invalidate(prefix: "GET https://api.example.com/v1/feed")
    }

    static func authentication() async throws {
        nonisolated struct Token: Codable, Sendable {      // decoded off the main actor, in `refresh`
            var access: String
            var refresh: String
            var expires: Date
        }
        let savedToken: Token? = nil                                // e.g. read from the keychain at start-up

        let authenticator = Authenticator(credential: savedToken) { token, request in
            request.headers["Authorization"] = "Bearer \(token.access)"
        } refresh: { token, center in
            let response = try await center.send { request in      // skips the authenticator on its own
                request.api = "oauth/token"
                request.method = .post
                request.parameters = ["refresh_token": token?.refresh ?? ""]
            }
            return try response.decode(Token.self)
        } needsRefresh: { token in
            token.expires < Date().addingTimeInterval(60)           // refresh a minute before expiry
        }
        Center.shared.setup { $0.authenticator = authenticator }
        authenticator.setCredential(Optional<Token>.none)          // after a logout; a login sets the new token
    }

    static func deduplication() async throws {
        Center.shared.setup { $0.deduplicatesGETs = true }        // identical GETs and HEADs in flight share one transfer
        try await Center.shared.send { $0.api = "search"; $0.method = .post; $0.deduplicate = true }   // or per request
    }

    static func envelopes() async throws {
        Center.shared.setup { config in
            config.onResponse = { request, response in
                try response.unwrapping(code: "code", ok: 0, message: "message", data: "data")
            }
        }
        // {"code": 0, "data": {"id": 1, "name": "Ada"}}  -> decode(User.self) reads {"id": 1, "name": "Ada"}
        // {"code": 4001, "message": "insufficient balance"} -> HTTPError .business, serverCode 4001

        Center.shared.send { $0.api = "users/1" } onSuccess: { response in
            try response.validating(["id": .number, "name": .string, "tags": .array(.string), "bio": .optional(.string)])
        }
    }

    static func quickStart() async throws {
        struct User: Codable, Sendable {
            let id: Int
            let name: String
        }

        Center.shared.setup { config in
            config.server = "https://api.example.com/v1/"
            config.headers["X-Client"] = "ios"
        }

        let user = try await Center.shared.send(User.self) { $0.api = "users/1" }
        print(user.name)
    }

    static func configure() async throws {
        Center.shared.setup { config in
            config.server = "https://api.example.com/v1/"
            config.headers["X-Client"] = "ios"
            config.parameters["app_version"] = "1.2"
            config.callbackQueue = .main          // nil (the default): a private queue
            config.consoleLog = true              // banners for requests, responses and errors, secrets redacted
            config.timeout = .seconds(30)         // idle timeout; config.totalTimeout limits the whole exchange
            config.onRequest = { request in       // every request, wherever it goes; tokens: see Authentication
                request.headers["X-Request-ID"] = UUID().uuidString
            }
            config.onResponse = { request, response in
                guard response.json?["code"]?.int == 0 else {
                    throw HTTPError(.business, response.json?["message"]?.string ?? "rejected", response: response)
                }
                return response
            }
            config.onError = { request, error in
                if error.status == 401 { await session.logOut() }
                return error
            }
        }
        Center.shared.setHeader("abc", for: "X-Session")    // nil removes it
        Center.shared.setParameter(nil, for: "app_version")
    }

    static func payments() async throws {
        let payments = Center { config in
            config.server = "https://pay.example.com/"
            config.engine = URLSessionEngine(configuration: .ephemeral)
        }
        _ = payments
    }

    static func callbacks() async throws -> RequestID {
        let id = Center.shared.send { request in
            request.api = "users"
            request.method = .post
            request.parameters = ["name": "Ada"]
            request.requestSerializer = .json
        } onSuccess: { response in
            let user = try response.decode(User.self)      // a throw here is reported to onFailure
            print("created", user.id)
        } onFailure: { error in
            print(error)      // HTTPError.unacceptableStatus (422) POST https://api.example.com/v1/users: ...
        } onFinished: { result in
            // after onSuccess or onFailure, exactly once
        }
        return id
    }

    static func async() async throws {
        let user = try await Center.shared.send(User.self) { $0.api = "users/1" }
        let page = try await Center.shared.send { request in
            request.url = "https://example.com/index.html"
            request.responseSerializer = .string
        }
        print(user.name, page.string ?? "")
    }

    static func requestOptions() async throws {
        let response = try await Center.shared.send { request in
            request.api = "search"                        // or request.url = "https://..." (wins over server + api)
            request.method = .get                         // GET by default; any token: "PROPFIND"
            request.parameters = ["q": "swift", "page": 2] // query for GET/HEAD/DELETE, body otherwise
            request.headers["Accept-Language"] = "fr"     // case-insensitive names
            request.useGeneralParameters = false          // also useGeneralServer, useGeneralHeaders
            request.responseSerializer = .json            // .raw, .json, .plist, .xml, .string
            request.timeout = .seconds(5)
            request.acceptableStatusCodes = Set(200...299).union([304])
            request.userInfo["retryable"] = true          // for your hooks
        }
        print(response.json ?? "empty")
    }

    static func bodies() async throws {
        let created = try await Center.shared.send { request in
            request.api = "users"
            request.method = .post
            request.body = .json(User(id: 0, name: "Ada"))   // the body; parameters go in the query
        }
        print(created.status)
    }

    static func groups() async throws {
        let batchID = Center.shared.sendBatch { batch in
            batch.policy = .failFast       // .waitAll (the default) waits for every member
            batch.maxConcurrent = 4        // nil (the default): all at once
            batch.add { $0.api = "profile" }
            batch.add { $0.api = "settings" }
            batch.add { $0.api = "notifications"; $0.parameters = ["unread": true] }
        } onSuccess: { responses in
            print(responses.map(\.status))  // every member succeeded, in member order
        } onFailure: { results in
            for case .failure(let error) in results { print(error.code) }
        } onFinished: { results in
            // [Result<Response, HTTPError>], in member order, after onSuccess or onFailure
        } onProgress: { progress in
            print(progress.completed)      // bytes, summed over the members
        }

        let responses = try await Center.shared.batch { batch in
            batch.add { $0.api = "a" }
            batch.add { $0.api = "b" }
        }

        let chainID = Center.shared.sendChain { chain in
            chain.first { $0.api = "login"; $0.method = .post; $0.parameters = ["user": "ada"] }
            chain.next { request, previous in
                request.api = "profile/" + (previous.json?["id"]?.string ?? "")
            }
            chain.next { request, previous, all in          // all: every earlier response, in step order
                guard let avatar = previous.json?["avatar"]?.string else { throw HTTPError(.notSent, "no avatar") }
                request.url = avatar
                request.responseSerializer = .raw
            }
        } onSuccess: { responses in
            print(responses.count)
        } onFailure: { results in
            print(results.map { (try? $0.get()) != nil })
        }
        try await cancelAndRetry(id: batchID, batchID: batchID, chainID: chainID)
        _ = responses
    }

    static func cancelAndRetry(id: RequestID, batchID: RequestID, chainID: RequestID) async throws {
        Center.shared.cancel(id) { cancelled in
            print("cancelled:", cancelled.map { "\($0.id)" } ?? "nothing was running")
        }
        Center.shared.cancel(batchID)          // cancels the running members, starts no other
        Center.shared.cancel(tag: "feed")      // every request and group whose tag is "feed"

        let retried = try await Center.shared.retry(chainID)   // re-runs what failed or never ran, keeps what succeeded
        print(retried.responses.count)                          // the chain's own callbacks fired once, before

        let task = Task { try await Center.shared.send { $0.api = "reports/slow" } }
        task.cancel()   // the transfer stops; the call throws HTTPError with code .cancelled
    }

    static func engines() async throws {
        let engine = try CurlEngine()
        Center.shared.setup { config in
            config.engine = engine
            config.trustPolicies["api.example.com"] = TrustPolicy(
                roots: .adding(URL(fileURLWithPath: "/etc/myapp/ca.pem")),              // trust a private CA too
                publicKeyPins: ["sha256//r8udi/Mxd6pLOS73Hy6QZ/TY6hNHXz6ydyD2nRGc2VQ="])
            config.trustPolicies["*.internal.example.com"] = TrustPolicy(
                roots: .replacing(URL(fileURLWithPath: "/etc/myapp/internal-ca.pem")),  // only this CA
                certificatePins: ["sha256//YLh1dUR9y6Kja30RrAn7JKnbQG/uEtLMkBgFF2Fuihg="],
                clientIdentity: .pkcs12(URL(fileURLWithPath: "/etc/myapp/client.p12"), password: "secret"))
            config.trustPolicies["dev.local"] = .evaluationDisabled                     // a named host only
        }
    }

    static func upload() async throws {
        let photo = URL(fileURLWithPath: "/path/to/photo.jpg")
        Center.shared.send { request in
            request.kind = .upload                         // POST unless you choose another method
            request.api = "albums/7/photos"
            request.parameters = ["caption": "Sunset"]      // sent as text fields
            request.addFormData(name: "photo", fileURL: photo)                        // streamed from disk
            request.addFormData(name: "meta", data: Data("{}".utf8), fileName: "meta.json")
        } onSuccess: { response in
            print(response.status)
        } onProgress: { progress in
            print(progress.fraction ?? 0)                   // bytes sent of a known total
        }

        try await Center.shared.send { request in           // a raw body from a file, any method: a presigned PUT
            request.kind = .upload
            request.url = "https://bucket.example.com/object?signature=abc"
            request.useGeneralParameters = false            // another service's signed URL: none of the center's
            request.useGeneralHeaders = false               // query items, headers or credential
            request.usesAuthenticator = false
            request.method = .put
            request.body = .file(photo, contentType: "image/jpeg")
        }

        let log = URL(fileURLWithPath: "/var/log/app.log")
        try await Center.shared.send { request in           // a stream, opened afresh for every attempt and redirect
            request.api = "logs"
            request.method = .post
            request.body = .stream(contentType: "text/plain") { InputStream(url: log)! }
        }
    }

    static func download() async throws {
        let downloads = URL(fileURLWithPath: "/path/to/Downloads")
        let transfer = Center.shared.transfer { request in
            request.kind = .download
            request.url = "https://example.com/files/big.iso"
            request.destination = .directory(downloads)     // or .file(url)
            request.resumable = true                        // keep the partial file on failure, continue next time
            request.checksum = .sha256("9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08")
        }
        for await progress in transfer.progress {           // at most about 60 reports a second
            print(progress.completed, progress.expected ?? -1)
        }
        let file = try await transfer.response().fileURL
        print(file?.path ?? "")
    }

    static func speedLimits() async throws {
        let limited = try await Center.shared.send { request in
            request.kind = .download
            request.url = "https://example.com/files/big.iso"
            request.destination = .file(URL(fileURLWithPath: "/tmp/big.iso"))
            request.maxBytesPerSecond = 512 * 1024          // and maxUploadBytesPerSecond for what is sent
        }
        print(limited.fileURL?.path ?? "")
    }

    static func streams() async throws {
        let stream = try await Center.shared.stream { $0.api = "notifications" }
        print(stream.status, stream.headers["Content-Type"] ?? "")
        for try await event in stream.events {              // or: stream.lines, stream.jsonLines(User.self), stream itself
            print(event.id, event.type, event.data)
        }
    }

    static func metrics() async throws {
        let response = try await Center.shared.send { $0.api = "users" }
        if let metrics = response.metrics {
            print(metrics.total, metrics.timeToFirstByte ?? .zero, metrics.reusedConnection ?? false, metrics.httpVersion ?? "")
        }
    }

    static func eventSource() async throws {
        let source = Center.shared.events { $0.api = "notifications" }
        for try await update in source {
            switch update {
            case .open(let status, _): print("connected:", status)
            case .event(let event): print(event.id, event.data)
            case .reconnecting(let next): print("reconnecting in", next.delay, "after event", next.lastEventID)
            }
        }
        // Or with callbacks: Center.shared.events({ $0.api = "notifications" }, onEvent: { print($0.data) })
    }

    static func retryPolicy() async throws {
        Center.shared.setup { config in
            config.retryPolicy = .default                   // 3 attempts; .never is the default
        }
        try await Center.shared.send { request in
            request.api = "orders"
            request.method = .post
            request.retry = RetryPolicy(maxAttempts: 4, initialDelay: .seconds(1), methods: [.post])
        }
        try await Center.shared.send { $0.api = "feed"; $0.retryCount = 2 }   // XMNetworking's shorthand: 3 attempts
        try await Center.shared.send { request in
            request.api = "orders"
            request.method = .post
            request.retry = .xmNetworking(retryCount: 2)   // any failure, twice more, 2 s apart
        }
        Center.shared.setup { config in
            config.retryPolicy = RetryPolicy(idempotencyKey: "Idempotency-Key")
        }
        try await Center.shared.send { request in
            request.api = "payments"
            request.method = .post                        // Idempotency-Key: <UUID>, on each of up to 3 attempts
            request.parameters = ["amount": 100]
        }
    }

    static func errors() async throws {
        do {
            _ = try await Center.shared.send { $0.api = "users/9" }
        } catch {
            switch error.code {
            case .unacceptableStatus: print(error.status ?? 0, error.response?.string ?? "")
            case .timedOut, .cannotConnect: print("offline?")
            case .cancelled: break
            default: print(error)
            }
        }
    }

    static func stubs() async throws {
        let stub = StubEngine()
        stub.on(.get, "/v1/users/1", reply: .json(["id": 1, "name": "Ada"]))
        stub.on(.post, "/v1/orders", replies: [.status(503), .status(201)])   // one per call, the last repeats
        stub.on(.get, "/v1/slow", reply: .status(200).delayed(by: .seconds(2)))
        stub.on(nil, "/v1/offline/*", reply: .failure(URLError(.notConnectedToInternet)))

        let center = Center { config in
            config.engine = stub
            config.server = "https://api.example.com/v1/"
        }
        let user = try await center.send(User.self) { $0.api = "users/1" }
        assert(user.name == "Ada")
        assert(stub.requests.count == 1)
    }

    static func nestedParameters() async throws {
        let results = try await Center.shared.send { request in
            request.api = "search"
            request.method = .post
            request.requestSerializer = .json
            request.parameters = [
                "query": "swift",
                "filter": ["tags": ["linux", "ios"], "limit": 3, "open": true] as JSON,   // mixed values: JSON
            ]
        }
        print(results.status)
    }

    static func emptyBodies() async throws {
        try await Center.shared.send(EmptyBody.self) { $0.api = "users/7"; $0.method = .delete }   // a 204
        let head = try await Center.shared.send { $0.api = "files/big.iso"; $0.method = .head }
        print(head.headers["Content-Length"] ?? "unknown")
    }

    static func ownersAndTags() async throws {
        final class FeedScreen {
            func appear() {
                Center.shared.send { request in
                    request.api = "feed"
                    request.owner = self                    // the screen is deallocated: the request is cancelled
                    request.tag = "feed"                    // Center.shared.cancel(tag: "feed") cancels it too
                    request.callbackQueue = .main           // this request's callbacks, whatever the center's queue
                } onSuccess: { response in
                    print(response.status)
                }
            }
        }
        FeedScreen().appear()
    }
}

// MARK: - From SwiftUI and @MainActor code

@MainActor
final class ProfileModel {                          // an @Observable or ObservableObject in a SwiftUI app
    var userID = 7
    var user: User?
    var posts: [JSON] = []
    var failure: String?

    func load() async {
        do {
            user = try await Center.shared.send(User.self) { $0.api = "users/\(userID)" }
            let page = try await Center.shared.send { request in
                request.api = "users/\(userID)/posts"
                request.parameters = ["page": 1]
            }
            posts = page.json?["items"]?.array ?? []
        } catch {
            failure = error.message                 // HTTPError: the async API throws nothing else
        }
    }
}
