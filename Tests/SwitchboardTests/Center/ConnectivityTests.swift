import Foundation
import Testing
@testable import Switchboard
import SwitchboardTestSupport

/// Connectivity: the routing tables read and judged without I/O, waits for a path without I/O, and on Linux the
/// monitor and a waiting request inside a private network namespace the test makes (`unshare -n`), where it adds and
/// removes a virtual interface and a default route. Traffic goes to loopback only; the interface's addresses are
/// never a destination.
@Suite struct ConnectivityTests {
    // MARK: - Routing tables, without I/O

    /// One netlink message: the header, a family header, then attributes.
    static func message(_ type: UInt16, _ header: [UInt8], attributes: [(UInt16, [UInt8])] = []) -> [UInt8] {
        var body = header
        for (kind, value) in attributes {
            let length = 4 + value.count
            body += withUnsafeBytes(of: UInt16(length)) { Array($0) } + withUnsafeBytes(of: kind) { Array($0) } + value
            body += [UInt8](repeating: 0, count: (4 - length % 4) % 4)
        }
        var bytes = withUnsafeBytes(of: UInt32(16 + body.count)) { Array($0) }
        bytes += withUnsafeBytes(of: type) { Array($0) } + [0, 0] + [UInt8](repeating: 0, count: 8)
        return bytes + body
    }

    static func link(_ index: Int32, _ name: String, hardware: UInt16 = 1, flags: UInt32 = 0x41) -> [UInt8] {
        var header: [UInt8] = [0, 0] + withUnsafeBytes(of: hardware) { Array($0) }
        header += withUnsafeBytes(of: index) { Array($0) } + withUnsafeBytes(of: flags) { Array($0) } + [0, 0, 0, 0]
        return message(16, header, attributes: [(3, Array(name.utf8) + [0])])
    }

    static func address(_ index: Int32, family: UInt8 = 2, scope: UInt8 = 0) -> [UInt8] {
        message(20, [family, 24, 0, scope] + withUnsafeBytes(of: index) { Array($0) })
    }

    static func defaultRoute(through index: Int32, family: UInt8 = 2, table: UInt8 = 254) -> [UInt8] {
        message(
            24, [family, 0, 0, 0, table, 3, 0, 1, 0, 0, 0, 0],
            attributes: [(4, withUnsafeBytes(of: index) { Array($0) })])
    }

    static func path(_ messages: [UInt8]..., wireless: Bool = false) -> NetworkPath {
        var table = RouteTable()
        for bytes in messages { _ = bytes.withUnsafeBytes { table.read($0) } }
        return table.path { _ in wireless }
    }

