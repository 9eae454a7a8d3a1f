/// The retry policy as a plugin: asked whether a failure is sent again after the credential, before the app's
/// plugins. It applies the request's own policy (`retry`, `retryCount`), else the center's.
struct RetryDecision: Plugin {
    /// The center's policy.
    let policy: RetryPolicy

    func retryDelay(after error: HTTPError, attempt: Int, for original: Request) async -> Duration? {
        let policy = RetryDecision.policy(for: original, under: policy)
        // A request that carries its idempotency key may be retried whatever its method.
        let keyed = policy.idempotencyKey.map { original.headers[$0] != nil } ?? false
        return policy.delay(after: attempt, for: error, method: original.method, keyed: keyed)
    }

    /// The policy that applies to a request: its own, else the center's, with its `retryCount` applied.
    static func policy(for request: Request, under center: RetryPolicy) -> RetryPolicy {
        var policy = request.retry ?? center
        if let retryCount = request.retryCount { policy.maxAttempts = RetryPolicy.attempts(retrying: retryCount) }
        return policy
    }
}
