import Foundation
import Testing
@testable import Switchboard

/// How a request merges with the center's configuration: general values first, the request's own win, and each
/// `useGeneral*` flag opts out.
@Suite struct MergeTests {
    func center() -> (Center, StubEngine) {
        let stub = StubEngine()
        stub.on(nil, "*") { echoReply($0) }
        return stubCenter(stub) { config in
            config.headers = ["X-Client": "ios", "X-Shared": "general"]
            config.parameters = ["app_version": "1.2", "shared": "general"]
            config.userInfo = ["tier": "general", "region": "eu"]
        }
    }

    @Test func generalHeadersAndParametersGoFirstAndTheRequestWins() async throws {
        let (center, stub) = center()
        let response = try await center.send { request in
            request.api = "users"
            request.headers["x-shared"] = "own"
            request.parameters = ["shared": "own", "name": "Ada"]
        }
        let sent = try #require(stub.requests.first)
        #expect(sent.urlRequest.value(forHTTPHeaderField: "X-Client") == "ios")
        #expect(sent.urlRequest.value(forHTTPHeaderField: "X-Shared") == "own")
        #expect(sent.url?.query == "app_version=1.2&name=Ada&shared=own")
        #expect(response.request.headers["X-SHARED"] == "own")
    }

    /// The center's parameters are kept apart from the request's own until something reads or changes them: every
    /// reader still sees them merged, and a change made to the merged value is what is sent.
    @Test func hooksAndResponsesSeeTheParametersMerged() async throws {
        let stub = StubEngine()
        stub.on(nil, "*") { echoReply($0) }
        let seen = Locked<[String]>([])
        let (center, _) = stubCenter(stub) { config in
            config.parameters = ["app_version": "1.2", "shared": "general", "dropped": "yes"]
            config.onRequest = { request in
                seen.withLock { $0 = request.parameters.keys.sorted() }
                request.parameters["dropped"] = nil
                request.parameters["added"] = "hook"
            }
        }
        let response = try await center.send {
            $0.api = "users"; $0.parameters = ["shared": "own"]
        }
        #expect(seen.snapshot == ["app_version", "dropped", "shared"])
        #expect(stub.requests.first?.url?.query == "added=hook&app_version=1.2&shared=own")
        #expect(response.request.parameters["shared"] as? String == "own")
        #expect(response.request.parameters["app_version"] as? String == "1.2")
        #expect(response.request.parameters["dropped"] == nil)
    }

