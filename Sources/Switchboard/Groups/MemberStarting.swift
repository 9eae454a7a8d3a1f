/// What a batch or chain needs from its center to run its members: register each under its own identifier, start
/// it, wait for it, cancel it. The center's launcher provides it; groups name no center.
protocol MemberStarting: Sendable {
    /// Registers a member before it counts as running; returns the signal that stops it, when it has one.
    func register(_ member: Request) -> EngineCancellation?

    /// Removes a registered member that will not run after all.
    func unregister(_ member: Request)

    /// Starts a registered member; `outcomes` hears how member `index` ended, once, in the member's task.
    /// `immediately`: a member stopped by its signal runs in the calling thread up to its first wait.
    func start(
        _ member: Request, at index: Int, cancellation: EngineCancellation?,
        progress: (@Sendable (TransferProgress) -> Void)?, reportingTo outcomes: any MemberOutcomes,
        immediately: Bool)

    /// Registers a member and runs it to its end for a caller that waits (a chain's step); cancelling the waiting
    /// task cancels the member.
    func run(_ member: Request, progress: (@Sendable (TransferProgress) -> Void)?) async -> Result<Response, HTTPError>

    /// Cancels a running member (it ends as `.cancelled`).
    func cancel(_ id: RequestID)
}

/// Hears how the members a group started with `MemberStarting.start` end.
protocol MemberOutcomes: AnyObject, Sendable {
    /// Member `index` ended with `result` (called once, in the member's task).
    func member(_ index: Int, endedWith result: Result<Response, HTTPError>)
}
extension ChainRequest {
    /// A step, built during the run: the step's identifier, its idempotency key from an earlier run, and the
    /// chain's refresh rule.
    func step(_ request: Request, at index: Int) -> Request {
        var request = request.carrying(idempotencyKeys[index])
        request.id = memberIDs[index]
        if sentByRefresh { request.usesAuthenticator = false }
        return request
    }
}
