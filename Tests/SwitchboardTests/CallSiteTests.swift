import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Switchboard
import Testing

// The call sites app code writes first, checked where apps write them. Like ReadmeSnippets.swift, this one file is
// compiled by every snippet target (Swift 6, a `@MainActor` host, default `MainActor` isolation, Swift 5 with and
// without strict concurrency), and it uses the public API only, as an app does.

/// A view model as an app writes it: `@MainActor`, with state that the configuration closures read.
@MainActor
final class CallSiteModel {
    let center: Center
    var userID = 7
    var pageSize = 2
    var user: User?
    var statuses: [Int] = []

    init(center: Center) {
        self.center = center
    }

    func loadEverything() async throws {
        user = try await center.send(User.self) { $0.api = "users/\(userID)" }
        let response = try await center.send {
            $0.api = "users/\(userID)"; $0.parameters = ["size": pageSize]
        }
        statuses.append(response.status)
        let members = try await center.batch { batch in
            batch.add { $0.api = "users/\(userID)" }
            batch.add { $0.api = "users/\(userID)" }
        }
        statuses += members.map(\.status)
        let steps = try await center.chain { chain in
            chain.first { $0.api = "users/\(userID)" }
            chain.next { request, previous in request.api = "users/\(previous.json?["id"]?.int ?? 0)" }
        }
        statuses += steps.map(\.status)
        let transfer = center.transfer { $0.api = "users/\(userID)" }
        statuses.append(try await transfer.response().status)
        for try await response in center.responses({ $0.api = "users/\(userID)" }) {
            statuses.append(response.status)
        }
        let endpoint = try await center.send(CallSiteUser(id: userID))
        statuses.append(endpoint.id)
        try await center.send(EmptyBody.self) {
            $0.api = "users/\(userID)"; $0.method = .delete
        }
        var pages = Paginator(pageSize: pageSize)
        let page = try await center.send { request in
            request.api = "users/\(userID)"
            pages.apply(to: &request)
        }
        pages.advance(after: page)
        statuses.append(page.status)
    }

    /// A JSON object read from a response, changed and iterated as the model's own value, and one made from a
    /// dictionary.
    func profileFieldNames() async throws -> [String] {
        let response = try await center.send { $0.api = "users/\(userID)" }
        var profile = response.json?.object ?? [:]
        profile["seen"] = true
        var names: [String] = []
        for (key, _) in profile { names.append(key) }
        let made = JSON.object(JSON.Object(["b": 2, "a": 1]))
        return names + (made.object?.keys ?? [])
    }

    /// A model of the app's own, made by its serializer, checked by its plugin, from a request and from an endpoint.
    func loadNameCards() async throws -> [String] {
        let response = try await center.send {
            $0.api = "users/\(userID)"
            $0.responseSerializer = .nameCard
            $0.plugins = [NameRequired()]
        }
        let card = try await center.send(CallSiteNameCard(id: userID))
        return [response.value(as: NameCard.self)?.name ?? "", card.name]
    }

    func firstEvent() async throws -> String? {
        for try await event in center.events({ $0.api = "events/\(userID)" }).events { return event.data }
        return nil
    }

    func listenWithCallbacks(received: @escaping @Sendable (String) -> Void) -> RequestID {
        center.events({ $0.api = "events/\(userID)" }, onEvent: { event in received(event.data) })
    }

    func sendFlaky(failed: @escaping @Sendable (Int) -> Void) -> RequestID {
        center.send {
            $0.api = "flaky/\(userID)"
        } onFailure: { error in
            failed(error.status ?? 0)
        }
    }

    func retryWithCompletion(_ id: RequestID, done: @escaping @Sendable (Int) -> Void) -> Center.RetryAnswer {
        center.retry(id) { outcome in done((try? outcome.get())?.response?.status ?? 0) }
    }

