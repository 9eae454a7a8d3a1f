import Dispatch

/// A batch: requests that run concurrently and report together, in member order.
///
/// You configure one in `Center.sendBatch` or `Center.batch`:
///
/// ```swift
/// center.sendBatch { batch in
///     batch.policy = .failFast
///     batch.maxConcurrent = 4
///     batch.add { $0.api = "profile" }
///     batch.add { $0.api = "settings" }
/// } onSuccess: { responses in
///     print(responses.map(\.status))
/// }
/// ```
public struct BatchRequest: Sendable {
    /// What a batch does when a member fails.
    public enum Policy: Sendable, Hashable {
        /// Wait for every member, then report (XMNetworking).
        case waitAll
        /// Cancel every other member at the first failure, then report (YTKNetwork).
        case failFast
    }

    /// The identifier of the batch: a new one for every send.
    public internal(set) var id = RequestID.next()
    /// The members, in the order they were added; each has its own identifier once the batch is sent.
    public internal(set) var members: [Request] = []
    /// What to do when a member fails. `.waitAll` by default.
    public var policy: Policy = .waitAll
    /// How many members may run at once; `nil` (the default) starts them all at once.
    public var maxConcurrent: Int?
    /// Where the batch's callbacks run; the center's `callbackQueue` when nil.
    public var callbackQueue: DispatchQueue? {
        get { scope.callbackQueue }
        set { scope.callbackQueue = newValue }
    }
    /// A label that `Center.cancel(tag:)` cancels by; the members may carry tags of their own.
    public var tag: String? {
        get { scope.tag }
        set { scope.tag = newValue }
    }
    /// The object the batch belongs to, held weakly: when it is deallocated, the batch is cancelled.
    public var owner: AnyObject? {
        get { scope.owner?.object }
        set { scope.owner = newValue.map(WeakOwner.init) }
    }
    var scope = WorkScope()

    /// Creates an empty batch.
    public init() {}

    /// A group configured by a closure.
    init(_ configure: (inout Self) -> Void) {
        self.init()
        configure(&self)
    }

    /// Adds a member, configured like a single request.
    public mutating func add(_ configure: (inout Request) -> Void) {
        members.append(Request(configure))
    }

    /// The identifiers of the members, in member order (empty until the batch is sent).
    public var memberIDs: [RequestID] {
        members.map(\.id)
    }
}

/// A chain: requests that run one after another, each built from the response of the one before.
///
/// ```swift
/// center.sendChain { chain in
///     chain.first { $0.api = "login"; $0.method = .post }
///     chain.next { request, previous in
///         request.api = "profile/" + (previous.json?["id"]?.string ?? "")
///     }
/// } onSuccess: { responses in
///     print(responses.last?.json ?? "")
/// }
/// ```
///
/// A step declines to send by throwing: the chain then fails, and that step and the ones after it are reported as
/// not sent (`HTTPError.Code.notSent`).
public struct ChainRequest: Sendable {
    /// Builds the request of a step from the previous response and every response so far (in step order).
    public typealias Step = @Sendable (inout Request, Response, [Response]) throws -> Void

    /// The identifier of the chain: a new one for every send.
    public internal(set) var id = RequestID.next()
    /// The first request, once `first` was called.
    public internal(set) var firstRequest: Request?
    /// The identifiers of the steps, in step order (assigned when the chain is sent).
    public internal(set) var memberIDs: [RequestID] = []
    /// Where the chain's callbacks run; the center's `callbackQueue` when nil.
    public var callbackQueue: DispatchQueue? {
        get { scope.callbackQueue }
        set { scope.callbackQueue = newValue }
    }
    /// A label that `Center.cancel(tag:)` cancels by; the steps may carry tags of their own.
    public var tag: String? {
        get { scope.tag }
        set { scope.tag = newValue }
    }
    /// The object the chain belongs to, held weakly: when it is deallocated, the chain is cancelled.
    public var owner: AnyObject? {
        get { scope.owner?.object }
        set { scope.owner = newValue.map(WeakOwner.init) }
    }
    var scope = WorkScope()
    var steps: [Step] = []
    var firstCalls = 0
    /// Whether the chain was sent by an `Authenticator` refreshing its credential: its steps skip the authenticator.
    var sentByRefresh = false
    /// The idempotency keys that failed steps were sent with, by step, for `Center.retry(_:)`: a step built again
    /// carries its key.
    var idempotencyKeys: [Int: IdempotencyKey] = [:]

    /// Creates an empty chain.
    public init() {}

    /// A group configured by a closure.
    init(_ configure: (inout Self) -> Void) {
        self.init()
        configure(&self)
    }

    /// Configures the first request; call it once, before `next`.
    public mutating func first(_ configure: (inout Request) -> Void) {
        firstRequest = Request(configure)
        firstCalls += 1
    }

    /// Adds a step built from the previous step's response; throw to decline sending it.
    public mutating func next(_ step: @escaping @Sendable (inout Request, Response) throws -> Void) {
        steps.append { request, previous, _ in try step(&request, previous) }
    }

    /// Adds a step that reads every earlier response too (in step order, the previous one last).
    public mutating func next(_ step: @escaping @Sendable (inout Request, Response, [Response]) throws -> Void) {
        steps.append(step)
    }

    /// The number of steps, the first included.
    public var count: Int {
        (firstRequest == nil ? 0 : 1) + steps.count
    }
}

/// A running or finished piece of work at a center: a single request, a batch or a chain.
///
/// The groups are boxed (`indirect`), so that a value is one reference wide: the registry copies and moves one for
/// every request, and with the groups held inline each of those copied a value as large as a chain.
public enum AnyRequest: Sendable {
    /// A single request.
    case single(Request)
    /// A batch.
    indirect case batch(BatchRequest)
    /// A chain.
    indirect case chain(ChainRequest)

    /// Its identifier.
    public var id: RequestID {
        switch self {
        case .single(let request): request.id
        case .batch(let batch): batch.id
        case .chain(let chain): chain.id
        }
    }

    /// Its callback queue, tag and owner.
    var scope: WorkScope {
        switch self {
        case .single(let request): request.scope
        case .batch(let batch): batch.scope
        case .chain(let chain): chain.scope
        }
    }

    /// Its tag, if it has one.
    public var tag: String? {
        scope.tag
    }

    /// The request, when this is a single request.
    public var request: Request? {
        if case .single(let request) = self { request } else { nil }
    }

    /// The batch, when this is a batch.
    public var batch: BatchRequest? {
        if case .batch(let batch) = self { batch } else { nil }
    }

    /// The chain, when this is a chain.
    public var chain: ChainRequest? {
        if case .chain(let chain) = self { chain } else { nil }
    }
}

/// A batch or a chain: what a group run takes.
enum GroupRequest: Sendable {
    case batch(BatchRequest)
    case chain(ChainRequest)

    /// The group as the registry knows it.
    var work: AnyRequest {
        switch self {
        case .batch(let batch): .batch(batch)
        case .chain(let chain): .chain(chain)
        }
    }

    var id: RequestID { work.id }
}
