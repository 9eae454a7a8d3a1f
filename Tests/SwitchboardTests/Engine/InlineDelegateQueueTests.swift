import Foundation
import Testing
@testable import Switchboard

#if canImport(FoundationNetworking)
import FoundationNetworking

/// URLSessionEngine on Linux has URLSession call its delegate in URLSession's own work queue: what is added to the
/// delegate queue runs at once, in the adding thread, and nothing waits in between. (That the delegate never waits on
/// that queue is shown by the `basic-auth` tests in `RequestTests`: URLSession answers the refused challenge with a
/// `cancel()` that waits for the work queue, and the exchange would hang if the answer came from inside it.)
@Suite struct InlineDelegateQueueTests {
    private final class Record: @unchecked Sendable {
        // Safety: written and read only in the test's own thread (the queue runs what it is given in the caller's).
        var events: [String] = []
        var threads: Set<ObjectIdentifier> = []
    }

    @Test func whatIsAddedRunsAtOnceInTheAddingThread() {
        let queue = InlineDelegateQueue()
        let record = Record()
        let caller = ObjectIdentifier(Thread.current)
        queue.addOperation {
            record.events.append("block")
            record.threads.insert(ObjectIdentifier(Thread.current))
        }
        record.events.append("after the block")
        queue.addOperation(
            BlockOperation {
                record.events.append("operation")
                record.threads.insert(ObjectIdentifier(Thread.current))
            })
        record.events.append("after the operation")
        #expect(record.events == ["block", "after the block", "operation", "after the operation"])
        #expect(record.threads == [caller])
        #expect(queue.operationCount == 0)
    }

    @Test func theEnginesSessionCallsItsDelegateThere() {
        let engine = URLSessionEngine()
        #expect(engine.session.delegateQueue is InlineDelegateQueue)
    }
}
#endif
