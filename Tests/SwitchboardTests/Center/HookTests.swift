import Foundation
import Testing
@testable import Switchboard

/// The three hooks: their order, what each may change, vetoes, replacements and error mapping.
@Suite struct HookTests {
    @Test func hooksRunInOrderAroundTheTransfer() async throws {
        let log = EventLog()
        let stub = StubEngine()
        stub.on(nil, "*") { request in
            log.record("engine \(request.url!.path)")
            return .json(["ok": true])
        }
        let (center, _) = stubCenter(stub) { config in
            config.onRequest = { request in log.record("onRequest \(request.url ?? "")") }
            config.onResponse = { _, response in
                log.record("onResponse \(response.status)"); return response
            }
            config.onError = { _, error in
                log.record("onError"); return error
            }
        }
        let outcome = await center.sendRecording { $0.api = "users" }
        #expect(
            log.all == [
                "onRequest https://api.example.com/v1/users", "engine /v1/users", "onResponse 200",
            ])
        #expect(outcome.events == ["success", "finished"])
    }

    @Test func onRequestCanChangeAnythingIncludingTheURL() async throws {
        let stub = StubEngine()
        stub.on(nil, "*") { echoReply($0) }
        let (center, _) = stubCenter(stub) { config in
            config.onRequest = { request in
                request.headers["Authorization"] = "Bearer fresh"
                request.url = "https://other.example/v9/" + (request.api ?? "")
                request.method = .put
                request.parameters["signed"] = true
            }
        }
        let response = try await center.send {
            $0.api = "users"; $0.method = .get
        }
        let sent = try #require(stub.requests.first)
        #expect(sent.url?.absoluteString == "https://other.example/v9/users")
        #expect(sent.method == .put)
        #expect(sent.urlRequest.value(forHTTPHeaderField: "Authorization") == "Bearer fresh")
        #expect(response.json?["body"]?.string == "signed=true")
    }

    /// A hook that changes `api`, `node` or `server` sends the request where they now point (the URL composed before
    /// the hook used to win, so such changes had no effect). A URL the caller set still wins over `api`.
    @Test func onRequestCanChangeAPINodeAndServer() async throws {
        let stub = StubEngine()
        stub.on(nil, "*") { echoReply($0) }
        let (center, _) = stubCenter(stub) { config in
            config.nodes["payments"] = "https://pay.example.com/v2/"
            config.onRequest = { request in
                switch request.userInfo["change"] as? String {
                case "api": request.api = "accounts/" + (request.api ?? "")
                case "node": request.node = "payments"
                case "node and api": request.node = "payments"; request.api = "charges"
                case "server": request.server = "https://mirror.example.org/"
                case "back to default": request.node = .default
                default: break
                }
            }
        }
        let cases: [(String, Node?, String?, String)] = [
            ("api", nil, nil, "https://api.example.com/v1/accounts/users"),
            ("node", nil, nil, "https://pay.example.com/v2/users"),
            ("node and api", nil, nil, "https://pay.example.com/v2/charges"),
            ("server", nil, nil, "https://mirror.example.org/users"),
            ("back to default", "payments", nil, "https://api.example.com/v1/users"),
            ("api", nil, "https://fixed.example.com/x", "https://fixed.example.com/x"),
        ]
        for (change, node, url, expected) in cases {
            _ = try await center.send { request in
                request.api = "users"
                request.node = node
                request.url = url
                request.userInfo["change"] = change
            }
            #expect(stub.requests.last?.url?.absoluteString == expected, "\(change)")
        }
    }

    @Test func onRequestRunsForEveryRequestAndCanReadUserInfo() async throws {
        let stub = StubEngine()
        stub.on(nil, "*") { echoReply($0) }
        let (center, _) = stubCenter(stub) { config in
            config.onRequest = { request in
                if let version = request.userInfo["version"] as? String { request.headers["X-API-Version"] = version }
            }
        }
        _ = try await center.send {
            $0.api = "a"; $0.userInfo["version"] = "3"
        }
        _ = try await center.send { $0.api = "b" }
        #expect(stub.requests.map { $0.urlRequest.value(forHTTPHeaderField: "X-API-Version") } == ["3", nil])
    }

    @Test func onRequestVetoStopsTheRequestBeforeTheEngine() async {
        struct NotLoggedIn: Error {}
        let (center, stub) = stubCenter { $0.onRequest = { _ in throw NotLoggedIn() } }
        let outcome = await center.sendRecording { $0.api = "users" }
        #expect(outcome.error?.code == .vetoed)
        #expect(outcome.error?.underlying is NotLoggedIn)
        #expect(outcome.events == ["failure:vetoed", "finished"])
        #expect(stub.requests.isEmpty)
    }

    @Test func onRequestMayThrowItsOwnHTTPError() async {
        let (center, _) = stubCenter {
            $0.onRequest = { _ in throw HTTPError(.business, "maintenance window") }
        }
        let outcome = await center.sendRecording { $0.api = "users" }
        #expect(outcome.error?.code == .business)
        #expect(outcome.error?.message == "maintenance window")
        #expect(outcome.error?.request?.url == "https://api.example.com/v1/users")
    }

    @Test func onResponseCanReplaceTheResponse() async throws {
        let stub = StubEngine()
        stub.on(nil, "*", reply: .json(["code": 0, "data": ["name": "Ada"]]))
        let (center, _) = stubCenter(stub) { config in
            config.onResponse = { _, response in
                var unwrapped = response
                let payload = response.json?["data"] ?? .null
                unwrapped.data = Data(payload.description.utf8)
                unwrapped.value = .json(payload)
                return unwrapped
            }
        }
        struct User: Decodable { var name: String }
        let user = try await center.send(User.self) { $0.api = "me" }
        #expect(user.name == "Ada")
    }

    @Test func onResponseThrowTakesTheFailurePathAndOnErrorSeesIt() async {
        struct BusinessFailure: Error { var code: Int }
        let stub = StubEngine()
        stub.on(nil, "*", reply: .json(["code": 42, "message": "no credit"]))
        let mapped = Locked<[HTTPError.Code]>([])
        let (center, _) = stubCenter(stub) { config in
            config.onResponse = { _, response in
                if let code = response.json?["code"]?.int, code != 0 { throw BusinessFailure(code: code) }
                return response
            }
            config.onError = { _, error in
                mapped.withLock { $0.append(error.code) }
                var copy = error
                copy.message = "mapped: " + error.message
                return copy
            }
        }
        let outcome = await center.sendRecording { $0.api = "pay" }
        #expect(outcome.error?.code == .business)
        #expect((outcome.error?.underlying as? BusinessFailure)?.code == 42)
        #expect(outcome.error?.response?.json?["message"]?.string == "no credit")
        #expect(outcome.error?.message.hasPrefix("mapped: ") == true)
        #expect(mapped.snapshot == [.business])
        #expect(outcome.events == ["failure:business", "finished"])
    }

    @Test func onErrorMapsTheFinalErrorOnceAndCanChangeIt() async {
        let stub = StubEngine()
        stub.on(nil, "*", reply: .status(503))
        let calls = Locked(0)
        let (center, _) = stubCenter(stub) { config in
            config.onError = { _, error in
                calls.withLock { $0 += 1 }
                return HTTPError(.business, "try later", request: error.request, response: error.response)
            }
        }
        let outcome = await center.sendRecording { $0.api = "x" }
        #expect(outcome.error?.code == .business)
        #expect(outcome.error?.status == 503)
        #expect(calls.snapshot == 1)
    }

    @Test func onResponseDoesNotRunForUnacceptableStatus() async {
        let stub = StubEngine()
        stub.on(nil, "*", reply: .status(404))
        let ran = Locked(false)
        let (center, _) = stubCenter(stub) { config in
            config.onResponse = { _, response in
                ran.withLock { $0 = true }; return response
            }
        }
        let outcome = await center.sendRecording { $0.api = "x" }
        #expect(outcome.error?.code == .unacceptableStatus)
        #expect(ran.snapshot == false)
    }

    /// A refused status is named by its registered phrase, the same on every platform and in every language
    /// (Foundation's phrase is translated on Apple platforms, and called 600 a "Server Error" on Linux); a status with
    /// none is named by its number alone.
    @Test(arguments: [
        (404, "the server answered 404 Not Found"), (422, "the server answered 422 Unprocessable Content"),
        (599, "the server answered 599"), (600, "the server answered 600"), (999, "the server answered 999"),
    ])
    func aRefusedStatusIsNamedAlikeEverywhere(status: Int, message: String) async {
        let (center, stub) = stubCenter()
        stub.on(nil, "*", reply: .status(status))
        let outcome = await center.sendRecording { $0.api = "x" }
        #expect(outcome.error?.code == .unacceptableStatus)
        #expect(outcome.error?.message == message)
    }
}
