/// The response type for calls that answer without a body: `HEAD`, `204 No Content`, `205 Reset Content`, or any
/// response whose body you do not need.
///
/// Decoding `EmptyBody` always succeeds and ignores whatever body there is; decoding any other type from an empty
/// body fails with `.decoding`, naming the status.
///
/// ```swift
/// struct DeleteUser: Endpoint {
///     typealias Response = EmptyBody
///     var id: Int
///     var path: String { "users/\(id)" }
///     var method: HTTPMethod { .delete }
/// }
/// try await center.send(DeleteUser(id: 7))
/// _ = try await center.send(EmptyBody.self) { $0.api = "ping"; $0.method = .head }
/// ```
public struct EmptyBody: Codable, Sendable, Hashable {
    /// The empty value.
    public init() {}

    /// Decodes nothing: any content is ignored.
    public init(from decoder: any Decoder) throws {}

    /// Encodes nothing.
    public func encode(to encoder: any Encoder) throws {}
}
