/// The center's `onRequest` and `onResponse` hooks, as the plugin after every other: the last to `prepare` a request
/// and so the first to `respond` to its response.
struct HookPlugin: Plugin {
    let onRequest: (@Sendable (inout Request) async throws -> Void)?
    let onResponse: (@Sendable (Request, Response) async throws -> Response)?

    /// The plugin for these hooks, when there is one.
    init?(
        onRequest: (@Sendable (inout Request) async throws -> Void)?,
        onResponse: (@Sendable (Request, Response) async throws -> Response)?
    ) {
        guard onRequest != nil || onResponse != nil else { return nil }
        (self.onRequest, self.onResponse) = (onRequest, onResponse)
    }

    func prepare(_ request: inout Request) async throws {
        guard let onRequest else { return }
        let id = request.id
        do {
            try await onRequest(&request)
        } catch {
            request.id = id
            throw HTTPError.wrapping(error, as: .vetoed, "the onRequest hook refused the request", request: request)
        }
    }

    func respond(_ response: Response, for original: Request) async throws -> Response {
        guard let onResponse else { return response }
        do {
            return try await onResponse(original, response)
        } catch {
            throw HTTPError.wrapping(
                error, as: .business, "the onResponse hook rejected the response", request: original,
                response: response)
        }
    }
}
