import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A server process (Hypercorn, `openssl s_server`, anything a test or the benchmark starts) that cannot outlive
/// the process that started it.
///
/// The program runs in a session and process group of its own under a small supervisor (Python, which the suites
/// already need). The supervisor reads a pipe whose only writer is this process: when `stop()` closes it, or when
/// this process ends in any way (a failed test, a time limit, Ctrl-C, a crash, `SIGKILL`), the read ends and the
/// supervisor kills the whole group, including any worker processes the program forked, and waits until the group
/// is gone (on Linux it is their subreaper, so it reaps the workers itself instead of waiting for `init` to). A `SIGINT`, `SIGTERM` or `SIGHUP` sent to the supervisor does the same.
public final class ChildProcess: @unchecked Sendable {
    // Safety: `supervisor` and `pipe` are set in `init`; `pipe` is only read and changed under `lock`, in `stop()`.
    private let supervisor = Process()
    private let lock = NSLock()
    private var pipe: Int32

    /// The supervisor: starts the program in a new session, then reads its standard input until it ends.
    static let script = """
        import ctypes, os, signal, subprocess, sys, time
        try:
            ctypes.CDLL(None).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER: the group's orphans are reaped here
        except Exception:
            pass
        child = subprocess.Popen(sys.argv[1:], start_new_session=True, stdin=subprocess.DEVNULL)
        def end(*_):
            try:
                os.killpg(child.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline:
                try:
                    if os.waitpid(-1, os.WNOHANG) == (0, 0):
                        time.sleep(0.005)
                except ChildProcessError:
                    break
            while time.monotonic() < deadline:
                try:
                    os.killpg(child.pid, 0)
                except ProcessLookupError:
                    break
                time.sleep(0.01)
            os._exit(0)
        for number in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            signal.signal(number, end)
        while os.read(0, 4096):
            pass
        end()
        """

    /// Starts `executable` with `arguments`. Standard output and error go to the null device unless given.
    public init(
        _ executable: String, _ arguments: [String], environment: [String: String]? = nil,
        directory: URL? = nil, output: FileHandle = .nullDevice, error: FileHandle = .nullDevice
    ) throws {
        var ends: [Int32] = [0, 0]
        // Both ends are made close-on-exec as they are made (a socket pair, since Glibc's module has no `pipe2`), so
        // that a process another thread starts meanwhile does not inherit them.
        #if canImport(Glibc)
        let made = socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &ends)
        #else
        let made = Darwin.pipe(&ends)
        if made == 0 {
            _ = fcntl(ends[0], F_SETFD, FD_CLOEXEC)
            _ = fcntl(ends[1], F_SETFD, FD_CLOEXEC)
        }
        #endif
        guard made == 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EMFILE) }
        pipe = ends[1]
        supervisor.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        supervisor.arguments = ["python3", "-c", Self.script, executable] + arguments
        if let environment { supervisor.environment = environment }
        if let directory { supervisor.currentDirectoryURL = directory }
        // The read end becomes the supervisor's standard input (a dup2, which leaves it open across exec); the
        // write end is close-on-exec, so no other child of this process holds it open.
        supervisor.standardInput = FileHandle(fileDescriptor: ends[0], closeOnDealloc: true)
        supervisor.standardOutput = output
        supervisor.standardError = error
        do {
            try ProcessLaunch.run(supervisor)
        } catch {
            close(ends[1])
            throw error
        }
    }

    deinit { stop() }

    /// Whether the supervisor (and so the program's group) is still running.
    public var isRunning: Bool { supervisor.isRunning }

    /// Ends the program and every process in its group, and waits until they are gone. Safe to call more than once.
    public func stop() {
        let end = lock.withLock { () -> Int32 in
            defer { pipe = -1 }
            return pipe
        }
        guard end >= 0 else { return }
        close(end)
        supervisor.waitUntilExit()
    }
}

/// Starts processes one at a time.
///
/// Foundation's `Process` on Linux learns that its program ended when a socket it hands the program closes. It makes
/// that socket without close-on-exec, and closes its own copy only once the program has started, so a program another
/// thread starts in that moment inherits it; the first program's end then goes unnoticed while the second runs:
/// `waitUntilExit()` spins on (and a `terminationHandler` never runs) for a program already gone. Every process the
/// suites and the benchmark start goes through here. (A started program cannot just close what it inherited: the
/// socket Foundation handed it is among those, and Foundation takes its closing for the program's end, then waits
/// for that end on the one thread that watches every process.)
public enum ProcessLaunch {
    private static let lock = NSLock()

    /// Runs `process` (`Process.run()`), while no other process is being started through here.
    public static func run(_ process: Process) throws {
        lock.lock()
        defer { lock.unlock() }
        try process.run()
    }
}

/// Processes still alive that carry a marker in their environment: what a run started (its children inherit the
/// marker) and left behind. Linux only (it reads `/proc`); elsewhere it finds nothing.
public enum LeftoverProcesses {
    public struct Found: Sendable, CustomStringConvertible {
        public var pid: Int32
        public var command: String
        public var description: String { "\(pid): \(command)" }
    }

    /// Every process other than this one and its ancestors whose environment has `name=value`.
    public static func find(name: String, value: String) -> [Found] {
        let marker = Data("\(name)=\(value)".utf8)
        let mine = ancestors()
        guard let entries = try? FileManager.default.contentsOfDirectory(atPath: "/proc") else { return [] }
        return entries.compactMap { entry -> Found? in
            guard let pid = Int32(entry), !mine.contains(pid),
                let environment = FileManager.default.contents(atPath: "/proc/\(pid)/environ"),
                environment.split(separator: 0).contains(where: { $0.elementsEqual(marker) })
            else { return nil }
            let arguments = FileManager.default.contents(atPath: "/proc/\(pid)/cmdline") ?? Data()
            let command = arguments.split(separator: 0).map { String(decoding: $0, as: UTF8.self) }
                .joined(separator: " ")
            return Found(pid: pid, command: command)
        }
        .sorted { $0.pid < $1.pid }
    }

    /// A process's state letter (`R`, `S`, `Z` for a zombie, ...) and its parent's id, from `/proc/PID/stat`; `nil`
    /// when it is gone.
    public static func status(of pid: Int32) -> (state: Substring, parent: Int32)? {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let close = stat.lastIndex(of: ")")
        else { return nil }
        // After "pid (name) ": the state, then the parent's id.
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        guard fields.count > 1, let parent = Int32(fields[1]) else { return nil }
        return (fields[0], parent)
    }

    private static func ancestors() -> Set<Int32> {
        var found: Set<Int32> = []
        var pid = getpid()
        while pid > 1, found.insert(pid).inserted, let parent = status(of: pid)?.parent {
            pid = parent
        }
        return found
    }
}

extension FileHandle {
    /// Reads up to the next newline (which is dropped) or the end, a byte at a time so that nothing after the line
    /// is taken: the first line a child process prints, say.
    public func readLine() throws -> String {
        var line = Data()
        while let byte = try read(upToCount: 1), !byte.isEmpty, byte != Data("\n".utf8) {
            line.append(byte)
        }
        return String(decoding: line, as: UTF8.self)
    }
}