    /// The traffic controls, set from the model's own state: a decision on each redirect, the in-flight limit with a
    /// priority, parameters from a model of the app's, the form style, waiting for a network, and the network path
    /// read both ways.
    func sendShapingTheTraffic() async throws -> [String] {
        let most = pageSize
        center.setup { config in
            config.redirectPolicy = .deciding(max: most) { redirect in redirect.number <= most ? .follow : .stop }
            config.maxRequestsInFlight = pageSize
            config.formStyle = FormStyle(arrays: .repeatedKeys, booleans: .numbers)
            config.waitsForConnectivity = false
        }
        let response = try await center.send { request in
            request.api = "users/\(userID)"
            request.setParameters(CallSiteQuery(id: userID, tags: ["a", "b"]))
            request.parameterPlacement = .query
            request.priority = .high
            request.redirectPolicy = .never
            request.waitsForConnectivity = false
        }
        let observation = center.connectivity.observe { _ in }
        observation.cancel()
        var first: NetworkPath?
        for await path in center.connectivity.paths {
            first = path
            break
        }
        return [
            "\(response.status)", response.url?.query ?? "", "\(response.request.priority.value)",
            "\(first == center.connectivity.path)",
        ]
    }

    func sendWithCallbacks(done: @escaping @Sendable (Int) -> Void) -> RequestID {
        center.send {
            $0.api = "users/\(userID)"
        } onSuccess: { response in
            done(response.status)
        }
    }
}

/// An endpoint declared beside the model.
struct CallSiteUser: Endpoint {
    typealias Response = User
    var id: Int
    var path: String { "users/\(id)" }
}

/// A model built by hand, its serializer, a plugin that checks it, and an endpoint that returns it, as an app
/// declares them.
struct NameCard: Sendable {
    var name: String
}

extension ResponseSerializer {
    // `nonisolated`: in a target whose default isolation is the main actor, a static property is the main actor's,
    // and an endpoint's `configure` (nonisolated) could not read it.
    nonisolated static let nameCard = ResponseSerializer("nameCard", accept: "application/json") { response in
        .custom(NameCard(name: try JSON(data: response.data)["name"]?.string ?? ""))
    }
}

struct NameRequired: Plugin {
    func respond(_ response: Response, for original: Request) async throws -> Response {
        guard response.value(as: NameCard.self)?.name.isEmpty == false else { throw URLError(.badServerResponse) }
        return response
    }
}

struct CallSiteNameCard: Endpoint {
    typealias Response = NameCard
    var id: Int
    var path: String { "users/\(id)" }
    func configure(_ request: inout Request) { request.responseSerializer = .nameCard }
}

/// Parameters an app sends from a model of its own.
struct CallSiteQuery: Encodable {
    var id: Int
    var tags: [String]
}

/// A center answering every user path from a stub.
func callSiteCenter() -> Center {
    let stub = StubEngine()
    stub.on(.get, "/v1/users/*", reply: .json(["id": 7, "name": "Ada"]))
    stub.on(.delete, "/v1/users/*", reply: .status(204))
    stub.on(.get, "/v1/flaky/*", replies: [.status(503), .json(["id": 7])])
    stub.on(.get, "/v1/events/*", reply: .string("id: 1\ndata: hi\n\n", headers: ["Content-Type": "text/event-stream"]))
    return Center { config in
        config.engine = stub
        config.server = "https://api.example.com/v1/"
    }
}

/// A plain `nonisolated` async function.
nonisolated func sendFromAPlainAsyncFunction(_ center: Center, id: Int) async throws -> Int {
    let response = try await center.send { $0.api = "users/\(id)" }
    return response.status
}

@Suite struct CallSiteTests {
    @Test @MainActor func aMainActorModelSendsEveryAsyncFormReadingItsOwnState() async throws {
        let model = CallSiteModel(center: callSiteCenter())
        try await model.loadEverything()
        #expect(model.user?.name == "Ada")
        #expect(model.statuses == [200, 200, 200, 200, 200, 200, 200, 7, 200])
    }

    @Test @MainActor func aMainActorModelUsesItsOwnSerializerAndPlugin() async throws {
        let model = CallSiteModel(center: callSiteCenter())
        #expect(try await model.loadNameCards() == ["Ada", "Ada"])
    }

