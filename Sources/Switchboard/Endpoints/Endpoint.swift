import Foundation

/// One API described as a type: its path, method, parameters and what it returns, with defaults for the rest.
///
/// As an enum with a case per call:
///
/// ```swift
/// enum AccountAPI: Endpoint {
///     case login(user: String, password: String)
///     case profile(id: Int)
///
///     typealias Response = JSON
///     var path: String {
///         switch self {
///         case .login: "login"
///         case .profile(let id): "users/\(id)"
///         }
///     }
///     var method: HTTPMethod { if case .login = self { .post } else { .get } }
///     var parameters: [String: any Sendable] {
///         if case .login(let user, let password) = self { ["user": user, "password": password] } else { [:] }
///     }
/// }
/// let profile = try await center.send(AccountAPI.profile(id: 7))
/// ```
///
/// or as a struct per call, with a typed `Response`:
///
/// ```swift
/// struct GetUser: Endpoint {
///     typealias Response = User
///     var id: Int
///     var path: String { "users/\(id)" }
/// }
/// let user = try await center.send(GetUser(id: 7))
/// ```
public protocol Endpoint: Sendable {
    /// What the response body decodes to.
    associatedtype Response: Decodable & Sendable

    /// The path, resolved against the node's base URL (or a full URL).
    var path: String { get }
    /// The method. `GET` by default.
    var method: HTTPMethod { get }
    /// The parameters. None by default.
    var parameters: [String: any Sendable] { get }
    /// The header fields. None by default.
    var headers: HTTPHeaders { get }
    /// How parameters are encoded in a body. `.form` by default.
    var encoding: RequestSerializer { get }
    /// The node whose base URL the path resolves against. `.default` (the center's server) by default.
    var node: Node { get }
    /// How the response cache serves this endpoint. `.networkOnly` by default.
    var cachePolicy: CachePolicy { get }
    /// A canned answer, served instead of the network when the center's `usesEndpointStubs` is on. None by default.
    var stub: StubEngine.Reply? { get }
    /// Plugins for this endpoint's requests, run after the center's and the node's. None by default.
    var plugins: [any Plugin] { get }
    /// The decoder for `Response`. A plain `JSONDecoder` by default.
    var decoder: JSONDecoder { get }
    /// Checks (or transforms) the response before it is decoded; throw to fail. Passes it through by default.
    func validate(_ response: Switchboard.Response) throws -> Switchboard.Response
    /// Anything else about the request (a timeout, a retry policy, user info). Nothing by default.
    func configure(_ request: inout Request)
}

extension Endpoint {
    public var method: HTTPMethod { .get }
    public var parameters: [String: any Sendable] { [:] }
    public var headers: HTTPHeaders { [:] }
    public var encoding: RequestSerializer { .form }
    public var node: Node { .default }
    public var cachePolicy: CachePolicy { .networkOnly }
    public var stub: StubEngine.Reply? { nil }
    public var plugins: [any Plugin] { [] }
    public var decoder: JSONDecoder { JSONDecoder() }
    public func validate(_ response: Switchboard.Response) throws -> Switchboard.Response { response }
    public func configure(_ request: inout Request) {}

    /// The request this endpoint describes.
    public var request: Request {
        var request = Request()
        request.api = path
        request.method = method
        request.parameters = parameters
        request.headers = headers
        request.requestSerializer = encoding
        request.node = node
        request.cachePolicy = cachePolicy
        request.endpointStub = stub
        request.validate = { response in try validate(response) }
        request.plugins = plugins
        configure(&request)
        return request
    }
}

extension Center {
    /// Sends an endpoint and decodes its response.
    ///
    /// - Throws: `HTTPError`; a body that does not decode as `E.Response` gives `.decoding`.
    @discardableResult
    nonisolated(nonsending) public func send<E: Endpoint>(_ endpoint: E) async throws(HTTPError) -> E.Response {
        let request = endpoint.request
        return try await send { $0 = request }.decode(E.Response.self, using: endpoint.decoder)
    }

    /// Sends an endpoint and reports its decoded response through callbacks (on the callback queue, each once).
    ///
    /// The callback form needs at least one of `onSuccess`, `onFailure` or `onFinished`; without one, `send(endpoint)`
    /// is the `async` form.
    @discardableResult
    public func send<E: Endpoint>(
        _ endpoint: E,
        onSuccess: @escaping @Sendable (E.Response) -> Void,
        onFailure: (@Sendable (HTTPError) -> Void)? = nil,
        onFinished: (@Sendable (Result<E.Response, HTTPError>) -> Void)? = nil
    ) -> RequestID {
        sendDecoding(endpoint, onSuccess: onSuccess, onFailure: onFailure, onFinished: onFinished)
    }

    /// Sends an endpoint and reports a failure through `onFailure` (then `onFinished`).
    @discardableResult
    public func send<E: Endpoint>(
        _ endpoint: E,
        onFailure: @escaping @Sendable (HTTPError) -> Void,
        onFinished: (@Sendable (Result<E.Response, HTTPError>) -> Void)? = nil
    ) -> RequestID {
        sendDecoding(endpoint, onSuccess: nil, onFailure: onFailure, onFinished: onFinished)
    }

    /// Sends an endpoint and reports its decoded outcome to `onFinished`, once.
    @discardableResult
    public func send<E: Endpoint>(
        _ endpoint: E,
        onFinished: @escaping @Sendable (Result<E.Response, HTTPError>) -> Void
    ) -> RequestID {
        sendDecoding(endpoint, onSuccess: nil, onFailure: nil, onFinished: onFinished)
    }

    private func sendDecoding<E: Endpoint>(
        _ endpoint: E,
        onSuccess: (@Sendable (E.Response) -> Void)?,
        onFailure: (@Sendable (HTTPError) -> Void)?,
        onFinished: (@Sendable (Result<E.Response, HTTPError>) -> Void)?
    ) -> RequestID {
        let request = endpoint.request
        let decoder = endpoint.decoder
        return send {
            $0 = request
        } onSuccess: { response in
            let value = try response.decode(E.Response.self, using: decoder)
            onSuccess?(value)
            onFinished?(.success(value))
        } onFailure: { error in
            onFailure?(error)
            onFinished?(.failure(error))
        }
    }
}

extension Center {
    /// Sends an endpoint and yields its decoded responses: two for `.cacheThenNetwork` when something is cached.
    public func responses<E: Endpoint>(_ endpoint: E) -> AsyncThrowingStream<E.Response, any Error> {
        let request = endpoint.request
        let decoder = endpoint.decoder
        let responses = responses { $0 = request }
        return AsyncThrowingStream { continuation in
            let task = Task {
                do {
                    for try await response in responses {
                        continuation.yield(try response.decode(E.Response.self, using: decoder))
                    }
                    continuation.finish()
                } catch {
                    continuation.finish(throwing: error)
                }
            }
            continuation.onTermination = { _ in task.cancel() }
        }
    }
}

extension BatchRequest {
    /// Adds an endpoint as a member.
    public mutating func add<E: Endpoint>(_ endpoint: E) {
        let request = endpoint.request
        add { $0 = request }
    }
}

extension ChainRequest {
    /// Starts the chain with an endpoint.
    public mutating func first<E: Endpoint>(_ endpoint: E) {
        let request = endpoint.request
        first { $0 = request }
    }

    /// Adds a step that picks its endpoint from the previous response.
    public mutating func next<E: Endpoint>(_ endpoint: @escaping @Sendable (Response) throws -> E) {
        next { request, previous in request = try endpoint(previous).request }
    }
}
