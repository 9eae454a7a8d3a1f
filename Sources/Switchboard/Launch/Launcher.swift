/// The one way work starts on a center.
///
/// Every request, batch, chain, batch member, chain step, transfer, stream and retry is numbered, registered and
/// started here: by `run(_:bySignal:_:)` for a caller that waits for the value, which decides whether the work runs
/// in the caller's task or a task of its own, else by `launch(_:_:_:)`, in a task of its own. The launcher owns the
/// cancellation wiring. Rules that hold for all work live here, once:
/// - Work is registered before it starts, so a cancel that finds it can always reach it (a cancel that comes before
///   its task is attached cancels the task as soon as it is).
/// - Work whose engine stops on its own signal (`EngineCancellation`) needs no task to cancel: a caller that waits
///   runs it in its own task, and a caller that does not wait in a task that the registry does not hold.
/// - Work sent while a token refresh runs (from inside the refresh closure) skips the authenticator: it must not
///   wait on the refresh that waits on it. Batch members and chain steps sent by a refresh keep the rule, though
///   steps are built later, in the chain's own task.
struct Launcher: Sendable {
    let registry: Registry

    /// How work stands in the registry when it starts.
    enum Registration: Sendable {
        /// Not yet: register it.
        case new
        /// Taken back for a retry (`Registry.takeForRetry` registered it): record its new description.
        case retried
        /// Registered by the caller already (a batch member, registered before it counts as running), with the
        /// signal that stops it when it has one (see `register(_:bySignal:)`).
        case registered(EngineCancellation?)
    }

    /// How one piece of work is to run.
    struct Plan: Sendable {
        /// The work stops on its own signal when cancelled by identifier: its engine honours `EngineCancellation`.
        var bySignal: Bool
        var registration: Registration = .new
        /// A detached task (callback forms, whose callers do not wait), else one that inherits the caller's priority
        /// and task-local values.
        var detached = false
        /// Work stopped by its signal starts in the calling thread, up to its first wait (`Task.immediate`), instead
        /// of waiting for a thread to be woken for it: a batch's first members.
        var immediately = false
    }

    // MARK: - Numbering

    /// The request a closure configures, with the refresh rule applied and an identifier of its own: a closure that
    /// sets the whole request (`$0 = saved`) brought that request's identifier, which names another send.
    static func numbered(_ configure: (inout Request) -> Void) -> Request {
        var request = Request()
        let id = request.id
        configure(&request)
        if request.id != id { request.id = RequestID.next() }
        if Authenticator.isRefreshing { request.usesAuthenticator = false }
        return request
    }

    /// A batch with its identifier, and its members' with the refresh rule applied.
    static func numbered(_ batch: consuming BatchRequest) -> BatchRequest {
        // Consumed, and each member changed where it stands: a copy of a member would copy its storage too.
        batch.id = RequestID.next()
        let refreshing = Authenticator.isRefreshing
        for index in batch.members.indices {
            // Always a new identifier: one set in the closure would be shared by every send of the batch.
            batch.members[index].id = RequestID.next()
            if refreshing { batch.members[index].usesAuthenticator = false }
        }
        return batch
    }

    /// A chain with its identifier and its steps'; a chain sent by a refresh remembers it for the steps it builds.
    static func numbered(_ chain: ChainRequest) -> ChainRequest {
        var chain = chain
        chain.id = RequestID.next()
        chain.memberIDs = (0..<chain.count).map { _ in RequestID.next() }
        chain.sentByRefresh = Authenticator.isRefreshing
        if let first = chain.firstRequest { chain.firstRequest = chain.step(first, at: 0) }
        return chain
    }

    // MARK: - Starting

    /// Registers the work and starts its `body` in a task of its own, which gets the work's signal when it stops by
    /// one; returns the handle. For callers that go on at once (callbacks, transfers, streams, a group's members).
    func launch<Body: WorkBody>(_ work: AnyRequest, _ plan: Plan, _ body: Body) -> Launched<Body> {
        let id = work.id
        if plan.bySignal, let signal = signal(for: work, plan.registration) {
            let operation: @Sendable () async -> Body.Value = { [signal, body] in await body.run(signal) }
            if plan.immediately, #available(macOS 26, iOS 26, tvOS 26, watchOS 26, *) {
                return Launched(id: id, registry: registry, task: Task.immediate(operation: operation))
            }
            let task = plan.detached ? Self.detachedTask(operation) : Task(operation: operation)
            return Launched(id: id, registry: registry, task: task)
        }
        switch plan.registration {
        case .new: registry.insert(id, work)
        case .retried: registry.update(id, work)
        case .registered: break
        }
        let operation: @Sendable () async -> Body.Value = { [body] in await body.run(nil) }
        let task = plan.detached ? Self.detachedTask(operation) : Task(operation: operation)
        registry.attach(task, to: id)
        return Launched(id: id, registry: registry, task: task)
    }

    /// Registers the work and runs its `body` for a caller that waits for the value (an `async` send, a chain's
    /// step, a group for an `async` caller). Work that stops by its signal runs in the caller's task, off its actor:
    /// no task and no thread hop of its own. Any other runs in a task of its own (`launch`), cancelled by
    /// identifier when the waiting task is.
    nonisolated(nonsending) func run<Body: WorkBody>(
        _ work: AnyRequest, bySignal: Bool, _ body: Body
    ) async -> Body.Value {
        guard bySignal else { return await launch(work, Plan(bySignal: false), body).value() }
        return await Self.runHere(registerStoppedBySignal(work), body)
    }

    /// `run` with the body as a closure.
    nonisolated(nonsending) func run<T: Sendable>(
        _ work: AnyRequest, bySignal: Bool, _ body: @escaping @Sendable (EngineCancellation?) async -> T
    ) async -> T {
        await run(work, bySignal: bySignal, ClosureBody(body: body))
    }

    /// Runs work in the waiting task, off the caller's actor (`@concurrent`: a caller on the main actor hops off it
    /// once; a caller already on the global executor does not hop at all).
    @concurrent
    private static func runHere<Body: WorkBody>(_ signal: EngineCancellation, _ body: Body) async -> Body.Value {
        await body.run(signal)
    }

    /// `launch` with the body as a closure.
    func launch<T: Sendable>(
        _ work: AnyRequest, _ plan: Plan, _ body: @escaping @Sendable (EngineCancellation?) async -> T
    ) -> Launched<ClosureBody<T>> {
        launch(work, plan, ClosureBody(body: body))
    }

    /// The signal that stops work by its identifier: a new one, registered with new work; the one a registered
    /// member was given; none for a retry, which `Registry.takeForRetry` registered to stop through its task.
    private func signal(for work: AnyRequest, _ registration: Registration) -> EngineCancellation? {
        switch registration {
        case .new: return registerStoppedBySignal(work)
        case .registered(let signal): return signal
        case .retried: return nil
        }
    }

    /// Registers work before it starts; returns the signal that stops it when it stops by one (a batch member
    /// registered before it counts as running, an event source between its connections).
    func register(_ work: AnyRequest, bySignal: Bool) -> EngineCancellation? {
        if bySignal { return registerStoppedBySignal(work) }
        registry.insert(work.id, work)
        return nil
    }

    /// Registers work that stops by its signal, and returns the signal.
    func registerStoppedBySignal(_ work: AnyRequest) -> EngineCancellation {
        let signal = EngineCancellation()
        registry.insert(work.id, work, cancellation: signal)
        return signal
    }

    /// A detached task at the caller's priority, on Swift's pool.
    private static func detachedTask<T: Sendable>(_ body: @escaping @Sendable () async -> T) -> Task<T, Never> {
        Task.detached(priority: Task.currentPriority, operation: body)
    }
}

