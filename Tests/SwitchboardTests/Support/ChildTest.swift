import Foundation
import SwitchboardTestSupport

#if os(Linux)
/// Runs one test of this binary in a child process, for what cannot be set up in this process without affecting
/// every other test running beside it (an environment variable libcurl reads, a mount). The child's environment is
/// this one's plus `environment`; it runs `command` (a program that execs the rest of its arguments, such as
/// `unshare`, or nothing) then this binary with `--filter test`. The child reports by writing a file; this throws when
/// it fails or does not end within two minutes, with the end of what it printed.
enum ChildTest {
    static func run(
        _ test: String, environment: [String: String], command: [String] = [], scratch: Scratch
    ) async throws {
        let log = scratch.file("child-\(test).log")
        _ = FileManager.default.createFile(atPath: log.path, contents: nil)
        let binary = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
        let arguments = command + [binary.path, "--testing-library", "swift-testing", "--filter", test]
        let output = try FileHandle(forWritingTo: log)
        defer { try? output.close() }
        let child = try ProcessLaunch.spawn(
            arguments[0], Array(arguments.dropFirst()),
            environment: ProcessInfo.processInfo.environment.merging(environment) { _, own in own },
            output: output, error: output)
        let deadline = Task {
            try await Task.sleep(for: .seconds(120))
            kill(child, SIGTERM)
        }
        // `waitpid` blocks, and a thread of Swift's pool must not.
        let status = try await offPool { ProcessLaunch.exitStatus(of: child) }
        deadline.cancel()
        guard status == 0 else {
            let transcript = String(decoding: (try? Data(contentsOf: log)) ?? Data(), as: UTF8.self)
            throw Failure(status: status, transcript: String(transcript.suffix(4000)))
        }
    }

    struct Failure: Error, CustomStringConvertible {
        let status: Int32
        let transcript: String
        var description: String { "the child process exited with \(status):\n\(transcript)" }
    }
}
#endif
