/// Runs the steps of a chain one after another, each built from the responses before it.
///
/// A step that throws declines: it and every later step are reported as `.notSent`. A failed step ends the chain
/// the same way. Cancelling the chain cancels the running step (which ends as `.cancelled`) and sends no other.
/// What to do is decided by `ChainState`; this builds and sends the steps.
struct ChainRun: Sendable {
    let runner: any MemberStarting
    let chain: ChainRequest
    let relay: ProgressRelay?

    /// Runs from the first step without a success in `previous` (for `retry`), or from the start.
    func run(previous: [Result<Response, HTTPError>]?) async -> [Result<Response, HTTPError>] {
        if let invalid = invalidReason() {
            return [.failure(HTTPError(.invalidGroup, invalid))]
        }
        var state = ChainState(count: chain.count, previous: previous)
        while let step = state.next {
            if Task.isCancelled {
                state.stop(because: "the chain was cancelled")
                break
            }
            var request: Request
            if step == 0 {
                request = chain.firstRequest!
            } else {
                request = Request()
                do {
                    try chain.steps[step - 1](&request, state.responses[step - 1], state.responses)
                } catch {
                    state.declined(step, because: error)
                    break
                }
            }
            let progress = relay.map { relay in { @Sendable (report: TransferProgress) in relay.report(report) } }
            state.finish(step, await runner.run(chain.step(request, at: step), progress: progress))
        }
        return state.outcomes
    }

    private func invalidReason() -> String? {
        if chain.firstRequest == nil {
            return chain.steps.isEmpty
                ? "the chain has no steps: start it with `chain.first { ... }`"
                : "the chain has \(chain.steps.count) `next` steps but no `first`"
        }
        if chain.firstCalls > 1 { return "`chain.first` was called \(chain.firstCalls) times; call it once" }
        return nil
    }
}
