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
        guard response.fileURL != nil || acceptable(response, for: request) else {
            throw HTTPError(
                .unacceptableStatus, "the server answered \(StatusReason.described(response.status))",
                request: request, response: response)
        }
        if request.kind != .download {
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

    func acceptable(_ response: Response, for request: Request) -> Bool {
        request.acceptableStatusCodes?.contains(response.status) ?? response.isSuccessful
    }
}
