/// The center's `onRequest`, `onResponse` and `onError` hooks, as the innermost of the app's plugins: the last to
/// `prepare` a request, the first to `respond` to its response and to `process` its outcome.
struct HookPlugin: Plugin {
    let onRequest: (@Sendable (inout Request) async throws -> Void)?
    let onResponse: (@Sendable (Request, Response) async throws -> Response)?
    let onError: (@Sendable (Request, HTTPError) async -> HTTPError)?

    /// The plugin for these hooks, when there is one.
    init?(
        onRequest: (@Sendable (inout Request) async throws -> Void)?,
        onResponse: (@Sendable (Request, Response) async throws -> Response)?,
        onError: (@Sendable (Request, HTTPError) async -> HTTPError)?
    ) {
        guard onRequest != nil || onResponse != nil || onError != nil else { return nil }
        (self.onRequest, self.onResponse, self.onError) = (onRequest, onResponse, onError)
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

    func process(_ result: Result<Response, HTTPError>, for original: Request) async -> Result<Response, HTTPError> {
        guard let onError, case .failure(let error) = result else { return result }
        return .failure(await onError(original, error))
    }
}
