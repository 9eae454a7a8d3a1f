import Foundation
import Testing
@testable import Switchboard
import SwitchboardTestSupport

/// `RedirectPolicy`: its decisions without I/O, then the same outcomes on both engines against loopback servers.
@Suite struct RedirectPolicyTests {
    static let from = URL(string: "http://127.0.0.1:1/a")!

    /// The step for redirect number `number` to `/b`, whose next request the rules made as a `GET` with one field.
    static func step(_ policy: RedirectPolicy, number: Int) -> Redirects.Step {
        var proposed = EngineRequest(url: URL(string: "http://127.0.0.1:1/b")!, headers: ["X-Kept": "1"])
        proposed.id = RequestID(rawValue: 1)
        return Redirects.step(
            proposed, status: 302, headers: ["Location": "/b"], from: from, number: number, policy: policy)
    }

    static func followed(_ step: Redirects.Step) -> EngineRequest? {
        if case .follow(let request) = step { return request }
        return nil
    }

    static func failure(_ step: Redirects.Step) -> HTTPError? {
        if case .fail(let error) = step { return error }
        return nil
    }

    static func answers(_ step: Redirects.Step) -> Bool {
        if case .answer = step { return true }
        return false
    }

    // MARK: - Decisions

    @Test func followingStopsAtTheLimitAndNeverAnswersWithTheRedirect() {
        #expect(Self.followed(Self.step(.follow, number: 20))?.url?.path == "/b")
        #expect(Self.failure(Self.step(.follow, number: 21))?.code == .transport)
        #expect(Self.failure(Self.step(.follow, number: 21))?.message.hasPrefix("more than 20") == true)
        let two = RedirectPolicy.follow(max: 2)
        #expect(Self.followed(Self.step(two, number: 2)) != nil)
        #expect(Self.failure(Self.step(two, number: 3))?.message.hasPrefix("more than 2 redirects") == true)
        #expect(RedirectPolicy.follow(max: 500).maxRedirects == 20 && RedirectPolicy.follow(max: -1).maxRedirects == 0)
        #expect(Self.failure(Self.step(.follow(max: 0), number: 1)) != nil)
        #expect(Self.answers(Self.step(.never, number: 1)))
        #expect(RedirectPolicy.follow.isDefault && !RedirectPolicy.never.isDefault && !two.isDefault)
    }

    @Test func aDecisionFollowsStopsOrSendsARequestHeldToTheRules() {
        let numbers = Locked<[Int]>([])
        let policy = RedirectPolicy.deciding(max: 3) { redirect in
            numbers.withLock { $0.append(redirect.number) }
            if redirect.number == 1 { return .follow }
            if redirect.number == 2 { return .stop }
            var next = redirect.next
            next.headers["X-Hop"] = "\(redirect.number)"
            next.method = .put
            return .send(next)
        }
        #expect(Self.followed(Self.step(policy, number: 1))?.headers["X-Kept"] == "1")
        #expect(Self.answers(Self.step(policy, number: 2)))
        let sent = Self.followed(Self.step(policy, number: 3))
        #expect(sent?.headers["X-Hop"] == "3" && sent?.method == .put && sent?.id == RequestID(rawValue: 1))
        // Past the limit the decision is not asked.
        #expect(Self.failure(Self.step(policy, number: 4)) != nil)
        #expect(numbers.withLock { $0 } == [1, 2, 3])

        let elsewhere = RedirectPolicy.deciding { redirect in
            var next = redirect.next
            if redirect.number == 1 {
                next.url = URL(string: "ftp://127.0.0.1/x")
            } else {
                next.headers["X-Bad"] = "a\r\nb"
            }
            return .send(next)
        }
        #expect(Self.failure(Self.step(elsewhere, number: 1))?.code == .invalidURL)
        #expect(Self.failure(Self.step(elsewhere, number: 2))?.code == .encoding)
    }

    // MARK: - On both engines

    @Test(arguments: bothEngines)
    func neverAnswersWithTheRedirectAndItsBody(engineName: String) async throws {
        let center = try loopbackCenter(engineName) { $0.redirectPolicy = .never }
        let response = try await center.send { request in
            request.api = "fault/redirect-answer"
            request.parameters = ["status": 301, "to": "/get", "length": 10]
            request.responseSerializer = .raw
        }
        #expect(response.status == 301)
        #expect(response.headers["Location"] == "/get")
        #expect(response.data == Data(repeating: UInt8(ascii: "b"), count: 10))
        // A request's own policy wins over the center's.
        let followed = try await center.send { request in
            request.api = "redirect/2"
            request.redirectPolicy = .follow
        }
        #expect(followed.status == 200 && followed.url?.path == "/get")
    }

    /// The status, `Location` and body of a stream of a redirect with a `length`-byte body, under `policy`.
    static func streamedRedirect(
        _ engineName: String, _ policy: RedirectPolicy, status: Int, length: Int
    ) async throws -> (Int, String?, Data) {
        let center = try loopbackCenter(engineName) { $0.redirectPolicy = policy }
        let stream = try await center.stream { request in
            request.api = "fault/redirect-answer"
            request.parameters = ["status": status, "to": "/get", "length": length]
        }
        var body = Data()
        for try await chunk in stream { body += chunk }
        return (stream.status, stream.headers["Location"], body)
    }

