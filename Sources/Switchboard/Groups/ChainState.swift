/// The decisions of a chain run, as a value without I/O: which step runs next, what the steps so far returned, and
/// why the chain stopped. `ChainRun` drives it, building and sending each step.
///
/// A step is `next` → `declined(_:because:)` (its builder threw) or `finish(_:_:)` (it ran). The first failure, a
/// declined step or `stop(because:)` ends the chain; every step without an outcome is then `.notSent`, with the
/// reason.
struct ChainState {
    /// Each step's outcome, once it has one.
    private(set) var results: [Result<Response, HTTPError>?]
    /// The responses of the steps that succeeded, in order: what the next step is built from.
    private(set) var responses: [Response] = []
    /// Why the chain stopped, once it has.
    private(set) var stopReason: String?

    /// - Parameter previous: outcomes of an earlier run (for `retry`): the leading successes are kept, and the
    ///   chain goes on from the first step without one.
    init(count: Int, previous: [Result<Response, HTTPError>]?) {
        results = Array(repeating: nil, count: count)
        if let previous, previous.count == count {
            for result in previous {
                guard case .success(let response) = result else { break }
                results[responses.count] = result
                responses.append(response)
            }
        }
    }

    /// The step to run next, or `nil` when the chain stopped or every step ran.
    var next: Int? {
        guard stopReason == nil, responses.count < results.count else { return nil }
        return responses.count
    }

    /// Stops the chain before its next step (it was cancelled).
    mutating func stop(because reason: String) {
        if stopReason == nil { stopReason = reason }
    }

    /// The step's builder threw: the step was not sent, and the chain ends.
    mutating func declined(_ step: Int, because error: any Error) {
        results[step] = .failure(
            HTTPError(
                .notSent, "step \(step + 1) of \(results.count) declined to send: \(error)", underlying: error))
        stop(because: "step \(step + 1) declined")
    }

    /// The step ran: a success feeds the next step, a failure ends the chain.
    mutating func finish(_ step: Int, _ result: Result<Response, HTTPError>) {
        results[step] = result
        switch result {
        case .success(let response):
            responses.append(response)
        case .failure(let error):
            stop(because: "step \(step + 1) failed (\(error.code))")
        }
    }

    /// One outcome per step, in order: the steps that did not run are `.notSent`, naming why.
    var outcomes: [Result<Response, HTTPError>] {
        results.enumerated().map { step, result in
            result
                ?? .failure(
                    HTTPError(
                        .notSent, "step \(step + 1) of \(results.count) was not sent: \(stopReason ?? "stopped")"))
        }
    }
}
