import Testing
@testable import Switchboard

/// Checks that every outcome of a group (batch members, chain steps) is `.notSent`, with the reason the group
/// stopped; `what` names the unit in the message ("member", "step").
func expectNotSent(
    _ outcomes: ArraySlice<Result<Response, HTTPError>>, because reason: String, what: String = "member",
    sourceLocation: SourceLocation = #_sourceLocation
) {
    for (index, outcome) in zip(outcomes.indices, outcomes) {
        guard case .failure(let error) = outcome else {
            Issue.record("\(what) \(index + 1) should not have been sent", sourceLocation: sourceLocation)
            continue
        }
        #expect(error.code == .notSent, sourceLocation: sourceLocation)
        #expect(error.message.contains(reason), sourceLocation: sourceLocation)
    }
}
