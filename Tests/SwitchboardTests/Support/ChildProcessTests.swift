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

    /// A `SIGTERM` sent to the supervisor ends the program and its workers, as stopping does: the supervisor starts
    /// with no signal blocked (started from a thread of Swift's pool, which blocks nearly all, it would inherit that
    /// mask unless told otherwise, and the signal would stay pending for good).
    @Test func aSignalToTheSupervisorEndsTheGroup() throws {
        let (process, pids) = try startGroup()
        defer { process.stop() }
        try #require(pids.count == 2)
        // Sent once the supervisor has set its handler (right after it started the program).
        let deadline = ContinuousClock.now + .seconds(10)
        while !Self.handles(SIGTERM, process.supervisorID), ContinuousClock.now < deadline { usleep(10_000) }
        try #require(Self.handles(SIGTERM, process.supervisorID))
        kill(process.supervisorID, SIGTERM)
        while pids.contains(where: isAlive), ContinuousClock.now < deadline + .seconds(10) { usleep(20_000) }
        #expect(!pids.contains(where: isAlive), "still running: \(pids.filter(isAlive))")
    }

    /// Whether a process has a handler set for `signal` (`SigCgt` in its `/proc` status).
    private static func handles(_ signal: Int32, _ pid: pid_t) -> Bool {
        guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
            let line = status.split(separator: "\n").first(where: { $0.hasPrefix("SigCgt:") }),
            let mask = UInt64(line.dropFirst("SigCgt:".count).trimmingCharacters(in: .whitespaces), radix: 16)
        else { return false }
        return mask & (1 << UInt64(signal - 1)) != 0
    }

    /// The supervisor starts with standard input, output and error and nothing else of this process's: a
    /// descriptor left open across `exec` (here a file opened without close-on-exec) would keep, say, a connection
    /// open in it after this process closed its end.
    @Test func aStartedProgramHoldsNoneOfThisProcesssDescriptors() throws {
        let scratch = Scratch()
        let marker = scratch.file("held-open")
        try Data("x".utf8).write(to: marker)
        let inherited = open(marker.path, O_RDONLY)
        try #require(inherited >= 0)
        defer { close(inherited) }
        let process = try ChildProcess("/bin/sleep", ["300"])
        defer { process.stop() }
        // `posix_spawn` returns once the supervisor has been started, with whatever it inherited already in place.
        let directory = "/proc/\(process.supervisorID)/fd"
        // The supervisor (Python) opens and closes descriptors of its own as it loads and starts the program, so one
        // listed may be gone by the time it is read; the file held here, inherited, would stay for its whole life.
        let descriptors = try FileManager.default.contentsOfDirectory(atPath: directory)
        let targets = descriptors.compactMap {
            try? FileManager.default.destinationOfSymbolicLink(atPath: "\(directory)/\($0)")
        }
        #expect(Set(descriptors).isSuperset(of: ["0", "1", "2"]))
        #expect(!targets.contains(marker.path), "the supervisor holds \(marker.path): \(targets)")
    }

    /// Processes started at the same moment from several threads each stop on their own, promptly: none may hold
    /// what tells another's supervisor that it is to stop (the write end of that one's pipe), or what tells this
    /// process that another ended. With Foundation's `Process` on Linux, a program started by another thread at the
    /// wrong moment inherited the socket by which `Process` learns that its program ended; its end then went
    /// unnoticed while that other program ran, and `stop()` waited for a program already gone (a zombie), on a
    /// thread of the pool: two such waits held up the whole suite. (`ChildProcess` now starts its supervisor with
    /// `posix_spawn`, closing every other descriptor in it.)
    @Test func processesStartedTogetherEachStopOnTheirOwn() throws {
        for _ in 0..<10 {
            let started = StartedProcesses()
            DispatchQueue.concurrentPerform(iterations: 8) { _ in
                guard let process = try? ChildProcess("/bin/sleep", ["300"]) else { return }
                started.append(process)
            }
            let processes = started.all
            try #require(processes.count == 8)
            // Last started first: a program that inherited another's socket started while that other was starting,
            // so before that other's start returned.
            for (index, process) in processes.enumerated().reversed() {
                let stopped = DispatchSemaphore(value: 0)
                Thread.detachNewThread {
                    process.stop()
                    stopped.signal()
                }
                guard stopped.wait(timeout: .now() + 10) == .success else {
                    Issue.record("process \(index) of 8 did not stop within 10 s while the others ran")
                    // The others hold what it waits for: stopping them lets it end (or at least the suite go on).
                    for other in processes { other.stop() }
                    _ = stopped.wait(timeout: .now() + 30)
                    return
                }
            }
        }
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

/// Processes started from several threads, in the order their starts returned.
private final class StartedProcesses: @unchecked Sendable {
    // Safety: `processes` is read and written only while `lock` is held.
    private let lock = NSLock()
    private var processes: [ChildProcess] = []

    func append(_ process: ChildProcess) {
        lock.withLock { processes.append(process) }
    }

    var all: [ChildProcess] {
        lock.withLock { processes }
    }
}
