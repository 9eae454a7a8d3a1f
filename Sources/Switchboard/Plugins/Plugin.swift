/// A step in every request's path, registered on a center, a node, an endpoint or a single request.
///
/// Implement only what you need; every method has a default that does nothing. Every step is `async`, so a plugin
/// declared in `@MainActor` code (or a target whose default isolation is the main actor) conforms as it is.
///
/// ```swift
/// struct TraceHeader: Plugin {
///     func prepare(_ request: inout Request) async throws {
///         request.headers["X-Trace"] = UUID().uuidString
///     }
/// }
/// Center.shared.setup { $0.plugins.append(TraceHeader()) }
/// ```
///
/// A request passes these steps, in this order:
/// 1. the request is merged with the configuration;
/// 2. `prepare` of each plugin, then the `onRequest` hook: either may change anything, `api`, `server` and `node`
///    included, and the URL is composed after them;
/// 3. the request is encoded; `adapt` of each plugin may change the encoded request (to sign it, for example);
/// 4. the cache, then the engine, with `willSend` before it and `didReceive` after it (once per attempt);
/// 5. the status checked and the body decoded, then the `onResponse` hook and `respond` of each plugin, then the
///    request's `validate`;
/// 6. on failure, `retryDelay` of each plugin when the authenticator and the retry policy would not send again; then
///    the `onError` hook for a failure, and `process` of each plugin.
///
/// The hooks, the authenticator, the retry policy and the console log are plugins of the center's own, inside every
/// other: `onRequest` is the last to `prepare` a request, `onResponse` the first to `respond` to its response,
/// `onError` the first to `process` its outcome (see the Architecture article).
///
/// Plugins run in order of registration: the center's, then the node's, then the endpoint's or request's. The
/// response-side steps (`didReceive`, `process`) run in the reverse order, so that the plugin that acts first on a
/// request acts last on its outcome. A plugin that throws from `prepare` or `adapt` ends the request: an
/// `HTTPError` as it is, anything else as `.vetoed`.
public protocol Plugin: Sendable {
    /// Changes the request before its URL is composed and its body encoded.
    func prepare(_ request: inout Request) async throws

    /// Changes the encoded request just before it is sent: the last word on headers, URL and body.
    func adapt(_ request: inout EngineRequest, for original: Request) async throws

    /// Sees each attempt about to go to the engine (not a response served from the cache or a stub).
    func willSend(_ request: EngineRequest, for original: Request) async

    /// Sees what each attempt `willSend` saw came to, before validation: the response, or the transport's error.
    func didReceive(_ result: Result<Response, HTTPError>, for original: Request) async

    /// Checks or changes a response whose status was acceptable and whose body was decoded (from the network, the
    /// cache or a stub). Throw to fail the attempt, which the retry policy then judges as any failure: an
    /// `HTTPError` as it is, anything else as `.business` (a server's "code" that says the call failed).
    func respond(_ response: Response, for original: Request) async throws -> Response

    /// How long to wait before sending again after this failure, when the retry policy would not retry; `nil`
    /// leaves the decision to the other plugins and the policy. `attempt` counts from 1.
    func retryDelay(after error: HTTPError, attempt: Int, for original: Request) async -> Duration?

    /// Changes the final outcome: replaces a response, recovers from an error, or turns a response into an error.
    func process(_ result: Result<Response, HTTPError>, for original: Request) async -> Result<Response, HTTPError>
}

extension Plugin {
    public func prepare(_ request: inout Request) async throws {}
    public func adapt(_ request: inout EngineRequest, for original: Request) async throws {}
    public func willSend(_ request: EngineRequest, for original: Request) async {}
    public func didReceive(_ result: Result<Response, HTTPError>, for original: Request) async {}
    public func respond(_ response: Response, for original: Request) async throws -> Response { response }
    public func retryDelay(after error: HTTPError, attempt: Int, for original: Request) async -> Duration? { nil }
    public func process(
        _ result: Result<Response, HTTPError>, for original: Request
    ) async -> Result<Response, HTTPError> {
        result
    }
}