/// What work runs, given the signal that stops it when it stops by one. A value, so that a request sent from an
/// `async` caller (`PipelineRun`) needs no closure context made for it.
protocol WorkBody: Sendable {
    associatedtype Value: Sendable
    nonisolated(nonsending) func run(_ signal: EngineCancellation?) async -> Value
}

/// A body given as a closure.
struct ClosureBody<Value: Sendable>: WorkBody {
    let body: @Sendable (EngineCancellation?) async -> Value

    nonisolated(nonsending) func run(_ signal: EngineCancellation?) async -> Value { await body(signal) }
}

/// Work that has started in a task of its own: its identifier, its value when it ends, and the way to cancel it.
struct Launched<Body: WorkBody>: Sendable {
    typealias Value = Body.Value

    let id: RequestID
    let registry: Registry
    let task: Task<Value, Never>

    /// Waits for the value. The work is cancelled by identifier when the waiting task is.
    nonisolated(nonsending) func value() async -> Value {
        await withTaskCancellationHandler {
            await task.value
        } onCancel: { [registry, id] in
            _ = registry.cancel(id)
        }
    }

    /// Waits for `body` (a stream's head, say); cancelling the waiting task cancels the work by identifier.
    nonisolated(nonsending) func whileWaiting<R>(_ body: () async throws -> R) async rethrows -> R {
        try await withTaskCancellationHandler(operation: body) { [registry, id] in
            _ = registry.cancel(id)
        }
    }

    /// Cancels the work by identifier (it ends as `.cancelled`).
    func cancel() {
        _ = registry.cancel(id)
    }
}

/// How a center runs a group's members: each under its own identifier, through the launcher, on the whole request
/// path.
struct MemberRunner: MemberStarting {
    let launcher: Launcher
    /// Whether a member can be stopped through a signal of its own (its engine honours `EngineCancellation`), as an
    /// `async` request in its caller's task is: then its task needs no attaching to the registry.
    let stopsBySignal: @Sendable (Request) -> Bool
    /// Runs one member through the whole request path, to its final outcome; with the member's signal when it has
    /// one.
    let perform:
        @Sendable (Request, (@Sendable (TransferProgress) -> Void)?, EngineCancellation?) async -> Result<
            Response, HTTPError
        >

    func register(_ member: Request) -> EngineCancellation? {
        launcher.register(.single(member), bySignal: stopsBySignal(member))
    }

    func unregister(_ member: Request) {
        _ = launcher.registry.finish(member.id)
    }

    /// The group itself hears the outcome, not a closure: a closure of the group's would be one more allocation for
    /// every member. Never `immediately` for a member started when another ended: one that ended at once would start
    /// the next in turn, each inside the last.
    func start(
        _ member: Request, at index: Int, cancellation: EngineCancellation?,
        progress: (@Sendable (TransferProgress) -> Void)?, reportingTo outcomes: any MemberOutcomes,
        immediately: Bool
    ) {
        let plan = Launcher.Plan(
            bySignal: cancellation != nil, registration: .registered(cancellation),
            immediately: immediately)
        _ = launcher.launch(.single(member), plan) { [perform] signal in
            outcomes.member(index, endedWith: await perform(member, progress, signal))
        }
    }

    /// A member that stops by signal runs in the caller's task, as an `async` request does (no task and no thread
    /// hop of its own); any other runs in a task of its own.
    func run(
        _ member: Request, progress: (@Sendable (TransferProgress) -> Void)?
    ) async -> Result<Response, HTTPError> {
        await launcher.run(.single(member), bySignal: stopsBySignal(member)) { [perform] signal in
            await perform(member, progress, signal)
        }
    }

    func cancel(_ id: RequestID) {
        _ = launcher.registry.cancel(id)
    }
}
