/// The one way work starts on a center.
///
/// Every request, batch, chain, batch member, chain step and transfer is numbered, registered and started here, in
/// a task of its own that `Center.cancel(_:)` reaches by identifier. Rules that hold for all work live here, once:
/// - Work is registered before its task starts, so a cancel that finds it can always reach it (a cancel that comes
///   before the task is attached cancels the task as soon as it is).
/// - Work sent while a token refresh runs (from inside the refresh closure) skips the authenticator: it must not
///   wait on the refresh that waits on it. Batch members and chain steps sent by a refresh keep the rule, though
///   steps are built later, in the chain's own task.
struct Launcher: Sendable {
    let registry: Registry

    /// How work stands in the registry when it starts.
    enum Registration {
        /// Not yet: register it.
        case new
        /// Taken back for a retry (`Registry.takeForRetry` registered it): record its new description.
        case retried
        /// Registered by the caller already (a batch member, registered before it counts as running).
        case registered
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

    /// Registers the work (per `registration`) and runs `body` in a task registered under the work's identifier.
    ///
    /// - Parameters:
    ///   - detached: a detached task, for callback forms, whose callers do not wait; otherwise the task inherits the
    ///     caller's priority and task-local values.
    ///   - queue: for a detached task, the queue it runs on (see `QueueExecutor`; Linux only), else Swift's pool.
    func start<T: Sendable>(
        _ work: AnyRequest, registration: Registration = .new, detached: Bool = false, on queue: QueueExecutor? = nil,
        _ body: @escaping @Sendable () async -> T
    ) -> Task<T, Never> {
        let id = work.id
        switch registration {
        case .new: registry.insert(id, work)
        case .retried: registry.update(id, work)
        case .registered: break
        }
        let task = detached ? Self.detachedTask(on: queue, body) : Task(operation: body)
        registry.attach(task, to: id)
        return task
    }

    /// A detached task at the caller's priority, on `queue` (Linux; see `QueueExecutor`) or Swift's pool.
    @discardableResult
    private static func detachedTask<T: Sendable>(
        on queue: QueueExecutor?, _ body: @escaping @Sendable () async -> T
    ) -> Task<T, Never> {
        #if canImport(Darwin)
        Task.detached(priority: Task.currentPriority, operation: body)
        #else
        Task.detached(executorPreference: queue, priority: Task.currentPriority, operation: body)
        #endif
    }

    /// Registers new work with the signal that stops it and runs `body` in a detached task of its own, not attached
    /// to the registry: `Center.cancel(_:)` fires the signal, which the engine and the pipeline's waits honour, as for
    /// work in its caller's task. For callback forms on an engine that honours `EngineCancellation`: one trip through
    /// the registry's lock fewer than `start`, and no closure to keep the task.
    func startSignalled<T: Sendable>(
        _ work: AnyRequest, on queue: QueueExecutor? = nil,
        _ body: @escaping @Sendable (EngineCancellation) async -> T
    ) {
        let cancellation = registerInline(work)
        Self.detachedTask(on: queue) { await body(cancellation) }
    }

    /// Registers work that runs in its caller's task (no task of its own): `Center.cancel(_:)` fires the returned
    /// signal, which the engine and the pipeline's waits honour.
    func registerInline(_ work: AnyRequest) -> EngineCancellation {
        let cancellation = EngineCancellation()
        registry.insert(work.id, work, cancellation: cancellation)
        return cancellation
    }

    /// Starts the work and waits for it, for an `async` caller: cancelling the caller's task cancels the work by
    /// identifier, as `Center.cancel(_:)` would.
    nonisolated(nonsending) func run<T: Sendable>(
        _ work: AnyRequest, registration: Registration = .new, _ body: @escaping @Sendable () async -> T
    ) async -> T {
        let task = start(work, registration: registration, body)
        let id = work.id
        return await withTaskCancellationHandler {
            await task.value
        } onCancel: { [registry] in
            _ = registry.cancel(id)
        }
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

    /// Registers a member before it counts as running; returns the signal that stops it, when it has one.
    func register(_ member: Request) -> EngineCancellation? {
        let cancellation = stopsBySignal(member) ? EngineCancellation() : nil
        launcher.registry.insert(member.id, .single(member), cancellation: cancellation)
        return cancellation
    }

    /// Removes a registered member that will not run after all.
    func unregister(_ member: Request) {
        _ = launcher.registry.finish(member.id)
    }

    /// Starts a registered member in a task of its own; `outcomes` hears how member `index` ended, in that task. A
    /// member registered with its signal is stopped through it; any other through its task, attached to the registry.
    /// (The group itself hears the outcome, not a closure: a closure of the group's would be one more allocation for
    /// every member.)
    ///
    /// `immediately`: a member stopped by its signal starts running in the calling thread, up to its first wait
    /// (`Task.immediate`), instead of waiting for a thread of the pool to be woken for it; a batch starts its first
    /// members so. Never for a member started when another ended: one that ended at once would start the next in
    /// turn, each inside the last.
    func start(
        _ member: Request, at index: Int, cancellation: EngineCancellation?,
        progress: (@Sendable (TransferProgress) -> Void)?, reportingTo outcomes: any MemberOutcomes,
        immediately: Bool
    ) {
        if let cancellation {
            let operation: @Sendable () async -> Void = { [perform] in
                outcomes.member(index, endedWith: await perform(member, progress, cancellation))
            }
            if immediately, #available(macOS 26, iOS 26, tvOS 26, watchOS 26, *) {
                Task.immediate(operation: operation)
            } else {
                Task(operation: operation)
            }
        } else {
            _ = launcher.start(.single(member), registration: .registered) { [perform] in
                outcomes.member(index, endedWith: await perform(member, progress, nil))
            }
        }
    }

    /// Registers a member and runs it to its end for a caller that waits (a chain's step); cancelling the waiting
    /// task cancels the member. A member that stops by signal runs in the caller's task, as an `async` request does
    /// (no task and no thread hop of its own); any other runs in a task of its own.
    func run(
        _ member: Request, progress: (@Sendable (TransferProgress) -> Void)?
    ) async -> Result<Response, HTTPError> {
        if stopsBySignal(member) {
            return await perform(member, progress, launcher.registerInline(.single(member)))
        }
        return await launcher.run(.single(member)) { await perform(member, progress, nil) }
    }

    /// Cancels a running member (it ends as `.cancelled`).
    func cancel(_ id: RequestID) {
        _ = launcher.registry.cancel(id)
    }
}
