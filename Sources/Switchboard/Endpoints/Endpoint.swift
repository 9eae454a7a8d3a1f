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
///
/// A `Response` that is not `Decodable` (a model built by hand, an image) comes from `decode(_:)`, or from a response
/// serializer that makes it (set in `configure(_:)`).
public protocol Endpoint: Sendable {
    /// What the response body decodes to.
    associatedtype Response: Sendable

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
    var stub: StubReply? { get }
    /// Plugins for this endpoint's requests, run after the center's and the node's. None by default.
    var plugins: [any Plugin] { get }
    /// The decoder for a `Decodable` `Response`. A plain `JSONDecoder` by default.
    var decoder: JSONDecoder { get }
    /// Makes `Response` from the response, after `validate`. By default: the value the response serializer made,
    /// when it is a `Response`; otherwise, for a `Decodable` one, the body decoded with `decoder`. What it throws
    /// fails the request with `.decoding` (an `HTTPError` keeps its own code).
    func decode(_ response: Switchboard.Response) throws -> Response
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
    public var stub: StubReply? { nil }
    public var plugins: [any Plugin] { [] }
    public var decoder: JSONDecoder { JSONDecoder() }
    public func validate(_ response: Switchboard.Response) throws -> Switchboard.Response { response }
    public func configure(_ request: inout Request) {}

    public func decode(_ response: Switchboard.Response) throws -> Response {
        if let made = response.value(as: Response.self) { return made }
        throw HTTPError(
            .decoding,
            "the \(response.request.responseSerializer?.name ?? "json") serializer made no \(Response.self); give the "
                + "endpoint a serializer that does, or a decode(_:)", request: response.request, response: response)
    }

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

extension Endpoint where Response: Decodable {
    public func decode(_ response: Switchboard.Response) throws -> Response {
        try response.decode(Response.self, using: decoder)
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
