import Foundation
import Testing
@testable import Switchboard
import SwitchboardTestSupport

/// An enum endpoint, one case per call (ACINetworking's style), against httpbin routes.
enum EchoAPI: Endpoint {
    case get(query: String)
    case post(name: String)

    typealias Response = JSON

    var path: String {
        switch self {
        case .get: "get"
        case .post: "post"
        }
    }

    var method: HTTPMethod {
        if case .post = self { .post } else { .get }
    }

    var parameters: [String: any Sendable] {
        switch self {
        case .get(let query): ["q": query]
        case .post(let name): ["name": name]
        }
    }

    var encoding: RequestSerializer { .json }
}

/// A struct endpoint with a typed response (SporeNetworking's style).
struct HeadersEndpoint: Endpoint {
    struct Response: Decodable, Sendable {
        var headers: [String: String]
    }

    var trace: String
    var path: String { "headers" }
    var headers: HTTPHeaders { ["X-Trace": trace] }
}

struct StubbedProfile: Endpoint {
    struct Response: Decodable, Sendable, Equatable {
        var name: String
    }

    var path: String { "profile/not-built-yet" }
    var stub: StubEngine.Reply? { .json(["name": "Sample"]).delayed(by: .milliseconds(10)) }
}

@Suite struct EndpointTests {
    func center() -> Center {
        Server.center()
    }

    @Test func anEnumEndpointDecodes() async throws {
        let echo = try await center().send(EchoAPI.get(query: "swift"))
        #expect(echo["args"]?["q"]?.string == "swift")
        let posted = try await center().send(EchoAPI.post(name: "Ada"))
        #expect(posted["json"]?["name"]?.string == "Ada")
    }

    @Test func aStructEndpointDecodesItsTypedResponse() async throws {
        let response = try await center().send(HeadersEndpoint(trace: "t-1"))
        #expect(response.headers["X-Trace"] == "t-1")
    }

    @Test func theCallbackFormDeliversTheTypedValue() async {
        let name = await withCheckedContinuation { (continuation: CheckedContinuation<String?, Never>) in
            center().send(HeadersEndpoint(trace: "t-2")) { value in
                continuation.resume(returning: value.headers["X-Trace"])
            } onFailure: { _ in
                continuation.resume(returning: nil)
            }
        }
        #expect(name == "t-2")
    }

    @Test func endpointsAsBatchAndChainMembers() async throws {
        let responses = try await center().batch { batch in
            batch.add(EchoAPI.get(query: "a"))
            batch.add(HeadersEndpoint(trace: "b"))
        }
        #expect(responses[0].json?["args"]?["q"]?.string == "a")
        let chained = try await center().chain { chain in
            chain.first(EchoAPI.get(query: "first"))
            chain.next { previous in EchoAPI.post(name: previous.json?["args"]?["q"]?.string ?? "") }
        }
        #expect(chained[1].json?["json"]?["name"]?.string == "first")
    }

    @Test func switchingANodeAtRunTimeChangesTheHost() async throws {
        let stub = StubEngine()
        stub.on(nil, "*", reply: .json(["ok": true]))
        struct Charge: Endpoint {
            typealias Response = JSON
            var path: String { "charges" }
            var node: Node { "payment" }
        }
        let center = testCenter { config in
            config.engine = stub
            config.server = "https://api.example.com/v1/"
            config.nodes["payment"] = "https://pay.example.com/v2/"
        }
        _ = try await center.send(Charge())
        center.setNode("payment", to: "https://pay.staging.example.com/v2/")
        _ = try await center.send(Charge())
        _ = try await center.send { $0.api = "me" }
        #expect(
            stub.requests.map { $0.url!.absoluteString } == [
                "https://pay.example.com/v2/charges", "https://pay.staging.example.com/v2/charges",
                "https://api.example.com/v1/me",
            ])
    }

    @Test func anEndpointCanRejectItsResponse() async {
        struct Strict: Endpoint {
            typealias Response = JSON
            var path: String { "json" }
            func validate(_ response: Switchboard.Response) throws -> Switchboard.Response {
                try response.validating(["slideshow": ["title": .string, "pages": .number]])
            }
        }
        let error = await #expect(throws: HTTPError.self) { _ = try await center().send(Strict()) }
        #expect(error?.code == .decoding)
        #expect(error?.message.contains("$.slideshow.pages is missing") == true)
    }

    @Test func stubbedEndpointsGoThroughTheHooksAndAreMarked() async throws {
        let stub = StubEngine()
        let hooked = Locked(0)
        let center = testCenter { config in
            config.engine = stub
            config.server = "https://api.example.com/"
            config.usesEndpointStubs = true
            config.onResponse = { _, response in
                hooked.withLock { $0 += 1 }; return response
            }
        }
        let transfer = center.transfer { $0 = StubbedProfile().request }
        let response = try await transfer.response()
        #expect(response.source == .stub)
        #expect(try response.decode(StubbedProfile.Response.self) == .init(name: "Sample"))
        #expect(try await center.send(StubbedProfile()) == .init(name: "Sample"))
        #expect(hooked.snapshot == 2)
        #expect(stub.requests.isEmpty)
        // With stubs off, the same endpoint goes to the network.
        center.setup { $0.usesEndpointStubs = false }
        _ = try? await center.send(StubbedProfile())
        #expect(stub.requests.count == 1)
    }
}

@Suite struct PaginatorTests {
    @Test func walksThreePages() async throws {
        let stub = StubEngine()
        stub.on(.get, "/v1/items") { request in
            let query = URLComponents(url: request.url!, resolvingAgainstBaseURL: false)?.queryItems ?? []
            let page = Int(query.first { $0.name == "page" }?.value ?? "") ?? 0
            let size = Int(query.first { $0.name == "per_page" }?.value ?? "") ?? 0
            let items = (0..<min(size, 50 - (page - 1) * size)).map { JSON.number(JSON.Number((page - 1) * size + $0)) }
            return .json(["total": 50, "items": .array(items)])
        }
        let (center, _) = stubCenter(stub)
        var pages = Paginator(pageSize: 20)
        var items: [JSON] = []
        var requests = 0
        while pages.hasMore {
            let response = try await center.send { request in
                request.api = "items"
                pages.apply(to: &request)
            }
            items += response.json?["items"]?.array ?? []
            pages.advance(after: response)
            requests += 1
        }
        #expect(requests == 3)
        #expect(items.count == 50)
        #expect(items.last == 49)
        #expect(pages.total == 50)
        #expect(pages.page == 4)
        pages.reset()
        #expect(pages.page == 1 && pages.hasMore)
    }

    @Test func withoutATotalAShortPageIsTheLast() {
        var pages = Paginator(pageSize: 2, totalPath: nil)
        pages.advance(after: Response(status: 200, data: Data(#"{"items":[1,2]}"#.utf8)))
        #expect(pages.hasMore)
        pages.advance(after: Response(status: 200, data: Data(#"{"items":[3]}"#.utf8)))
        #expect(!pages.hasMore)
    }
}
