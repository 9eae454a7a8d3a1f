import Testing
@testable import Switchboard

/// The batch's decisions, driven step by step as a value: no center, no engine, no tasks.
@Suite struct BatchStateTests {
    private let ok: Result<Response, HTTPError> = .success(Response(status: 200))
    private let failed: Result<Response, HTTPError> = .failure(HTTPError(.transport, "reset"))
    private let members = (0..<4).map { _ in Request { $0.api = "x" } }

    private func id(_ index: Int) -> RequestID { RequestID(rawValue: 1_000 + UInt64(index)) }

    @Test func membersStartInOrderAndTheRunEndsWithTheLast() {
        var state = BatchState(count: 3, previous: nil, failFast: false)
        let step1 = state.takeCompletion()
        #expect(!step1)
        let step2 = state.next()
        #expect(step2 == 0)
        let step3 = state.begin(0, id: id(0))
        #expect(step3)
        let step4 = state.next()
        #expect(step4 == 1)
        let step5 = state.begin(1, id: id(1))
        #expect(step5)
        let step6 = state.finish(1, failed)
        #expect(!step6, "a failure does not stop a batch that waits for all")
        let step7 = state.takeCompletion()
        #expect(!step7, "member 0 still runs, member 2 is not taken")
        let step8 = state.next()
        #expect(step8 == 2)
        let step9 = state.begin(2, id: id(2))
        #expect(step9)
        let step10 = state.finish(0, ok)
        #expect(step10 == false)
        let step11 = state.finish(2, ok)
        #expect(step11 == false)
        let step12 = state.next()
        #expect(step12 == nil)
        let step13 = state.takeCompletion()
        #expect(step13)
        let step14 = state.takeCompletion()
        #expect(!step14, "the run ends once")
        let outcomes = state.outcomes(Array(members.prefix(3)))
        #expect(outcomes.map { $0.isSuccess } == [true, false, true])
    }

    @Test func theFirstFailureStopsAFailFastBatch() throws {
        var state = BatchState(count: 4, previous: nil, failFast: true)
        for index in 0..<2 {
            let step15 = state.next()
            #expect(step15 == index)
            let step16 = state.begin(index, id: id(index))
            #expect(step16)
        }
        let step17 = state.finish(1, failed)
        #expect(step17, "the first failure stops the batch: the caller cancels the others")
        #expect(state.trigger == 1)
        #expect(state.running == [id(0)], "what is left to cancel")
        let step18 = state.next()
        #expect(step18 == nil, "nothing starts after the stop")
        let step19 = state.takeCompletion()
        #expect(!step19)
        let cancelledStops = state.finish(0, .failure(HTTPError(.cancelled, "cancelled")))
        #expect(!cancelledStops, "only the first failure stops it")
        #expect(state.trigger == 1)
        let step20 = state.takeCompletion()
        #expect(step20)
        expectNotSent(state.outcomes(members)[2...], because: "member 2 failed first")
    }

    @Test func aMemberTakenWhileTheBatchStopsIsDropped() {
        var state = BatchState(count: 2, previous: nil, failFast: false)
        let step21 = state.next()
        #expect(step21 == 0)
        let step22 = state.stop(because: "the batch was cancelled")
        #expect(step22.isEmpty, "nothing was running yet")
        let step23 = state.takeCompletion()
        #expect(!step23, "member 0 is being registered")
        let step24 = state.begin(0, id: id(0))
        #expect(!step24, "the stop came between taking and starting it")
        let step25 = state.takeCompletion()
        #expect(step25)
        expectNotSent(state.outcomes(Array(members.prefix(2)))[...], because: "the batch was cancelled")
    }

    @Test func theFirstStopReasonIsKept() {
        var state = BatchState(count: 2, previous: nil, failFast: false)
        let step26 = state.next()
        #expect(step26 == 0)
        let step27 = state.begin(0, id: id(0))
        #expect(step27)
        let step28 = state.stop(because: "first")
        #expect(step28 == [id(0)], "running members are returned to be cancelled")
        _ = state.stop(because: "second")
        #expect(state.stopReason == "first")
    }

    @Test func aRetryRunsOnlyTheMembersThatHadNoSuccess() {
        var state = BatchState(count: 3, previous: [ok, failed, ok], failFast: false)
        #expect(state.pending == 1)
        let step29 = state.next()
        #expect(step29 == 1)
        let step30 = state.next()
        #expect(step30 == nil)
        let step31 = state.begin(1, id: id(1))
        #expect(step31)
        _ = state.finish(1, ok)
        let step32 = state.takeCompletion()
        #expect(step32)
        #expect(state.outcomes(Array(members.prefix(3))).allSatisfy { $0.isSuccess })
    }

    @Test func previousResultsOfAnotherSizeAreIgnored() {
        let state = BatchState(count: 3, previous: [ok], failFast: false)
        #expect(state.pending == 3)
    }

    @Test func progressSumsEachMembersLatestReport() {
        var sums = BatchProgress(count: 3, toRun: 3)
        func report(_ index: Int, _ done: Int64, of total: Int64?) -> TransferProgress {
            sums.report(index, TransferProgress(direction: .download, completed: done, expected: total)).progress
        }
        let first = report(0, 10, of: 100)
        #expect(first == TransferProgress(direction: .download, completed: 10, expected: 100))
        let second = report(1, 5, of: 50)
        #expect(second == TransferProgress(direction: .download, completed: 15, expected: 150))
        let replaced = report(0, 60, of: 100)
        #expect(
            replaced == TransferProgress(direction: .download, completed: 65, expected: 150),
            "a member's new report replaces its old one")
        let unknown = report(2, 7, of: nil)
        #expect(unknown.expected == nil, "a member without a total leaves the sum without one")
        let known = report(2, 9, of: 9)
        #expect(known == TransferProgress(direction: .download, completed: 74, expected: 159))
    }

    @Test func theBatchsReportIsFinalOnlyWhenEveryMemberToRunIsComplete() {
        // Member 1 succeeded in an earlier run: it is not run again, and never reports.
        let state = BatchState(
            count: 3, previous: [.failure(HTTPError(.transport, "x")), ok, .failure(HTTPError(.transport, "y"))],
            failFast: false)
        var sums = BatchProgress(count: 3, toRun: state.pending)
        #expect(state.pending == 2)
        func final(_ index: Int, _ done: Int64, of total: Int64?) -> Bool {
            sums.report(index, TransferProgress(direction: .download, completed: done, expected: total)).final
        }
        #expect(!final(0, 10, of: 10), "one member's complete report is not the batch's")
        #expect(!final(2, 5, of: 10))
        #expect(final(2, 10, of: 10), "every member that runs has all its bytes")
        #expect(!final(0, 0, of: 10), "a member that starts again (a retry) makes it not final again")
        #expect(final(0, 10, of: 10))
    }
}
