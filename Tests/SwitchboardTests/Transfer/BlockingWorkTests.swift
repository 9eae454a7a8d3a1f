import Foundation
import Testing
@testable import Switchboard

/// Long file work runs on a thread of its own, not on a thread the task pool or Dispatch's global queues share.
@Suite struct BlockingWorkTests {
    @Test func workRunsOnAThreadOfItsOwnAndReturnsItsResult() async {
        let seen = await BlockingWork.run { () -> String in
            Thread.current.name ?? "unnamed"
        }
        #expect(seen == BlockingWork.threadName)
        #expect(seen == "sb.file-work", "not a dispatch worker's (`...default-qos`) nor the test's own thread")
        let value = await BlockingWork.run { 6 * 7 }
        #expect(value == 42)
    }
}
