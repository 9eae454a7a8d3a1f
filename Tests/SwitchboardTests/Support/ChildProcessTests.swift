import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Testing
import SwitchboardTestSupport

private let canSuperviseProcesses =
    FileManager.default.fileExists(atPath: "/proc/self/stat")
    && ((try? TLSServer.run("command -v python3")) ?? "").contains("python3")

/// The servers the suites start end with them: `ChildProcess` ends the program's whole process group, workers
/// included, and `LeftoverProcesses` (the benchmark's and CI's check) sees what is left.
@Suite(.enabled(if: canSuperviseProcesses, "needs python3 and /proc"))
struct ChildProcessTests {
    /// A shell that forks a worker (a background `sleep`) and then sleeps itself, as Hypercorn or gunicorn fork
    /// workers; it prints both process ids.
    private func startGroup(marker: String? = nil) throws -> (ChildProcess, [Int32]) {
        let output = Pipe()
        var environment = ProcessInfo.processInfo.environment
        if let marker { environment["SWITCHBOARD_CHILD_PROCESS_TEST"] = marker }
        let process = try ChildProcess(
            "/bin/sh", ["-c", "sleep 300 & echo $$ $!; exec sleep 301"], environment: environment,
            output: output.fileHandleForWriting)
        try output.fileHandleForWriting.close()
        let pids = try output.fileHandleForReading.readLine().split(separator: " ").compactMap { Int32($0) }
        return (process, pids)
    }

    /// Running, and not a zombie waiting to be reaped.
    private func isAlive(_ pid: Int32) -> Bool {
        guard let status = LeftoverProcesses.status(of: pid) else { return false }
        return status.state != "Z"
    }

    @Test func stoppingEndsTheProgramAndTheWorkersItForked() throws {
        let (process, pids) = try startGroup()
        try #require(pids.count == 2)
        #expect(pids.allSatisfy(isAlive))
        process.stop()
        #expect(!process.isRunning)
        #expect(!pids.contains(where: isAlive), "still running: \(pids.filter(isAlive))")
        process.stop()  // a second stop does nothing
    }

    @Test func releasingTheLastReferenceStopsIt() throws {
        var pids: [Int32] = []
        do {
            let (process, started) = try startGroup()
            pids = started
            #expect(process.isRunning)
        }
        try #require(pids.count == 2)
        #expect(!pids.contains(where: isAlive), "still running: \(pids.filter(isAlive))")
    }

    /// The check the benchmark runs at its end (and `.ci/run` runs in Python): it names what is still running with
    /// the run's marker, and nothing once it has stopped.
    @Test func leftoversAreFoundByTheMarkerTheyInherited() async throws {
        let marker = UUID().uuidString
        let (process, pids) = try startGroup(marker: marker)
        try #require(pids.count == 2)
        // The shell prints its ids just before it execs `sleep 301`; while a process execs, /proc may not show its
        // environment for an instant, so look again (for up to 2 s) until the exec is done.
        var running = LeftoverProcesses.find(name: "SWITCHBOARD_CHILD_PROCESS_TEST", value: marker)
        var looks = 1
        while looks < 100,
            !(pids.allSatisfy { pid in running.contains { $0.pid == pid } }
                && running.contains { $0.command.contains("sleep 301") })
        {
            try await Task.sleep(for: .milliseconds(20))  // not a blocking sleep: it would hold a thread of the pool
            running = LeftoverProcesses.find(name: "SWITCHBOARD_CHILD_PROCESS_TEST", value: marker)
            looks += 1
        }
        for pid in pids {
            #expect(running.contains { $0.pid == pid }, "\(running)")
        }
        #expect(running.contains { $0.command.contains("sleep 301") })
        #expect(LeftoverProcesses.find(name: "SWITCHBOARD_CHILD_PROCESS_TEST", value: "other").isEmpty)
        process.stop()
        #expect(LeftoverProcesses.find(name: "SWITCHBOARD_CHILD_PROCESS_TEST", value: marker).isEmpty)
    }
}
