import Foundation
import Testing
@testable import Switchboard
import SwitchboardTestSupport

/// A center's limit on requests in flight, with priorities: the decisions without I/O, then on both engines against
/// a loopback server that holds a request until the test lets it go.
@Suite struct AdmissionTests {
    // MARK: - Decisions

    @Test func waitingRequestsStartByPriorityThenInOrder() {
        var state = AdmissionState<String>()
        func admit(_ id: UInt64, _ priority: Int, limit: Int = 2, _ name: String) -> Bool {
            state.admit(RequestID(rawValue: id), priority: priority, limit: limit, waiter: name)
        }
        let started = [admit(1, 0, "a"), admit(2, 0, "b")]
        let waited = [admit(3, -1, "low"), admit(4, 0, "normal 1"), admit(5, 5, "five"), admit(6, 0, "normal 2")]
        #expect(started == [true, true] && waited == [false, false, false, false])
        #expect(state.waitingCount == 4 && state.running == 2)
        let first = state.release(limit: 2)
        #expect(first == ["five"])
        let removed = [state.remove(RequestID(rawValue: 4)), state.remove(RequestID(rawValue: 4))]
        #expect(removed == ["normal 1", nil], "taken out once")
        // A higher limit lets more start at the next release.
        let next = state.release(limit: 3)
        #expect(next == ["normal 2", "low"])
        #expect(state.waitingCount == 0 && state.running == 3)
        // Under a lowered limit, a new request waits until enough places have come back.
        let late = admit(7, 0, limit: 1, "late")
        #expect(!late)
        let releases = [state.release(limit: 1), state.release(limit: 1), state.release(limit: 1)]
        #expect(releases == [[], [], ["late"]])
    }

    @Test func aLongQueueStartsInOrderAndLosesOnlyWhatIsTakenOut() {
        var state = AdmissionState<Int>()
        _ = state.admit(RequestID(rawValue: 0), priority: 0, limit: 1, waiter: 0)
        for number in 1...1_000 {
            _ = state.admit(RequestID(rawValue: UInt64(number)), priority: 0, limit: 1, waiter: number)
        }
        var started: [Int] = []
        for _ in 0..<500 { started += state.release(limit: 1) }
        let early = state.remove(RequestID(rawValue: 300))
        let late = state.remove(RequestID(rawValue: 700))
        #expect(early == nil, "it had started")
        #expect(late == 700)
        while state.waitingCount > 0 { started += state.release(limit: 1) }
        #expect(started == Array(1...699) + Array(701...1_000))
        #expect(state.running == 1)
    }

    // MARK: - On both engines

    /// A loopback server that records the order requests arrive in and holds `/hold` ones until `open()`.
    final class Gatekeeper: Sendable {
        let arrivals = Locked<[String]>([])
        let inside = Locked((now: 0, most: 0))
        private let gate = DispatchSemaphore(value: 0)
        private let opened = Locked(false)

        func server() throws -> LoopbackServer {
            try LoopbackServer { [self] request in
                let name = request.queryValue("name") ?? request.path
                arrivals.withLock { $0.append(name) }
                inside.withLock { $0 = ($0.now + 1, max($0.most, $0.now + 1)) }
                defer { inside.withLock { $0.now -= 1 } }
                if request.path.hasPrefix("/hold") {
                    gate.wait()
                    gate.signal()
                } else if request.path.hasPrefix("/slow") {
                    Thread.sleep(forTimeInterval: 0.03)
                }
                return .json(["name": name])
            }
        }

        func open() {
            guard
                opened.withLock({ opened in
                    defer { opened = true }
                    return !opened
                })
            else { return }
            gate.signal()
        }
    }

    /// A center on `engineName` with room for one request in flight, and that place taken by a request the server
    /// holds until `keeper.open()`.
    static func heldCenter(
        _ engineName: String
    ) async throws -> (Gatekeeper, LoopbackServer, Center, Task<Response, any Error>) {
        let keeper = Gatekeeper()
        let server = try keeper.server()
        let center = try loopbackCenter(engineName, server: server) { $0.maxRequestsInFlight = 1 }
        let blocker = Task { try await center.send { $0.api = "hold" } }
        await waitUntil { keeper.arrivals.withLock { $0 } == ["/hold"] }
        return (keeper, server, center, blocker)
    }

