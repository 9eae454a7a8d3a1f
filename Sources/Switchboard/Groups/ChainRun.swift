/// Runs the steps of a chain one after another, each built from the responses before it.
///
/// A step that throws declines: it and every later step are reported as `.notSent`. A failed step ends the chain
/// the same way. Cancelling the chain cancels the running step (which ends as `.cancelled`) and sends no other.
struct ChainRun: Sendable {
    let runner: MemberRunner
    let chain: ChainRequest
    let relay: ProgressRelay?

    /// Runs from the first step without a success in `previous` (for `retry`), or from the start.
    func run(previous: [Result<Response, HTTPError>]?) async -> [Result<Response, HTTPError>] {
        if let invalid = invalidReason() {
            return [.failure(HTTPError(.invalidGroup, invalid))]
        }
        let count = chain.count
        var results: [Result<Response, HTTPError>?] = Array(repeating: nil, count: count)
        var responses: [Response] = []
        if let previous, previous.count == count {
            for result in previous {
                guard case .success(let response) = result else { break }
                results[responses.count] = result
                responses.append(response)
            }
        }
        var stopReason: String?
        for step in responses.count..<count {
            if Task.isCancelled {
                stopReason = "the chain was cancelled"
                break
            }
            var request: Request
            if step == 0 {
                request = chain.firstRequest!
            } else {
                request = Request()
                do {
                    try chain.steps[step - 1](&request, responses[step - 1], responses)
                } catch {
                    results[step] = .failure(HTTPError(
                        .notSent, "step \(step + 1) of \(count) declined to send: \(error)", underlying: error))
                    stopReason = "step \(step + 1) declined"
                    break
                }
            }
            let progress = relay.map { relay in { @Sendable (report: TransferProgress) in relay.report(report) } }
            let result = await runner.run(Launcher.step(request, at: step, of: chain), progress: progress)
            results[step] = result
            switch result {
            case .success(let response):
                responses.append(response)
            case .failure(let error):
                stopReason = "step \(step + 1) failed (\(error.code))"
            }
            if stopReason != nil { break }
        }
        return results.enumerated().map { step, result in
            result ?? .failure(HTTPError(
                .notSent, "step \(step + 1) of \(count) was not sent: \(stopReason ?? "stopped")"))
        }
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
