import Foundation
import Testing
@testable import Switchboard

/// The plugin chain and Switchboard's own plugins on it, without a center's requests and without I/O: which steps each
/// takes part in and at which place, and the decisions of the retry policy's and the credential's plugins.
@Suite struct PluginChainTests {
    struct First: Plugin {}
    struct Second: Plugin {}
    struct Watcher: RequestObserver {
        func observe(_ event: RequestEvent) async {}
    }

    static func names(_ plugins: [any Plugin]) -> [String] {
        plugins.map { String(describing: type(of: $0)) }
    }

    static let owner = Center()

    @Test func switchboardsOwnPluginsTakePartOnlyInTheirStepsInsideTheApps() throws {
        var configuration = Center.Configuration()
        configuration.plugins = [First(), Watcher()]
        configuration.onRequest = { _ in }
        configuration.onResponse = { _, response in response }
        configuration.onError = { _, error in error }
        configuration.consoleLog = true
        configuration.authenticator = Authenticator(credential: "token") { _, _ in
        } refresh: { _, _ in
            "new"
        }
        let request = Request { $0.plugins = [Second()] }
        let chain = PluginChain.of(request, configuration, owner: Self.owner)
        #expect(Self.names(chain.preparing) == ["First", "Watcher", "Second", "HookPlugin"])
        #expect(Self.names(chain.sending) == ["First", "Watcher", "Second"])
        #expect(Self.names(chain.receiving) == ["Second", "Watcher", "First"])
        #expect(Self.names(chain.responding) == ["HookPlugin", "Second", "Watcher", "First"])
        #expect(Self.names(chain.deciding) == ["CredentialPlugin", "RetryDecision", "First", "Watcher", "Second"])
        #expect(Self.names(chain.processing) == ["CredentialPlugin", "HookPlugin", "Second", "Watcher", "First"])
        #expect(Self.names(chain.observers) == ["Watcher", "ConsoleLog"])
        #expect(chain.credential is CredentialPlugin)

        // A request that opts out of the authenticator has no credential in its chain.
        let own = PluginChain.of(Request { $0.usesAuthenticator = false }, configuration, owner: Self.owner)
        #expect(own.credential == nil && Self.names(own.deciding) == ["RetryDecision", "First", "Watcher"])
    }

    @Test func aCenterWithoutPluginsRunsNoPluginStepOnSuccess() {
        let configuration = Center.Configuration()
        let chain = PluginChain.of(Request(), configuration, owner: Self.owner)
        #expect(chain === configuration.pluginChain, "the center's chain, as it was made")
        for steps in [chain.preparing, chain.sending, chain.receiving, chain.responding, chain.processing] {
            #expect(steps.isEmpty)
        }
        #expect(chain.observers.isEmpty && chain.credential == nil)
        #expect(Self.names(chain.deciding) == ["RetryDecision"])
    }

    @Test func onlyTheHooksThatAreSetJoinTheirSteps() {
        var configuration = Center.Configuration()
        configuration.onError = { _, error in error }
        let chain = PluginChain.of(Request(), configuration, owner: Self.owner)
        #expect(chain.preparing.isEmpty && chain.responding.isEmpty)
        #expect(Self.names(chain.processing) == ["HookPlugin"])
        configuration.onError = nil
        configuration.onResponse = { _, response in response }
        let responding = PluginChain.of(Request(), configuration, owner: Self.owner)
        #expect(responding.processing.isEmpty && Self.names(responding.responding) == ["HookPlugin"])
    }

    // MARK: - The retry policy's plugin

    static func failure(_ status: Int, url: String = "https://api.example.com/v1/a") -> HTTPError {
        HTTPError(.unacceptableStatus, "status", response: Response(status: status, url: URL(string: url)))
    }

