/// The plugins one request runs through: one list per step, each in the order that step runs them, so that a step
/// no plugin takes part in costs nothing.
///
/// An app's plugins (the center's, its node's, the request's, in registration order) take part in every step; the
/// response-side steps run them in reverse. Switchboard's own plugins take part only in the steps they implement, at
/// fixed places, innermost (nearest the network) of all:
/// - the hooks (`HookPlugin`): the last to `prepare` a request, the first to `respond` to its response and to
///   `process` its outcome (`onError`);
/// - the credential (`CredentialPlugin`): put on after every `prepare` and the URL's final composition (by the
///   prepare step, which knows that place), the first asked whether to send again (it refreshes a refused
///   credential) and the first to `process` the outcome (with the refresh's failure);
/// - the retry policy (`RetryDecision`): asked after the credential, before the app's plugins;
/// - the console log (`ConsoleLog`): an observer, after the app's.
final class PluginChain: Sendable {
    let preparing: [any Plugin]
    /// `adapt` and `willSend`.
    let sending: [any Plugin]
    let receiving: [any Plugin]
    let responding: [any Plugin]
    let deciding: [any Plugin]
    let processing: [any Plugin]
    let observers: [any RequestObserver]
    /// The credential's plugin, whose `prepare` runs at its own place (`authenticate`).
    let credential: (any Plugin)?

    init(
        _ plugins: [any Plugin], hooks: HookPlugin? = nil, credential: (any Plugin)? = nil,
        retry: (any Plugin)? = nil, log: (any RequestObserver)? = nil
    ) {
        let reversed = Array(plugins.reversed())
        preparing = hooks?.onRequest == nil ? plugins : plugins + [hooks!]
        sending = plugins
        receiving = reversed
        responding = hooks?.onResponse == nil ? reversed : [hooks!] + reversed
        var deciding: [any Plugin] = credential.map { [$0] } ?? []
        if let retry { deciding.append(retry) }
        self.deciding = deciding + plugins
        var processing: [any Plugin] = credential.map { [$0] } ?? []
        if let hooks, hooks.onError != nil { processing.append(hooks) }
        self.processing = processing + reversed
        var observers = plugins.compactMap { $0 as? any RequestObserver }
        if let log { observers.append(log) }
        self.observers = observers
        self.credential = credential
    }

    func prepare(_ request: inout Request) async throws(HTTPError) {
        for plugin in preparing {
            do {
                try await plugin.prepare(&request)
            } catch {
                throw HTTPError.wrapping(error, as: .vetoed, "a plugin refused the request", request: request)
            }
        }
    }

    /// The credential's `prepare`, once the URL is final.
    func authenticate(_ request: inout Request) async throws(HTTPError) {
        guard let credential else { return }
        do {
            try await credential.prepare(&request)
        } catch {
            throw HTTPError.wrapping(error, as: .authentication, "the credential could not be put on", request: request)
        }
    }

    func adapt(_ encoded: inout EngineRequest, for request: Request) async throws(HTTPError) {
        for plugin in sending {
            do {
                try await plugin.adapt(&encoded, for: request)
            } catch {
                throw HTTPError.wrapping(error, as: .vetoed, "a plugin refused the encoded request", request: request)
            }
        }
    }

    func willSend(_ encoded: EngineRequest, for request: Request) async {
        for plugin in sending { await plugin.willSend(encoded, for: request) }
    }

    func didReceive(_ result: Result<Response, HTTPError>, for request: Request) async {
        for plugin in receiving { await plugin.didReceive(result, for: request) }
    }

    func respond(_ response: Response, for request: Request) async throws(HTTPError) -> Response {
        var response = response
        for plugin in responding {
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
        for plugin in deciding {
            if let delay = await plugin.retryDelay(after: error, attempt: attempt, for: request) { return delay }
        }
        return nil
    }

    func process(_ result: Result<Response, HTTPError>, for request: Request) async -> Result<Response, HTTPError> {
        var result = result
        for plugin in processing { result = await plugin.process(result, for: request) }
        return result
    }
}
