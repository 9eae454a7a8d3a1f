import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
@testable import Switchboard
import SwitchboardTestSupport

/// `EngineResponse` keeps the head as Switchboard values; Foundation's `HTTPURLResponse` is made from them only when
/// asked for, and one an engine hands in is kept as it is until the head changes.
@Suite struct EngineResponseTests {
    private let url = URL(string: "https://api.example.com/v1/items")!

    @Test func theHeadIsKeptInItsOwnValuesAndOrder() {
        let headers: HTTPHeaders = ["X-B": "2", "Content-Type": "application/json", "X-A": "1"]
        let response = EngineResponse(
            status: 201, url: url, httpVersion: "HTTP/2", headers: headers, body: Data("{}".utf8))
        #expect(response.status == 201)
        #expect(response.url == url)
        #expect(response.httpVersion == "HTTP/2")
        #expect(response.headers?.map(\.name) == ["X-B", "Content-Type", "X-A"])
        #expect(response.value(forHTTPHeaderField: "content-type") == "application/json")
        #expect(response.value(forHTTPHeaderField: "X-Missing") == nil)
    }

    @Test func theFoundationResponseIsMadeFromTheValues() {
        let response = EngineResponse(
            status: 404, url: url, headers: ["Content-Type": "text/plain", "ETag": "\"v1\""], body: Data())
        let made = response.response
        #expect(made.statusCode == 404)
        #expect(made.url == url)
        #expect(made.value(forHTTPHeaderField: "ETag") == "\"v1\"")
        #expect(made.value(forHTTPHeaderField: "content-type") == "text/plain")
    }

    @Test func aFoundationResponseIsKeptUntilTheHeadChanges() throws {
        let source = try #require(
            HTTPURLResponse(
                url: url, statusCode: 200, httpVersion: "HTTP/1.1", headerFields: ["Location": "/next", "X-Id": "7"]))
        var response = EngineResponse(response: source, body: Data("ok".utf8))
        #expect(response.response === source, "the engine's own object comes back")
        #expect(response.status == 200)
        #expect(response.headers == ["Location": "/next", "X-Id": "7"])
        #expect(response.value(forHTTPHeaderField: "x-id") == "7")

        response.status = 302
        let changed = response.response
        #expect(changed !== source, "a changed head is not described by the old object")
        #expect(changed.statusCode == 302)
        #expect(changed.value(forHTTPHeaderField: "Location") == "/next", "the fields are carried over")
        #expect(response.headers == ["Location": "/next", "X-Id": "7"])
    }

    @Test func aResponseReadsAFoundationHeadOnceAndItsCopiesChangeApart() async throws {
        let source = try #require(
            HTTPURLResponse(
                url: url, statusCode: 200, httpVersion: "HTTP/1.1",
                headerFields: ["Content-Type": "application/json", "X-Id": "7"]))
        let original = Response(
            engine: EngineResponse(response: source, body: Data("{}".utf8)), request: Request(), duration: .zero)
        // Copies share the unread head; reads from many tasks at once all see the same fields.
        let reads = await withTaskGroup(of: HTTPHeaders.self) { group in
            for _ in 0..<16 { group.addTask { original.headers } }
            return await group.reduce(into: []) { $0.append($1) }
        }
        #expect(reads.count == 16)
        #expect(reads.allSatisfy { $0 == ["Content-Type": "application/json", "X-Id": "7"] })

        var changed = original
        changed.headers["X-Id"] = "8"
        changed.headers["X-New"] = "1"
        #expect(changed.headers["x-id"] == "8")
        #expect(changed.headers["X-New"] == "1")
        #expect(original.headers["X-Id"] == "7", "the copy changed alone")
        #expect(original.headers["X-New"] == nil)

        var unread = Response(
            engine: EngineResponse(response: source, body: Data()), request: Request(), duration: .zero)
        unread.headers["X-Id"] = nil
        #expect(unread.headers == ["Content-Type": "application/json"], "changed before any read")
    }

    @Test func settingTheFoundationResponseReplacesTheHead() throws {
        var response = EngineResponse(status: 500, url: nil, headers: ["X-Old": "1"], body: Data())
        let replacement = try #require(
            HTTPURLResponse(
                url: url, statusCode: 204, httpVersion: "HTTP/1.1", headerFields: ["X-New": "2"]))
        response.response = replacement
        #expect(response.status == 204)
        #expect(response.url == url)
        #expect(response.headers == ["X-New": "2"])
        #expect(response.value(forHTTPHeaderField: "X-Old") == nil)
    }

    @Test func theAnnouncedLengthIsReadStrictly() {
        func length(_ headers: HTTPHeaders) -> Int64? {
            SessionTransfer.expectedLength(EngineResponse(status: 200, url: nil, headers: headers, body: Data()))
        }
        #expect(length(["Content-Length": "1048576"]) == 1_048_576)
        #expect(length(["content-length": " \t42 "]) == 42, "blanks around the digits are allowed")
        #expect(length(["Content-Length": "4 2"]) == nil)
        #expect(length(["Content-Length": "+5"]) == nil)
        #expect(length(["Content-Length": "-1"]) == nil)
        #expect(length(["Content-Length": ""]) == nil)
        #expect(length(["Content-Length": "0"]) == nil, "nothing to reserve")
        #expect(length(["Content-Length": "99999999999999999999"]) == nil, "too large for Int64")
        #expect(length(["Content-Length": "10", "Content-Encoding": "gzip"]) == nil, "not the length that arrives")
        #expect(length([:]) == nil)
    }

    @Test func theCenterReadsTheHeadWithoutFoundation() async throws {
        let stub = StubEngine().on(
            .get, "/v1/items",
            reply: StubReply(status: 203, headers: ["X-Z": "z", "X-A": "a"], body: Data("[]".utf8)))
        let center = Center {
            $0.engine = stub; $0.server = "https://api.example.com/v1/"
        }
        let response = try await center.send { $0.api = "items" }
        #expect(response.status == 203)
        #expect(response.headers.map(\.name) == ["X-Z", "X-A"], "the order the engine gave is kept")
    }

    /// The head as the server sent it, on both engines: the status, the fields in arrival order, a repeated field's
    /// values joined with `, ` in order under the first spelling, and names found whatever their case.
    @Test(arguments: bothEngines)
    func aRepeatedFieldArrivesJoinedInOrder(engineName: String) async throws {
        let engine = try namedEngine(engineName)
        let center = Center {
            $0.engine = engine
            $0.server = LoopbackServer.shared.baseURL + "/"
        }
        let response = try await center.send {
            $0.api = "response-headers?X-Repeat=first&X-Repeat=second&X-Repeat=third&X-Single=one"
            $0.responseSerializer = .raw
        }
        #expect(response.status == 200)
        #expect(response.headers["x-repeat"] == "first, second, third", "\(engineName)")
        #expect(response.headers["X-SINGLE"] == "one", "\(engineName)")
        #expect(response.headers.filter { $0.name.lowercased() == "x-repeat" }.count == 1, "\(engineName)")
    }
}
