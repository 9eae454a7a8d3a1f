import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

extension Pipeline {
    /// Validate, decode, hook: what every response goes through, from the network, the cache or a stub.
    nonisolated(nonsending) func postProcess(
        _ response: consuming Response, _ request: Request, _ context: RequestContext
    ) async throws(HTTPError) -> Response {
        let plugins = context.plugins
        guard response.fileURL != nil || acceptable(response, for: request, context.configuration) else {
            throw HTTPError(
                .unacceptableStatus, "the server answered \(StatusReason.described(response.status))",
                request: request, response: response)
        }
        // A stream's body is its reader's bytes, never decoded (one that ends without opening hands them over whole).
        if request.kind != .download, context.stream == nil {
            let (value, decodable) = try ResponseDecoding.decode(response)
            response.setParsedValue(value, decodable: decodable)
        }
        if !plugins.responding.isEmpty { response = try await plugins.respond(response, for: request) }
        if let validate = request.validate {
            do {
                response = try validate(response)
            } catch {
                throw HTTPError.wrapping(
                    error, as: .business, "the response did not pass validation", request: request,
                    response: response)
            }
        }
        return response
    }

    /// Whether the status is one the request accepts: its `acceptableStatusCodes`, else the center's (a `2xx` unless
    /// set), or, under a redirect policy other than `.follow`, a redirect that came back unfollowed: the answer the
    /// policy asked for.
    func acceptable(_ response: Response, for request: Request, _ configuration: CenterConfiguration) -> Bool {
        let codes = request.acceptableStatusCodes ?? configuration.unusualAcceptableStatusCodes
        if codes?.contains(response.status) ?? response.isSuccessful { return true }
        return Redirects.follows(status: response.status) && !request.redirectPolicy(in: configuration).isDefault
    }
}