    @Test(arguments: bothEngines)
    func queuedRequestsStartByPriorityAndReportTheirWait(engineName: String) async throws {
        let (keeper, server, center, blocker) = try await Self.heldCenter(engineName)
        defer {
            keeper.open()
            server.stop()
        }
        var queued: [Task<Response, any Error>] = []
        for (index, (name, priority)) in [
            ("low", RequestPriority.low), ("normal-1", .normal), ("high", .high),
            ("normal-2", .normal), ("seven", 7),
        ].enumerated() {
            queued.append(
                Task {
                    try await center.send { request in
                        request.api = "get"
                        request.parameters = ["name": name]
                        request.priority = priority
                    }
                })
            await waitUntil { center.registry.admission.waiting == index + 1 }
        }
        keeper.open()
        let first = try await blocker.value
        var responses: [Response] = []
        for task in queued { responses.append(try await task.value) }
        #expect(keeper.arrivals.withLock { $0 } == ["/hold", "seven", "high", "normal-1", "normal-2", "low"])
        #expect(keeper.inside.withLock { $0.most } == 1)
        #expect(first.metrics?.queued != nil)
        #expect((responses[0].metrics?.queued ?? .zero) > .zero, "the low one waited for every other")
        #expect(center.registry.admission.waiting == 0)
    }

    @Test(arguments: bothEngines)
    func aQueuedRequestCancelledNeverReachesTheEngine(engineName: String) async throws {
        let (keeper, server, center, blocker) = try await Self.heldCenter(engineName)
        defer {
            keeper.open()
            server.stop()
        }
        let byID = Task {
            await center.sendRecording({
                $0.api = "get"; $0.parameters = ["name": "by-id"]
            }) { id in
                Task {
                    await waitUntil { center.registry.admission.waiting == 1 }
                    center.cancel(id)
                }
            }
        }
        #expect(await byID.value.error?.code == .cancelled)
        let byTag = Task {
            try await center.send { request in
                request.api = "get"
                request.parameters = ["name": "by-tag"]
                request.tag = "thumbnails"
            }
        }
        await waitUntil { center.registry.admission.waiting == 1 }
        #expect(center.cancel(tag: "thumbnails") == 1)
        await #expect(throws: HTTPError.self) { try await byTag.value }
        // An owner that goes away cancels its waiting request too (the registry checks owners every 100 ms).
        final class Screen {}
        var screen: Screen? = Screen()
        let owned = Task { [weak screen] in
            await center.sendRecording { request in
                request.api = "get"
                request.parameters = ["name": "by-owner"]
                request.owner = screen
            }
        }
        await waitUntil { center.registry.admission.waiting == 1 }
        screen = nil
        #expect(await owned.value.error?.code == .cancelled)
        #expect(center.registry.admission.waiting == 0)
        keeper.open()
        _ = try await blocker.value
        // The places were given back: the next request runs.
        let after = try await center.send {
            $0.api = "get"; $0.parameters = ["name": "after"]
        }
        #expect(after.status == 200)
        #expect(keeper.arrivals.withLock { $0 } == ["/hold", "after"])
    }

    @Test(arguments: bothEngines)
    func theWaitIsNotCountedAgainstTheIdleTimeout(engineName: String) async throws {
        let (keeper, server, center, blocker) = try await Self.heldCenter(engineName)
        defer {
            keeper.open()
            server.stop()
        }
        let waiting = Task {
            try await center.send { request in
                request.api = "get"
                request.timeout = .seconds(1)
            }
        }
        await waitUntil { center.registry.admission.waiting == 1 }
        try await Task.sleep(for: .milliseconds(1500))
        keeper.open()
        _ = try await blocker.value
        let response = try await waiting.value
        #expect(response.status == 200)
        #expect((response.metrics?.queued ?? .zero) >= .milliseconds(1500))
    }

    @Test(arguments: bothEngines)
    func batchMembersTakePlacesAsRequests(engineName: String) async throws {
        let keeper = Gatekeeper()
        let server = try keeper.server()
        defer { server.stop() }
        let center = try loopbackCenter(engineName, server: server) { $0.maxRequestsInFlight = 2 }
        let responses = try await center.batch { batch in
            for index in 0..<6 {
                batch.add {
                    $0.api = "slow"; $0.parameters = ["name": "m\(index)"]
                }
            }
        }
        #expect(responses.count == 6 && responses.allSatisfy { $0.status == 200 })
        // Never past the limit (how many the server held at once below it depends on the machine's load).
        #expect((1...2).contains(keeper.inside.withLock { $0.most }))
    }
}
