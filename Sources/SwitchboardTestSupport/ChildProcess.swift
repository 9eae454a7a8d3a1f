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
/// is gone (on Linux it is their subreaper, so it reaps the workers itself instead of waiting for `init` to). A
/// `SIGINT`, `SIGTERM` or `SIGHUP` sent to the supervisor does the same.
///
/// The supervisor is started with `posix_spawn` (`ProcessLaunch.spawn`), not Foundation's `Process`, and waited for
/// with `waitpid`: see `ProcessLaunch` for what `Process` does on Linux when many descriptors are open.
public final class ChildProcess: @unchecked Sendable {
    // Safety: `supervisor` is set in `init` and never changed; `pipe` and `reaped` are only read and changed under
    // `lock`.
    private let supervisor: pid_t
    private let lock = NSLock()
    private var pipe: Int32
    private var reaped = false

    /// The supervisor: starts the program (`argv[2:]`, in the directory `argv[1]` unless it is empty) in a new
    /// session, then reads its standard input until it ends.
    static let script = """
        import ctypes, os, signal, subprocess, sys, time
        try:
            ctypes.CDLL(None).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER: the group's orphans are reaped here
        except Exception:
            pass
        child = subprocess.Popen(
            sys.argv[2:], cwd=sys.argv[1] or None, start_new_session=True, stdin=subprocess.DEVNULL)
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
        // The read end becomes the supervisor's standard input; this process keeps only the write end.
        defer { close(ends[0]) }
        pipe = ends[1]
        let environment = environment ?? ProcessInfo.processInfo.environment
        do {
            supervisor = try ProcessLaunch.spawn(
                "/usr/bin/env", ["python3", "-c", Self.script, directory?.path ?? "", executable] + arguments,
                environment: environment, input: FileHandle(fileDescriptor: ends[0], closeOnDealloc: false),
                output: output, error: error)
        } catch {
            close(ends[1])
            throw error
        }
    }

    deinit { stop() }

    /// The supervisor's process id (the program runs under it, in a process group of its own).
    public var supervisorID: pid_t { supervisor }

    /// Whether the supervisor (and so the program's group) is still running.
    public var isRunning: Bool {
        lock.withLock {
            if !reaped {
                // Its id once it has ended (its status collected), 0 while it runs.
                let result = waitpid(supervisor, nil, WNOHANG)
                reaped = result == supervisor || (result < 0 && errno == ECHILD)
            }
            return !reaped
        }
    }

    /// Ends the program and every process in its group, and waits until they are gone. Safe to call more than once.
    public func stop() {
        let end = lock.withLock { () -> Int32 in
            defer { pipe = -1 }
            return pipe
        }
        guard end >= 0 else { return }
        close(end)
        lock.withLock {
            guard !reaped else { return }
            _ = ProcessLaunch.exitStatus(of: supervisor)
            reaped = true
        }
    }
}

/// Starts the processes the suites and the benchmark start, one at a time, with `posix_spawn`.
///
/// Not with Foundation's `Process`, which on Linux has two faults here. It learns that its program ended when a
/// socket it hands the program closes, made without close-on-exec and closed on its side only once the program has
/// started, so a program another thread started in that moment inherited it, and the first program's end went
/// unnoticed while the second ran (`waitUntilExit()` spun on for a program already gone). And `Process.run()` lists
/// `/proc/self/fd` to close every descriptor in the new process, copying 256 bytes of each entry's name: past about
/// 1,360 open descriptors one read of that directory fills glibc's buffer, and the copy of its last entry runs past
/// the buffer's end (a crash inside `Process.run`, seen once in CI).
public enum ProcessLaunch {
    private static let lock = NSLock()

    /// Starts the program at `path` with `arguments` (after `argv[0]`, which is `path`) and `environment` (this
    /// process's unless given), while no other process is being started through here, and returns its process id
    /// (for `exitStatus(of:)`). Its standard input, output and error are `input`, `output` and `error` (the null
    /// device unless given); no other descriptor of this process's is left open in it, and no signal is blocked.
    public static func spawn(
        _ path: String, _ arguments: [String], environment: [String: String] = ProcessInfo.processInfo.environment,
        input: FileHandle = .nullDevice, output: FileHandle = .nullDevice, error: FileHandle = .nullDevice
    ) throws -> pid_t {
        lock.lock()
        defer { lock.unlock() }
        // Each source is a copy numbered 10 or above, so that none is also a target (a descriptor duplicated onto
        // itself would keep its close-on-exec flag), closed here once the program has started.
        var sources: [Int32] = []
        defer { for source in sources { close(source) } }
        func source(_ descriptor: Int32) throws -> Int32 {
            let copy = fcntl(descriptor, F_DUPFD_CLOEXEC, 10)
            guard copy >= 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EBADF) }
            sources.append(copy)
            return copy
        }
        func source(_ handle: FileHandle) throws -> Int32 {
            guard handle === FileHandle.nullDevice || handle.fileDescriptor < 0 else {
                return try source(handle.fileDescriptor)
            }
            let null = open("/dev/null", O_RDWR | O_CLOEXEC)
            guard null >= 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .ENOENT) }
            defer { close(null) }
            return try source(null)
        }
        let standard = [try source(input), try source(output), try source(error)]

        #if canImport(Glibc)
        var actions = posix_spawn_file_actions_t()
        var attributes = posix_spawnattr_t()
        #else
        var actions: posix_spawn_file_actions_t?
        var attributes: posix_spawnattr_t?
        #endif
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        for (target, descriptor) in standard.enumerated() {
            posix_spawn_file_actions_adddup2(&actions, descriptor, Int32(target))
        }
        // No signal blocked in the program, as Foundation's `Process` leaves it. The calling thread's mask is
        // inherited otherwise, and a thread of Swift's pool (of libdispatch's) blocks nearly every signal: the
        // supervisor's handlers for `SIGINT`, `SIGTERM` and `SIGHUP` would never run.
        var unblocked = sigset_t()
        sigemptyset(&unblocked)
        posix_spawnattr_setsigmask(&attributes, &unblocked)
        #if canImport(Glibc)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK))
        try closeTheRest(&actions)
        #else
        // Every descriptor not duplicated onto 0, 1 or 2 is closed in the program.
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_CLOEXEC_DEFAULT))
        #endif

        let argv = ([path] + arguments).map { strdup($0) } + [nil]
        defer { for argument in argv { free(argument) } }
        let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { for variable in envp { free(variable) } }
        var pid: pid_t = 0
        let result = posix_spawn(&pid, path, &actions, &attributes, argv, envp)
        guard result == 0 else { throw POSIXError(POSIXErrorCode(rawValue: result) ?? .ENOEXEC) }
        return pid
    }

    /// Runs the program at `path` with `arguments` to its end (see `spawn`), and returns its exit status and what it
    /// wrote to its standard output; its standard error goes to `error`. Blocks until the program ends.
    public static func output(
        of path: String, _ arguments: [String], error: FileHandle = .nullDevice
    ) throws -> (status: Int32, output: Data) {
        let output = Pipe()
        let program = try spawn(path, arguments, output: output.fileHandleForWriting, error: error)
        // The program has its own copy: the read below ends when it ends.
        try output.fileHandleForWriting.close()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        return (exitStatus(of: program), data)
    }

    /// Waits until the program started as `pid` (by `spawn`) ends, and returns its exit status: the code it exited
    /// with, or 128 plus the number of the signal that ended it.
    public static func exitStatus(of pid: pid_t) -> Int32 {
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 {
            guard errno == EINTR else { return -1 }
        }
        let signal = status & 0x7F
        return signal == 0 ? (status >> 8) & 0xFF : 128 + signal
    }

    #if canImport(Glibc)
    /// Closes every descriptor above 2 in the program: with glibc's `posix_spawn_file_actions_addclosefrom_np` (2.34
    /// and later; Swift's Glibc module does not show it, so it is looked up), else one close for each descriptor open
    /// now, read from `/proc/self/fd` (no other process starts meanwhile, and descriptors opened meanwhile by other
    /// threads are close-on-exec or not this program's business).
    private static func closeTheRest(_ actions: inout posix_spawn_file_actions_t) throws {
        typealias CloseFrom = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32
        if let symbol = dlsym(nil, "posix_spawn_file_actions_addclosefrom_np") {
            let closeFrom = unsafeBitCast(symbol, to: CloseFrom.self)
            let result = closeFrom(&actions, 3)
            guard result == 0 else { throw POSIXError(POSIXErrorCode(rawValue: result) ?? .EINVAL) }
            return
        }
        guard let directory = opendir("/proc/self/fd") else { return }
        defer { closedir(directory) }
        let own = dirfd(directory)
        while let entry = readdir(directory) {
            // The name is read where it stands, up to its terminating zero (never as a 256-byte copy).
            let name = withUnsafePointer(to: &entry.pointee.d_name) {
                $0.withMemoryRebound(to: CChar.self, capacity: 1) { String(cString: $0) }
            }
            if let descriptor = Int32(name), descriptor > 2, descriptor != own {
                posix_spawn_file_actions_addclose(&actions, descriptor)
            }
        }
    }
    #endif
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
