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
///
/// Starting and stopping processes blocks (reading a pipe, waiting for a process to end), so it runs through
/// `offPool`, never on a thread of Swift's pool: on two cores, two of these tests at once held up every other test's
/// tasks for half a minute.
@Suite(.enabled(if: canSuperviseProcesses, "needs python3 and /proc"))
struct ChildProcessTests {
    /// A shell that forks a worker (a background `sleep`) and then sleeps itself, as Hypercorn or gunicorn fork
    /// workers; it prints both process ids.
    private static func startGroup(marker: String? = nil) throws -> (ChildProcess, [Int32]) {
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
    private static func isAlive(_ pid: Int32) -> Bool {
        guard let status = LeftoverProcesses.status(of: pid) else { return false }
        return status.state != "Z"
    }

    @Test func stoppingEndsTheProgramAndTheWorkersItForked() async throws {
        let (process, pids) = try await offPool { try Self.startGroup() }
        try await Self.stopping(process) {
            try #require(pids.count == 2)
            #expect(pids.allSatisfy(Self.isAlive))
        }
        #expect(!process.isRunning)
        #expect(!pids.contains(where: Self.isAlive), "still running: \(pids.filter(Self.isAlive))")
        try await offPool { process.stop() }  // a second stop does nothing
    }

    @Test func releasingTheLastReferenceStopsIt() async throws {
        // Released on the thread that started it: the release stops it, and stopping waits.
        let (pids, wasRunning) = try await offPool { () throws -> ([Int32], Bool) in
            let (process, pids) = try Self.startGroup()
            return (pids, process.isRunning)
        }
        #expect(wasRunning)
        try #require(pids.count == 2)
        #expect(!pids.contains(where: Self.isAlive), "still running: \(pids.filter(Self.isAlive))")
    }

    /// A `SIGTERM` sent to the supervisor ends the program and its workers, as stopping does: the supervisor starts
    /// with no signal blocked (started from a thread of Swift's pool, which blocks nearly all, it would inherit that
    /// mask unless told otherwise, and the signal would stay pending for good).
    @Test func aSignalToTheSupervisorEndsTheGroup() async throws {
        let (process, pids) = try await offPool { try Self.startGroup() }
        try await Self.stopping(process) {
            try #require(pids.count == 2)
            // Sent once the supervisor has set its handler (right after it started the program).
            let deadline = ContinuousClock.now + .seconds(10)
            while !Self.handles(SIGTERM, process.supervisorID), ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(10))
            }
            try #require(Self.handles(SIGTERM, process.supervisorID))
            kill(process.supervisorID, SIGTERM)
            while pids.contains(where: Self.isAlive), ContinuousClock.now < deadline + .seconds(10) {
                try await Task.sleep(for: .milliseconds(20))
            }
            #expect(!pids.contains(where: Self.isAlive), "still running: \(pids.filter(Self.isAlive))")
        }
    }

    /// Runs `body`, then stops `process` (off the pool), whether `body` threw or not.
    private static func stopping(_ process: ChildProcess, _ body: () async throws -> Void) async throws {
        do {
            try await body()
        } catch {
            _ = try? await offPool { process.stop() }
            throw error
        }
        try await offPool { process.stop() }
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
    @Test func aStartedProgramHoldsNoneOfThisProcesssDescriptors() async throws {
        let scratch = Scratch()
        let marker = scratch.file("held-open")
        try Data("x".utf8).write(to: marker)
        let inherited = open(marker.path, O_RDONLY)
        try #require(inherited >= 0)
        defer { close(inherited) }
        let process = try await offPool { try ChildProcess("/bin/sleep", ["300"]) }
        try await Self.stopping(process) {
            // `posix_spawn` returns once the supervisor has been started, with whatever it inherited already in place.
            let directory = "/proc/\(process.supervisorID)/fd"
            // The supervisor (Python) opens and closes descriptors of its own as it loads and starts the program, so
            // one listed may be gone by the time it is read; the file held here, inherited, would stay for its whole
            // life.
            let descriptors = try FileManager.default.contentsOfDirectory(atPath: directory)
            let targets = descriptors.compactMap {
                try? FileManager.default.destinationOfSymbolicLink(atPath: "\(directory)/\($0)")
            }
            #expect(Set(descriptors).isSuperset(of: ["0", "1", "2"]))
            #expect(!targets.contains(marker.path), "the supervisor holds \(marker.path): \(targets)")
        }
    }

    /// Processes started at the same moment from several threads each stop on their own, promptly: none may hold
    /// what tells another's supervisor that it is to stop (the write end of that one's pipe), or what tells this
    /// process that another ended. With Foundation's `Process` on Linux, a program started by another thread at the
    /// wrong moment inherited the socket by which `Process` learns that its program ended; its end then went
    /// unnoticed while that other program ran, and `stop()` waited for a program already gone (a zombie), on a
    /// thread of the pool: two such waits held up the whole suite. (`ChildProcess` now starts its supervisor with
    /// `posix_spawn`, closing every other descriptor in it.)
    @Test func processesStartedTogetherEachStopOnTheirOwn() async throws {
        // Three rounds, not more: each starts eight Python supervisors (about half a second of CPU), beside the rest
        // of the suite on two cores.
        for _ in 0..<3 {
            let failure = try await offPool { Self.startTogetherAndStop(8) }
            if let failure {
                Issue.record("\(failure)")
                return
            }
        }
    }

    /// Starts `count` processes from as many threads at once, then stops them one by one, last started first (a
    /// program that inherited another's socket started while that other was starting, so before its start
    /// returned); what went wrong, or `nil`. Blocks: run it through `offPool`.
    private static func startTogetherAndStop(_ count: Int) -> String? {
        let started = StartedProcesses()
        let group = DispatchGroup()
        for _ in 0..<count {
            group.enter()
            Thread.detachNewThread {
                if let process = try? ChildProcess("/bin/sleep", ["300"]) { started.append(process) }
                group.leave()
            }
        }
        group.wait()
        let processes = started.all
        guard processes.count == count else {
            for process in processes { process.stop() }
            return "\(processes.count) of \(count) processes started"
        }
        for (index, process) in processes.enumerated().reversed() {
            let stopped = DispatchSemaphore(value: 0)
            Thread.detachNewThread {
                process.stop()
                stopped.signal()
            }
            guard stopped.wait(timeout: .now() + 10) == .success else {
                // The others hold what it waits for: stopping them lets it end (or at least the suite go on).
                for other in processes { other.stop() }
                _ = stopped.wait(timeout: .now() + 30)
                return "process \(index) of \(count) did not stop within 10 s while the others ran"
            }
        }
        return nil
    }

    /// The check the benchmark runs at its end (and `.ci/run` runs in Python): it names what is still running with
    /// the run's marker, and nothing once it has stopped.
    @Test func leftoversAreFoundByTheMarkerTheyInherited() async throws {
        let marker = UUID().uuidString
        let (process, pids) = try await offPool { try Self.startGroup(marker: marker) }
        try await Self.stopping(process) {
            try #require(pids.count == 2)
            // The shell prints its ids just before it execs `sleep 301`; while a process execs, /proc may not show
            // its environment for an instant, so look again (for up to 2 s) until the exec is done.
            var running = LeftoverProcesses.find(name: "SWITCHBOARD_CHILD_PROCESS_TEST", value: marker)
            var looks = 1
            while looks < 100,
                !(pids.allSatisfy { pid in running.contains { $0.pid == pid } }
                    && running.contains { $0.command.contains("sleep 301") })
            {
                // Not a blocking sleep: it would hold a thread of the pool.
                try await Task.sleep(for: .milliseconds(20))
                running = LeftoverProcesses.find(name: "SWITCHBOARD_CHILD_PROCESS_TEST", value: marker)
                looks += 1
            }
            for pid in pids {
                #expect(running.contains { $0.pid == pid }, "\(running)")
            }
            #expect(running.contains { $0.command.contains("sleep 301") })
            #expect(LeftoverProcesses.find(name: "SWITCHBOARD_CHILD_PROCESS_TEST", value: "other").isEmpty)
        }
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