    /// A general parameter that cannot be sent fails the request with an error that names it, unless the request's
    /// own value for that name replaces it.
    @Test func aGeneralParameterThatCannotBeSentIsNamedUnlessReplaced() async throws {
        struct Opaque: Sendable {}
        let stub = StubEngine()
        stub.on(nil, "*") { echoReply($0) }
        let (center, _) = stubCenter(stub) { config in
            config.parameters = ["app_version": "1.2", "device": Opaque()]
        }
        let failure = await #expect(throws: HTTPError.self) {
            try await center.send {
                $0.api = "users"; $0.parameters = ["page": 2]
            }
        }
        #expect(failure?.code == .encoding)
        #expect(failure?.message.contains("device") == true)
        _ = try await center.send {
            $0.api = "users"; $0.parameters = ["device": "phone"]
        }
        #expect(stub.requests.last?.url?.query == "app_version=1.2&device=phone")
    }

    /// Parameters set one at a time on the configuration are each converted for the requests that follow.
    @Test func parametersChangedAfterSetupAreSent() async throws {
        let (center, stub) = center()
        center.setup { $0.parameters["later"] = 3 }
        _ = try await center.send { $0.api = "users" }
        center.setup { $0.parameters = [:] }
        _ = try await center.send {
            $0.api = "users"; $0.parameters = ["own": true]
        }
        #expect(stub.requests.map { $0.url?.query } == ["app_version=1.2&later=3&shared=general", "own=true"])
    }

    @Test func useGeneralHeadersOff() async throws {
        let (center, stub) = center()
        _ = try await center.send {
            $0.api = "users"; $0.useGeneralHeaders = false; $0.headers["X-Own"] = "1"
        }
        let sent = try #require(stub.requests.first)
        #expect(sent.urlRequest.value(forHTTPHeaderField: "X-Client") == nil)
        #expect(sent.urlRequest.value(forHTTPHeaderField: "X-Own") == "1")
        #expect(sent.url?.query == "app_version=1.2&shared=general")
    }

    @Test func useGeneralParametersOff() async throws {
        let (center, stub) = center()
        _ = try await center.send {
            $0.api = "users"; $0.useGeneralParameters = false; $0.parameters = ["a": 1]
        }
        let sent = try #require(stub.requests.first)
        #expect(sent.url?.query == "a=1")
        #expect(sent.urlRequest.value(forHTTPHeaderField: "X-Client") == "ios")
    }

    @Test func everyFlagOff() async throws {
        let (center, stub) = center()
        _ = try await center.send { request in
            request.url = "https://elsewhere.com/x"
            request.useGeneralHeaders = false
            request.useGeneralParameters = false
            request.useGeneralServer = false
        }
        let sent = try #require(stub.requests.first)
        #expect(sent.url?.absoluteString == "https://elsewhere.com/x")
        #expect(sent.urlRequest.value(forHTTPHeaderField: "X-Client") == nil)
    }

    @Test func userInfoMergesWithTheRequestWinning() async throws {
        let seen = Locked<[String: String]>([:])
        let (center, _) = stubCenter { config in
            config.userInfo = ["tier": "general", "region": "eu"]
            config.onRequest = { request in
                seen.withLock { seen in
                    for (key, value) in request.userInfo { seen[key] = value as? String }
                }
            }
        }
        _ = try? await center.send {
            $0.api = "x"; $0.userInfo["tier"] = "gold"
        }
        #expect(seen.snapshot == ["tier": "gold", "region": "eu"])
    }

    @Test func setHeaderAndSetParameterAddAndRemove() async throws {
        let (center, stub) = center()
        center.setHeader("abc", for: "X-Session")
        center.setParameter(7, for: "page")
        center.setParameter(nil, for: "shared")
        center.setHeader(nil, for: "x-shared")
        _ = try await center.send { $0.api = "users" }
        let sent = try #require(stub.requests.first)
        #expect(sent.urlRequest.value(forHTTPHeaderField: "X-Session") == "abc")
        #expect(sent.urlRequest.value(forHTTPHeaderField: "X-Shared") == nil)
        #expect(sent.url?.query == "app_version=1.2&page=7")
    }

    @Test func aRequestInFlightKeepsTheConfigurationItStartedWith() async throws {
        let stub = StubEngine()
        stub.on(nil, "*") { request in echoReply(request).delayed(by: .milliseconds(100)) }
        let (center, _) = stubCenter(stub) { $0.headers["X-Version"] = "1" }
        let first = Task { try await center.send { $0.api = "a" } }
        await waitUntil { stub.statistics.inFlight == 1 }
        center.setup {
            $0.headers["X-Version"] = "2"; $0.server = "https://changed.example/"
        }
        let response = try await first.value
        #expect(response.request.headers["X-Version"] == "1")
        #expect(response.url?.host == "api.example.com")
        let second = try await center.send { $0.api = "b" }
        #expect(second.request.headers["X-Version"] == "2")
        #expect(second.url?.host == "changed.example")
    }

    @Test func concurrentSetupsAndSendsAreSafe() async throws {
        let stub = StubEngine()
        stub.on(nil, "*", reply: .status(204))
        let (center, _) = stubCenter(stub)
        await withTaskGroup(of: Void.self) { group in
            for index in 0..<200 {
                group.addTask { center.setHeader("\(index)", for: "X-\(index % 10)") }
                group.addTask { _ = try? await center.send { $0.api = "n/\(index)" } }
            }
        }
        #expect(center.configuration.headers.count == 10)
        #expect(stub.statistics.calls == 200)
    }
}