    @Test @MainActor func aMainActorModelReadsAndChangesAJSONObject() async throws {
        let model = CallSiteModel(center: callSiteCenter())
        #expect(try await model.profileFieldNames() == ["id", "name", "seen", "a", "b"])
    }

    @Test @MainActor func aMainActorModelListensToEventsBothWays() async throws {
        let model = CallSiteModel(center: callSiteCenter())
        #expect(try await model.firstEvent() == "hi")
        let (received, continuation) = AsyncStream<String>.makeStream()
        let id = model.listenWithCallbacks { continuation.yield($0) }
        var data: String?
        for await first in received {
            data = first
            break
        }
        model.center.cancel(id)
        #expect(data == "hi")
    }

    @Test @MainActor func aMainActorModelShapesItsTraffic() async throws {
        let model = CallSiteModel(center: callSiteCenter())
        #expect(try await model.sendShapingTheTraffic() == ["200", "id=7&tags=a&tags=b", "1", "true"])
    }

    @Test @MainActor func aMainActorModelSendsWithCallbacks() async {
        let model = CallSiteModel(center: callSiteCenter())
        let status = await withCheckedContinuation { (continuation: CheckedContinuation<Int, Never>) in
            _ = model.sendWithCallbacks { continuation.resume(returning: $0) }
        }
        #expect(status == 200)
    }

    @Test @MainActor func aMainActorModelRetriesWithACompletion() async {
        let model = CallSiteModel(center: callSiteCenter())
        var id: RequestID?
        let failed = await withCheckedContinuation { (continuation: CheckedContinuation<Int, Never>) in
            id = model.sendFlaky { continuation.resume(returning: $0) }
        }
        #expect(failed == 503)
        guard let id else { return }
        var answer: Center.RetryAnswer?
        let retried = await withCheckedContinuation { (continuation: CheckedContinuation<Int, Never>) in
            answer = model.retryWithCompletion(id) { continuation.resume(returning: $0) }
        }
        #expect(answer == .retrying)
        #expect(retried == 200)
    }

    @Test @MainActor func aMainActorModelBuildsAnEngineRequest() {
        let model = CallSiteModel(center: callSiteCenter())
        var request = EngineRequest(
            method: .post, url: URL(string: "https://api.example.com/v1/users/\(model.userID)")!,
            headers: ["Accept": "application/json"])
        request.headers["X-Page-Size"] = String(model.pageSize)
        request.timeout = .seconds(5)
        let made = request.urlRequest
        #expect(made.httpMethod == "POST")
        #expect(made.value(forHTTPHeaderField: "X-Page-Size") == "2")
        #expect(made.timeoutInterval == 5)
    }

    @Test @MainActor func anEngineOfTheAppsOwnDownloadsIntoAFile() async throws {
        let body = Data((0..<70_000).map { UInt8(truncatingIfNeeded: $0 &* 31) })
        let center = Center { config in
            config.engine = MemoryEngine(body: body)
            config.server = "https://files.example.com/"
        }
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("callsite-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let destination = folder.appendingPathComponent("blob.bin")
        let response = try await center.send { request in
            request.api = "blob.bin"
            request.kind = .download
            request.destination = .file(destination)
        }
        #expect(response.fileURL == destination)
        #expect(try Data(contentsOf: destination) == body)
        let inMemory = try await center.send {
            $0.api = "blob.bin"; $0.responseSerializer = .raw
        }
        #expect(inMemory.data == body)
    }

    @Test func aPlainAsyncFunctionSends() async throws {
        #expect(try await sendFromAPlainAsyncFunction(callSiteCenter(), id: 3) == 200)
    }

    @Test func theBareSendInAnAsyncContextIsTheAwaitedForm() async throws {
        let center = callSiteCenter()
        let response = try await center.send { $0.api = "users/1" }
        let typed: Response = response  // a `RequestID` here would not compile
        #expect(typed.json?["name"]?.string == "Ada")
    }
}