    @Test(arguments: bothEngines)
    func aStreamUnderNeverIsTheRedirectsBody(engineName: String) async throws {
        let (status, location, body) = try await Self.streamedRedirect(engineName, .never, status: 302, length: 7)
        #expect(status == 302 && location == "/get")
        #expect(body == Data(repeating: UInt8(ascii: "b"), count: 7))
    }

    /// A decision that stops is known only once the redirect is whole: the stream then opens with all of it.
    @Test(arguments: bothEngines)
    func aStreamWhoseDecisionStopsAtARedirectHasItsBody(engineName: String) async throws {
        let stops = RedirectPolicy.deciding { _ in .stop }
        let (status, location, body) = try await Self.streamedRedirect(engineName, stops, status: 307, length: 5)
        #expect(status == 307 && location == "/get")
        #expect(body == Data(repeating: UInt8(ascii: "b"), count: 5))
    }

    @Test(arguments: bothEngines)
    func aLimitFollowsThatManyAndFailsPastIt(engineName: String) async throws {
        let center = try loopbackCenter(engineName) { $0.redirectPolicy = .follow(max: 2) }
        let two = try await center.send { $0.api = "redirect/2" }
        #expect(two.status == 200 && two.url?.path == "/get")
        #expect(two.metrics?.redirects == 2)
        let outcome = await center.sendRecording { $0.api = "redirect/3" }
        #expect(outcome.error?.code == .transport)
        #expect(
            outcome.error?.message.hasPrefix("more than 2 redirects") == true, "\(String(describing: outcome.error))")
    }

    @Test(arguments: bothEngines)
    func aDecisionSeesEachRedirectAndMayChangeTheNextRequest(engineName: String) async throws {
        let seen = Locked<[String]>([])
        let center = try loopbackCenter(engineName) { config in
            config.redirectPolicy = .deciding { redirect in
                seen.withLock { $0.append("\(redirect.number) \(redirect.status) \(redirect.next.url?.path ?? "")") }
                var next = redirect.next
                next.headers["X-Hop"] = "\(redirect.number)"
                return .send(next)
            }
        }
        let response = try await center.send { $0.api = "redirect/2" }
        #expect(response.status == 200)
        #expect(seen.withLock { $0 } == ["1 302 /redirect/1", "2 302 /get"])
        #expect(response.json?["headers"]?["X-Hop"]?.string == "2")
    }

    /// The rules come first: the request a decision sees carries no credential to another origin, and one it stops
    /// is the answer, the other server never asked.
    @Test(arguments: bothEngines)
    func aDecisionSeesTheRulesAppliedAndMayKeepARequestHome(engineName: String) async throws {
        let other = try LoopbackServer()
        defer { other.stop() }
        let elsewhere = "http://127.0.0.1:\(other.port)/anything"
        let stop = Locked(true)
        let credentials = Locked<[String?]>([])
        let center = try loopbackCenter(engineName) { config in
            config.headers["Authorization"] = "Bearer own-origin-only"
            config.redirectPolicy = .deciding { redirect in
                credentials.withLock { $0.append(redirect.next.headers["Authorization"]) }
                return stop.withLock { $0 } ? .stop : .send(redirect.next)
            }
        }
        let kept = try await center.send { request in
            request.api = "redirect-to"
            request.parameters = ["url": elsewhere]
        }
        #expect(kept.status == 302 && kept.headers["Location"] == elsewhere)
        #expect(other.acceptedConnections == 0)
        stop.withLock { $0 = false }
        let sent = try await center.send { request in
            request.api = "redirect-to"
            request.parameters = ["url": elsewhere]
        }
        #expect(sent.status == 200 && other.acceptedConnections == 1)
        #expect(sent.json?["headers"]?["Authorization"] == nil)
        #expect(credentials.withLock { $0 } == [nil, nil], "the decision saw no credential for the other origin")
    }

    @Test(arguments: bothEngines)
    func theConsoleLogShowsEachHop(engineName: String) async throws {
        let log = EventLog()
        let center = try loopbackCenter(engineName) { config in
            config.consoleLog = true
            config.consoleLogHandler = { log.record($0) }
        }
        let response = try await center.send { $0.api = "redirect/2" }
        let hops = log.all.filter { $0.contains("[Switchboard Redirect]") }
        #expect(hops.count == 2, "\(log.all)")
        #expect(hops.first?.contains("\(response.request.id) 302 ") == true)
        #expect(hops.last?.contains("followed to http://127.0.0.1:\(LoopbackServer.shared.port)/get") == true)
    }

    /// An engine that does not say it honours a policy gets no request with one.
    @Test func anEngineWithoutThePolicyRefusesAllButFollow() async throws {
        struct Answering: Engine {
            let calls = Locked(0)
            func perform(
                _ request: EngineRequest, progress: @escaping @Sendable (TransferProgress) -> Void
            ) async throws -> EngineResponse {
                calls.withLock { $0 += 1 }
                return EngineResponse(status: 200, url: request.url, headers: [:], body: Data())
            }
        }
        let engine = Answering()
        let center = Center { config in
            config.engine = engine
            config.server = "http://127.0.0.1:1/"
            config.redirectPolicy = .never
        }
        let refused = await center.sendRecording { $0.api = "a" }
        #expect(refused.error?.code == .unsupported)
        #expect(engine.calls.withLock { $0 } == 0)
        _ = try await center.send { request in
            request.api = "a"
            request.redirectPolicy = .follow
        }
        #expect(engine.calls.withLock { $0 } == 1)
    }
}
