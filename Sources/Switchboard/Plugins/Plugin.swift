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
/// 6. on failure, `retryDelay` of each plugin when the retry policy would not retry; then `process` of each plugin,
///    and the `onError` hook for a failure.
///
/// The `onRequest` and `onResponse` hooks are a plugin of the center's own, after every other: the last to
/// `prepare` a request, and so the first to `respond` to its response.
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

/// The plugins one request runs through, in registration order: the center's, its node's, its own.
struct PluginChain: Sendable {
    let plugins: [any Plugin]

    var isEmpty: Bool { plugins.isEmpty }

    func prepare(_ request: inout Request) async throws(HTTPError) {
        for plugin in plugins {
            do {
                try await plugin.prepare(&request)
            } catch {
                throw HTTPError.wrapping(error, as: .vetoed, "a plugin refused the request", request: request)
            }
        }
    }

    func adapt(_ encoded: inout EngineRequest, for request: Request) async throws(HTTPError) {
        for plugin in plugins {
            do {
                try await plugin.adapt(&encoded, for: request)
            } catch {
                throw HTTPError.wrapping(error, as: .vetoed, "a plugin refused the encoded request", request: request)
            }
        }
    }

    func willSend(_ encoded: EngineRequest, for request: Request) async {
        for plugin in plugins { await plugin.willSend(encoded, for: request) }
    }

    func didReceive(_ result: Result<Response, HTTPError>, for request: Request) async {
        for plugin in plugins.reversed() { await plugin.didReceive(result, for: request) }
    }

    func respond(_ response: Response, for request: Request) async throws(HTTPError) -> Response {
        var response = response
        for plugin in plugins.reversed() {
            do {
                response = try await plugin.respond(response, for: request)
            } catch {
                throw HTTPError.wrapping(
                    error, as: .business, "a plugin rejected the response", request: request, response: response)
            }
        }
        return response
    }

    func retryDelay(after error: HTTPError, attempt: Int, for request: Request) async -> Duration? {
        for plugin in plugins {
            if let delay = await plugin.retryDelay(after: error, attempt: attempt, for: request) { return delay }
        }
        return nil
    }

    func process(_ result: Result<Response, HTTPError>, for request: Request) async -> Result<Response, HTTPError> {
        var result = result
        for plugin in plugins.reversed() { result = await plugin.process(result, for: request) }
        return result
    }
}
