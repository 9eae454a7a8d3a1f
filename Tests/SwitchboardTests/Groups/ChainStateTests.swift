import Testing
@testable import Switchboard

/// The chain's decisions, driven step by step as a value: no center, no engine, no tasks.
@Suite struct ChainStateTests {
    private func ok(_ status: Int = 200) -> Result<Response, HTTPError> { .success(Response(status: status)) }
    private let failed: Result<Response, HTTPError> = .failure(HTTPError(.transport, "reset"))

    private struct Declined: Error {}

    @Test func stepsRunInOrderAndEachSeesTheResponsesBefore() {
        var state = ChainState(count: 3, previous: nil)
        #expect(state.next == 0)
        state.finish(0, ok(201))
        #expect(state.next == 1)
        #expect(state.responses.map(\.status) == [201])
        state.finish(1, ok(202))
        #expect(state.next == 2)
        state.finish(2, ok(203))
        #expect(state.next == nil, "every step ran")
        #expect(state.stopReason == nil)
        #expect(state.outcomes.map { (try? $0.get())?.status } == [201, 202, 203])
    }

    @Test func aFailedStepEndsTheChainAndTheRestAreNotSent() {
        var state = ChainState(count: 4, previous: nil)
        state.finish(0, ok())
        state.finish(1, failed)
        #expect(state.next == nil)
        let outcomes = state.outcomes
        #expect(outcomes[0].isSuccess)
        #expect(outcomes[1].failureCode == .transport, "the failure is the step's own")
        expectNotSent(outcomes[2...], because: "step 2 failed (transport)", what: "step")
    }

    @Test func aDeclinedStepIsNotSentAndNamesItsError() {
        var state = ChainState(count: 3, previous: nil)
        state.finish(0, ok())
        state.declined(1, because: Declined())
        #expect(state.next == nil)
        let outcomes = state.outcomes
        guard case .failure(let error) = outcomes[1] else {
            Issue.record("the declined step should fail")
            return
        }
        #expect(error.code == .notSent)
        #expect(error.message.contains("step 2 of 3 declined to send"))
        #expect(error.underlying is Declined)
        expectNotSent(outcomes[2...], because: "step 2 declined", what: "step")
    }

    @Test func aStoppedChainSendsNothingMoreAndTheFirstReasonStays() {
        var state = ChainState(count: 3, previous: nil)
        state.finish(0, ok())
        state.stop(because: "the chain was cancelled")
        state.stop(because: "something later")
        #expect(state.next == nil)
        #expect(state.stopReason == "the chain was cancelled")
        expectNotSent(state.outcomes[1...], because: "the chain was cancelled", what: "step")
    }

    @Test func aRetryGoesOnFromTheFirstStepWithoutASuccess() {
        let previous: [Result<Response, HTTPError>] = [ok(201), ok(202), failed, ok(204)]
        var state = ChainState(count: 4, previous: previous)
        #expect(state.next == 2, "the leading successes are kept")
        #expect(state.responses.map(\.status) == [201, 202])
        state.finish(2, ok(203))
        #expect(state.next == 3, "a success after the failure is not kept: it came from other inputs")
    }

    @Test func previousOutcomesOfAnotherLengthAreIgnored() {
        let state = ChainState(count: 2, previous: [ok(), ok(), ok()])
        #expect(state.next == 0)
        #expect(state.responses.isEmpty)
    }
}
