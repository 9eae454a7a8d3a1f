import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

extension Pipeline {
    /// Validate, decode, hook: what every response goes through, from the network, the cache or a stub.
    nonisolated(nonsending) func postProcess(
        _ response: consuming Response, _ request: Request, _ context: RequestContext
    ) async throws(HTTPError) -> Response {
        var response = try decoded(response, request, context)
        let plugins = context.plugins
        if !plugins.responding.isEmpty { response = try await plugins.respond(response, for: request) }
        return try validated(response, request)
    }

    /// `postProcess` when no plugin responds: nothing in it waits, so a caller needs no async call for it.
    func processed(
        _ response: consuming Response, _ request: Request, _ context: RequestContext
    ) throws(HTTPError) -> Response {
        try validated(decoded(response, request, context), request)
    }

    /// The status checked, then the body decoded.
    private func decoded(
        _ response: consuming Response, _ request: Request, _ context: RequestContext
    ) throws(HTTPError) -> Response {
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
        return response
    }

    /// The request's own `validate`, last.
    private func validated(_ response: consuming Response, _ request: Request) throws(HTTPError) -> Response {
        guard let validate = request.validate else { return response }
        do {
            return try validate(response)
        } catch {
            throw HTTPError.wrapping(
                error, as: .business, "the response did not pass validation", request: request, response: response)
        }
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