    @Test func aDefaultRouteThroughAnInterfaceThatIsUpWithAnAddressIsAPath() {
        let usable = Self.path(Self.link(2, "eth0"), Self.address(2), Self.defaultRoute(through: 2))
        #expect(usable == NetworkPath(isUsable: true, interface: .wiredEthernet, interfaceName: "eth0"))
        #expect(
            Self.path(Self.link(3, "wlan0"), Self.address(3), Self.defaultRoute(through: 3), wireless: true).interface
                == .wifi)
        #expect(Self.path(Self.link(4, "wwan0"), Self.address(4), Self.defaultRoute(through: 4)).interface == .cellular)
        // Each missing piece leaves no path.
        #expect(!Self.path(Self.link(2, "eth0"), Self.address(2)).isUsable, "no default route")
        #expect(
            !Self.path(Self.link(2, "eth0", flags: 0x1), Self.address(2), Self.defaultRoute(through: 2)).isUsable,
            "no carrier")
        #expect(!Self.path(Self.link(2, "eth0"), Self.defaultRoute(through: 2)).isUsable, "no address")
        #expect(!Self.path(Self.link(2, "eth0"), Self.address(2, family: 10), Self.defaultRoute(through: 2)).isUsable)
        #expect(!Self.path(Self.link(2, "eth0"), Self.address(2, scope: 253), Self.defaultRoute(through: 2)).isUsable)
        #expect(
            !Self.path(Self.link(1, "lo", hardware: 772, flags: 0x49), Self.address(1), Self.defaultRoute(through: 1))
                .isUsable)
        #expect(!Self.path(Self.link(2, "eth0"), Self.address(2), Self.defaultRoute(through: 2, table: 100)).isUsable)
    }

    @Test func malformedMessagesEndTheReadingNotTheProcess() {
        var bytes = Self.link(2, "eth0")
        bytes[0] = 200  // a length past the end
        var table = RouteTable()
        #expect(bytes.withUnsafeBytes { table.read($0) })
        #expect(table.links.isEmpty)
        let truncated = Array(Self.defaultRoute(through: 2).prefix(20))
        _ = truncated.withUnsafeBytes { table.read($0) }
        #expect(table.routes.isEmpty)
        // An attribute whose length runs past its message is not read.
        var route = Self.defaultRoute(through: 2)
        route[28] = 40
        _ = route.withUnsafeBytes { table.read($0) }
        #expect(table.routes.first?.outputInterface == nil)
    }

    // MARK: - Waiting, without I/O

    @Test func aWaitEndsWithAPathItsTimeOrACancel() async throws {
        let connectivity = Connectivity()
        connectivity.update(NetworkPath(isUsable: false))
        let seen = Locked<[Bool]>([])
        let observation = connectivity.observe { path in seen.withLock { $0.append(path.isUsable) } }
        let waiting = Task { try await connectivity.waitForUsablePath(within: .seconds(30)) }
        try await Task.sleep(for: .milliseconds(50))
        connectivity.update(NetworkPath(isUsable: true, interface: .wifi, interfaceName: "wlan0"))
        try await waiting.value
        #expect(seen.withLock { $0 } == [false, true])
        observation.cancel()
        connectivity.update(NetworkPath(isUsable: false))
        #expect(seen.withLock { $0 } == [false, true], "no news after the observation ended")

        let started = ContinuousClock.now
        await #expect(throws: HTTPError.self) { try await connectivity.waitForUsablePath(within: .milliseconds(100)) }
        #expect(ContinuousClock.now - started >= .milliseconds(100))

        let cancelled = Task { try await connectivity.waitForUsablePath(within: .seconds(30)) }
        try await Task.sleep(for: .milliseconds(50))
        cancelled.cancel()
        await #expect(throws: CancellationError.self) { try await cancelled.value }
        let signal = EngineCancellation()
        let signalled = Task { try await connectivity.waitForUsablePath(within: .seconds(30), cancellation: signal) }
        try await Task.sleep(for: .milliseconds(50))
        signal.cancel()
        await #expect(throws: CancellationError.self) { try await signalled.value }
    }

    // MARK: - On Linux, in a network namespace of the test's own

    #if os(Linux)
    static let childReport = ProcessInfo.processInfo.environment["SWITCHBOARD_NETNS_CHILD_REPORT"]

    /// A private network namespace needs `unshare`, `ip` and the right to make one (root here and in CI).
    static let canIsolate: Bool = {
        guard childReport == nil, getuid() == 0, FileManager.default.isExecutableFile(atPath: "/usr/bin/unshare")
        else { return false }
        guard
            let probe = try? ProcessLaunch.spawn(
                "/usr/bin/unshare", ["-n", "/bin/sh", "-c", "ip link add v0 type veth peer name v1"])
        else { return false }
        return ProcessLaunch.exitStatus(of: probe) == 0
    }()

    @Test(.enabled(if: ConnectivityTests.canIsolate, "needs unshare, ip and the right to make a network namespace"))
    func theMonitorFollowsTheRoutesAndAWaitingRequestStartsOnce() async throws {
        let scratch = Scratch()
        let report = scratch.file("report.json")
        try await ChildTest.run(
            "connectivityInAPrivateNetworkNamespace", environment: ["SWITCHBOARD_NETNS_CHILD_REPORT": report.path],
            command: ["/usr/bin/unshare", "-n"], scratch: scratch)
        let seen = try JSONDecoder().decode([String: String].self, from: Data(contentsOf: report))
        #expect(seen["before"] == "unusable")
        #expect(seen["waiting"] == "2", "both requests waited: \(seen)")
        #expect(seen["after"] == "usable wiredEthernet v0")
        #expect(seen["URLSessionEngine"] == "200")
        #expect(seen["CurlEngine"] == "200")
        #expect(seen["removed"] == "unusable")
        #expect(seen["sequence"] == "unusable usable unusable")
        #expect(seen["timedOut"] == "cannotConnect")
    }

    /// Runs in the child, inside the namespace (skipped elsewhere).
    @Test(.enabled(if: ConnectivityTests.childReport != nil))
    func connectivityInAPrivateNetworkNamespace() async throws {
        func ip(_ arguments: String) throws {
            let child = try ProcessLaunch.spawn("/bin/sh", ["-c", "ip " + arguments])
            guard ProcessLaunch.exitStatus(of: child) == 0 else { throw Failure(command: arguments) }
        }
        struct Failure: Error { let command: String }
        func describe(_ path: NetworkPath) -> String {
            path.isUsable ? "usable \(path.interface.map { "\($0)" } ?? "?") \(path.interfaceName ?? "?")" : "unusable"
        }
        var seen: [String: String] = [:]
        try ip("link set lo up")
        let server = try LoopbackServer()
        defer { server.stop() }
        let connectivity = Center.shared.connectivity
        seen["before"] = describe(connectivity.path)
        // The asynchronous sequence: the path now, then each change.
        let changes = Task {
            var usable: [Bool] = []
            for await path in connectivity.paths {
                usable.append(path.isUsable)
                if usable.count == 3 { break }
            }
            return usable
        }
        let started = Locked(0)
        var requests: [Task<(String, String), Never>] = []
        for engineName in bothEngines {
            let center = try loopbackCenter(engineName, server: server) { config in
                config.waitsForConnectivity = true
                config.plugins = [CountsSent(count: started)]
            }
            requests.append(
                Task {
                    let outcome = await center.sendRecording { request in
                        request.api = "get"
                        request.timeout = .seconds(30)
                    }
                    switch outcome.result {
                    case .success(let response): return (engineName, "\(response.status)")
                    case .failure(let error): return (engineName, "\(error.code)")
                    }
                })
        }
        try await Task.sleep(for: .milliseconds(300))
        seen["waiting"] = "\(requests.count - started.withLock { $0 })"
        try ip("link add v0 type veth peer name v1")
        try ip("addr add 10.9.0.2/24 dev v0")
        try ip("link set v0 up")
        try ip("link set v1 up")
        try ip("route add default via 10.9.0.1 dev v0")
        for task in requests {
            let (engineName, outcome) = await task.value
            seen[engineName] = outcome
        }
        seen["after"] = describe(connectivity.path)
        try ip("link del v0")
        for _ in 0..<100 where connectivity.path.isUsable { try await Task.sleep(for: .milliseconds(20)) }
        seen["removed"] = describe(connectivity.path)
        seen["sequence"] = await changes.value.map { $0 ? "usable" : "unusable" }.joined(separator: " ")
        let center = try loopbackCenter("CurlEngine", server: server) { $0.waitsForConnectivity = true }
        let late = await center.sendRecording { request in
            request.api = "get"
            request.timeout = .milliseconds(200)
        }
        seen["timedOut"] = late.error.map { "\($0.code)" } ?? "sent"
        try JSONEncoder().encode(seen).write(to: URL(fileURLWithPath: Self.childReport!))
    }

    /// Counts the attempts handed to the engine.
    struct CountsSent: Plugin {
        let count: Locked<Int>
        func willSend(_ request: EngineRequest, for original: Request) async { count.withLock { $0 += 1 } }
    }
    #endif
}
