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
    var stub: StubReply? { .json(["name": "Sample"]).delayed(by: .milliseconds(10)) }
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

    /// Walks pages of at most `served` items (whatever the request asks) from a list of `listed` items whose
    /// responses give `total` as the total: the items read, and the requests made (at most 100).
    private func walk(
        _ pages: inout Paginator, total: Int, listed: Int? = nil, served: Int
    ) async throws -> (items: [Int], requests: Int) {
        let listed = listed ?? total
        let stub = StubEngine()
        stub.on(.get, "/v1/items") { request in
            let query = URLComponents(url: request.url!, resolvingAgainstBaseURL: false)?.queryItems ?? []
            let page = Int(query.first { $0.name == "page" }?.value ?? "") ?? 0
            let start = min(listed, (page - 1) * served)
            let items = (start..<min(listed, start + served)).map { JSON.number(JSON.Number($0)) }
            return .json(["total": .number(JSON.Number(total)), "items": .array(items)])
        }
        let (center, _) = stubCenter(stub)
        var seen: [Int] = []
        var requests = 0
        while pages.hasMore, requests < 100 {
            let response = try await center.send { request in
                request.api = "items"
                pages.apply(to: &request)
            }
            seen += (response.json?["items"]?.array ?? []).compactMap(\.int)
            pages.advance(after: response)
            requests += 1
        }
        return (seen, requests)
    }

    @Test func aServerThatCapsThePageSizeStillGivesEveryItem() async throws {
        // Asked for 100 a page, served 50: the walk counts what arrived, not what it asked for.
        var pages = Paginator(pageSize: 100)
        let (items, requests) = try await walk(&pages, total: 120, served: 50)
        #expect(items == Array(0..<120))
        #expect(requests == 3 && !pages.hasMore)
    }

    @Test func aPageWithoutItemsEndsTheWalkWhateverTheTotalSays() async throws {
        // The total says 120, the list has 30: the empty fourth page is the last (before, the walk asked for empty
        // pages up to the twelfth).
        var pages = Paginator(pageSize: 10)
        let stale = try await walk(&pages, total: 120, listed: 30, served: 10)
        #expect(stale.items == Array(0..<30))
        #expect(stale.requests == 4 && !pages.hasMore)
        // A page size of 0 never reaches a total by counting pages (before, the walk never ended): the items counted
        // do.
        var zero = Paginator(pageSize: 0)
        let walked = try await walk(&zero, total: 30, served: 10)
        #expect(walked.items == Array(0..<30))
        #expect(walked.requests == 3 && !zero.hasMore)
    }

    @Test func withoutListedItemsNothingLoopsOrTraps() {
        let page = Response(status: 200, data: Data(#"{"total":9223372036854775807}"#.utf8))
        // Half of Int.max and one: the first page is below the total, the second would overflow (it trapped).
        var huge = Paginator(pageSize: .max / 2 + 1, itemsPath: nil)
        huge.advance(after: page)
        #expect(huge.hasMore)
        huge.advance(after: page)
        #expect(!huge.hasMore, "the second page's product overflows: the walk ends")
        var zero = Paginator(pageSize: 0, itemsPath: nil)
        zero.advance(after: page)
        #expect(!zero.hasMore, "a page size of 0 cannot reach a total: one page")
    }

    @Test func theLastPageNumberThereIsEndsTheWalk() {
        // A full page with no total: another would follow, but there is no page after Int.max (`page + 1` trapped).
        var last = Paginator(firstPage: .max, pageSize: 2, totalPath: nil)
        last.advance(after: Response(status: 200, data: Data(#"{"items":[1,2]}"#.utf8)))
        #expect(!last.hasMore)
        #expect(last.page == .max)
    }

    @Test func withoutATotalAShortPageIsTheLast() {
        var pages = Paginator(pageSize: 2, totalPath: nil)
        pages.advance(after: Response(status: 200, data: Data(#"{"items":[1,2]}"#.utf8)))
        #expect(pages.hasMore)
        pages.advance(after: Response(status: 200, data: Data(#"{"items":[3]}"#.utf8)))
        #expect(!pages.hasMore)
    }
}
