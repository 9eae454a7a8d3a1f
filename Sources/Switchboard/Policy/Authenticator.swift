import Foundation

/// Keeps a credential, applies it to every request, and refreshes it once, however many requests found it stale.
///
/// ```swift
/// struct Token: Sendable { var access: String; var refresh: String; var expires: Date }
///
/// let authenticator = Authenticator(credential: savedToken) { token, request in
///     request.headers["Authorization"] = "Bearer \(token.access)"
/// } refresh: { token, center in
///     let response = try await center.send { request in
///         request.api = "oauth/token"
///         request.method = .post
///         request.parameters = ["refresh_token": token?.refresh ?? ""]
///     }
///     return try response.decode(Token.self)
/// } needsRefresh: { token in
///     token.expires < Date().addingTimeInterval(60)            // refresh a minute before expiry
/// }
/// center.setup { $0.authenticator = authenticator }
/// ```
///
/// When a response says the credential is stale (`isStale`: a 401 by default), exactly one refresh runs; every
/// request waiting on it is then sent again, once, with the new credential: an attempt of its own, counted in
/// `Response.attempts`, decided before the retry policy is asked. If the refresh fails, every waiting request fails
/// with `HTTPError.Code.authentication`, and so do requests that find the same stale credential later, without
/// another refresh, until `setCredential(_:)` gives a new one (after a new login, say). Requests that the refresh
/// closure sends itself skip the authenticator. Without a credential, the first request refreshes.
///
/// The credential goes only to the center's own origins: a request whose final URL (after `onRequest` and the
/// plugins, however `api` or `url` was written) has the origin (scheme, host and port) of the center's `server` or of
/// one of its nodes. It is put on after `onRequest`, so the hook does not see it. A request to any other origin (an
/// image CDN, a presigned upload, a link taken from a response, a request's own `server`) goes without it, and a
/// `401` there, or from another origin a redirect led to, is that request's failure, not a reason to refresh. A
/// center with neither a `server` nor a node, whose requests all give their full URL, has no origin to keep it to:
/// there it goes with every request.
public final class Authenticator: Sendable {
    private struct State {
        var credential: (any Sendable)?
        var generation: UInt64 = 0
        var refreshing: Task<Void, any Error>?
        var failed: (generation: UInt64, error: HTTPError)?
        var refreshes = 0
    }

    private let state = Locked(State())
    private let applyCredential: @Sendable (any Sendable, inout Request) -> Void
    /// Gets a new credential from the current one, given the owner whose requests it serves (the center).
    private let refreshCredential: @Sendable ((any Sendable)?, any AnyObject & Sendable) async throws -> any Sendable
    private let needsRefresh: @Sendable (any Sendable) -> Bool
    private let isStale: @Sendable (HTTPError) -> Bool

    /// True inside a refresh: requests sent there skip the authenticator.
    @TaskLocal static var isRefreshing = false

    /// An authenticator over credentials of any type: what `init(credential:apply:refresh:isStale:needsRefresh:)`
    /// makes, with the owner (the center) that `refresh` is given erased.
    init(
        credential: (any Sendable)?,
        apply: @escaping @Sendable (any Sendable, inout Request) -> Void,
        refresh: @escaping @Sendable ((any Sendable)?, any AnyObject & Sendable) async throws -> any Sendable,
        isStale: @escaping @Sendable (HTTPError) -> Bool,
        needsRefresh: @escaping @Sendable (any Sendable) -> Bool
    ) {
        state.withLock { $0.credential = credential }
        (applyCredential, refreshCredential) = (apply, refresh)
        (self.isStale, self.needsRefresh) = (isStale, needsRefresh)
    }

    /// The current credential, if it is of this type.
    public func credential<Credential: Sendable>(as type: Credential.Type = Credential.self) -> Credential? {
        state.withLock { $0.credential as? Credential }
    }

    /// Replaces the credential (after a login, or `nil` after a logout); clears a failed refresh.
    public func setCredential<Credential: Sendable>(_ credential: Credential?) {
        state.withLock { state in
            state.credential = credential
            state.generation += 1
            state.failed = nil
        }
    }

    /// Whether it holds a credential (for its description, which never shows the credential).
    var holdsCredential: Bool {
        state.withLock { $0.credential != nil }
    }

    /// How many refreshes have run.
    public var refreshCount: Int {
        state.withLock { $0.refreshes }
    }

    // MARK: - For the center

    /// Puts the current credential on a request, after any refresh under way (or due); returns the generation of
    /// the credential used.
    func authenticate(_ request: inout Request, owner: any AnyObject & Sendable) async throws(HTTPError) -> UInt64 {
        while true {
            enum Next { case wait(Task<Void, any Error>), refresh(UInt64), use(any Sendable, UInt64), fail(HTTPError) }
            var next = state.withLock { state -> Next in
                if let refreshing = state.refreshing { return .wait(refreshing) }
                if let failed = state.failed, failed.generation == state.generation { return .fail(failed.error) }
                guard let credential = state.credential else { return .refresh(state.generation) }
                return .use(credential, state.generation)
            }
            // The user's `needsRefresh` runs outside the lock; the generation read with the credential keeps the
            // decision tied to that credential.
            if case .use(let credential, let generation) = next, needsRefresh(credential) {
                next = .refresh(generation)
            }
            switch next {
            case .wait(let task):
                _ = try? await task.value
            case .refresh(let generation):
                try await refresh(after: generation, owner: owner)
            case .use(let credential, let generation):
                applyCredential(credential, &request)
                return generation
            case .fail(let error):
                throw error.with(request: request)
            }
        }
    }

    /// Whether an error means the credential was refused.
    func refused(_ error: HTTPError) -> Bool {
        isStale(error)
    }

    /// Refreshes the credential unless it already changed since `generation`, joining a refresh under way; one
    /// refresh serves every request that waits on it.
    ///
    /// - Throws: `.authentication` when the refresh failed (now, or earlier for this same credential).
    func refresh(after generation: UInt64, owner: any AnyObject & Sendable) async throws(HTTPError) {
        enum Next { case done, wait(Task<Void, any Error>), fail(HTTPError) }
        let next = state.withLock { state -> Next in
            if state.generation > generation { return .done }
            if let failed = state.failed, failed.generation == generation { return .fail(failed.error) }
            if let refreshing = state.refreshing { return .wait(refreshing) }
            let current = state.credential
            state.refreshes += 1
            let task = Task { [self] in
                do {
                    let fresh = try await Authenticator.$isRefreshing.withValue(true) {
                        try await refreshCredential(current, owner)
                    }
                    self.state.withLock { state in
                        state.credential = fresh
                        state.generation += 1
                        state.refreshing = nil
                    }
                } catch {
                    let failure = HTTPError(
                        .authentication, "the credential could not be refreshed: \(error)", underlying: error)
                    self.state.withLock { state in
                        state.failed = (state.generation, failure)
                        state.refreshing = nil
                    }
                    throw failure
                }
            }
            state.refreshing = task
            return .wait(task)
        }
        switch next {
        case .done:
            return
        case .fail(let error):
            throw error
        case .wait(let task):
            do {
                try await task.value
            } catch {
                throw HTTPError.from(error)
            }
        }
    }
}
