import Foundation
import Testing
@testable import Switchboard

/// Long file work runs on a thread of its own, not on a thread the task pool or Dispatch's global queues share.
@Suite struct BlockingWorkTests {
    /// The calling thread's name as the system has it (the kernel's, on Linux).
    private static func currentThreadName() -> String {
        if let comm = try? String(contentsOfFile: "/proc/thread-self/comm", encoding: .utf8) {
            return comm.trimmingCharacters(in: .whitespacesAndNewlines)
        }
        return Thread.current.name ?? "unnamed"
    }

    @Test func workRunsOnAThreadOfItsOwnAndReturnsItsResult() async {
        // Many at once, started from the pool's threads: naming a new thread from Foundation was seen to fail in
        // about 1 of 40.
        let names = await withTaskGroup(of: String.self) { group in
            for _ in 0..<256 { group.addTask { await BlockingWork.run { Self.currentThreadName() } } }
            return await group.reduce(into: [String]()) { $0.append($1) }
        }
        #expect(names.count == 256)
        #expect(Set(names) == [BlockingWork.threadName], "not a dispatch worker's (`...default-qos`) nor the caller's")
        #expect(BlockingWork.threadName == "sb.file-work")
        let value = await BlockingWork.run { 6 * 7 }
        #expect(value == 42)
    }
}