    @Test func theRetryDecisionAppliesTheRequestsOwnPolicyElseTheCenters() async {
        let decision = RetryDecision(policy: RetryPolicy(maxAttempts: 2, initialDelay: .seconds(1), jitter: 0))
        let get = Request { $0.method = .get }
        #expect(await decision.retryDelay(after: Self.failure(503), attempt: 1, for: get) == .seconds(1))
        #expect(await decision.retryDelay(after: Self.failure(503), attempt: 2, for: get) == nil)
        #expect(await decision.retryDelay(after: Self.failure(404), attempt: 1, for: get) == nil)
        let counted = Request { $0.retryCount = 2 }
        #expect(await decision.retryDelay(after: Self.failure(503), attempt: 2, for: counted) == .seconds(2))
        let never = Request { $0.retry = .never }
        #expect(await decision.retryDelay(after: Self.failure(503), attempt: 1, for: never) == nil)
        // A POST is retried only when it carries the key its policy names.
        var post = Request {
            $0.method = .post; $0.retry = RetryPolicy(initialDelay: .seconds(1), jitter: 0)
        }
        #expect(await decision.retryDelay(after: Self.failure(503), attempt: 1, for: post) == nil)
        post.retry?.idempotencyKey = "Idempotency-Key"
        post.headers["Idempotency-Key"] = "k-1"
        #expect(await decision.retryDelay(after: Self.failure(503), attempt: 1, for: post) == .seconds(1))
    }

    // MARK: - The credential's plugin

    static func credential(
        refresh: @escaping @Sendable (String?) throws -> String
    ) -> (CredentialPlugin, Authenticator) {
        let authenticator = Authenticator(credential: "old") { (token: String, request: inout Request) in
            request.headers["Authorization"] = "Bearer \(token)"
        } refresh: { token, _ in
            try refresh(token)
        }
        let scope = CredentialScope(server: "https://api.example.com/v1", nodes: [:])
        return (CredentialPlugin(authenticator, scope: scope, owner: owner), authenticator)
    }

    @Test func aRefusalFromTheCentersOriginRefreshesOnceAndSendsAgainAtOnce() async throws {
        let (plugin, authenticator) = Self.credential { _ in "new" }
        var request = Request { $0.url = "https://api.example.com/v1/a" }
        // Nothing was put on yet: nothing to refresh.
        #expect(await plugin.retryDelay(after: Self.failure(401), attempt: 1, for: request) == nil)
        try await plugin.prepare(&request)
        #expect(request.headers["Authorization"] == "Bearer old")
        // A 401 from another origin (a redirect led there) is that request's failure.
        let elsewhere = Self.failure(401, url: "https://cdn.example.net/a")
        #expect(await plugin.retryDelay(after: elsewhere, attempt: 1, for: request) == nil)
        #expect(await plugin.retryDelay(after: Self.failure(500), attempt: 1, for: request) == nil)
        #expect(authenticator.refreshCount == 0)
        #expect(await plugin.retryDelay(after: Self.failure(401), attempt: 1, for: request) == .zero)
        #expect(authenticator.refreshCount == 1 && authenticator.credential(as: String.self) == "new")
        // Once only: a second refusal is the policy's to judge.
        var again = Request { $0.url = "https://api.example.com/v1/a" }
        try await plugin.prepare(&again)
        #expect(again.headers["Authorization"] == "Bearer new")
        #expect(await plugin.retryDelay(after: Self.failure(401), attempt: 2, for: again) == nil)
        #expect(authenticator.refreshCount == 1)
        let outcome = await plugin.process(.failure(Self.failure(401)), for: again)
        #expect(outcome.failureCode == .unacceptableStatus, "no refresh failed: the outcome is as it was")
    }

    @Test func aFailedRefreshIsTheOutcomeOfAFailureOnly() async throws {
        struct Expired: Error {}
        let (plugin, _) = Self.credential { _ in throw Expired() }
        var request = Request { $0.url = "https://api.example.com/v1/a" }
        try await plugin.prepare(&request)
        #expect(await plugin.retryDelay(after: Self.failure(401), attempt: 1, for: request) == nil)
        let failed = await plugin.process(.failure(Self.failure(401)), for: request)
        #expect(failed.failureCode == .authentication)
        if case .failure(let error) = failed { #expect(error.request?.url == request.url) }
        let succeeded = await plugin.process(.success(Response(status: 200)), for: request)
        #expect(succeeded.failureCode == nil)
    }
}
