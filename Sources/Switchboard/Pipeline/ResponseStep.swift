import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

extension Pipeline {
    /// Validate, decode, hook: what every response goes through, from the network, the cache or a stub.
    nonisolated(nonsending) func postProcess(
        _ response: consuming Response, _ request: Request, _ context: RequestContext
    ) async throws(HTTPError) -> Response {
        let (plugins, log) = (context.plugins, context.log)
        guard response.fileURL != nil || acceptable(response, for: request) else {
            throw HTTPError(
                .unacceptableStatus, "the server answered \(StatusReason.described(response.status))",
                request: request, response: response)
        }
        if request.kind != .download {
            let (value, decodable) = try ResponseDecoding.decode(response)
            response.setParsedValue(value, decodable: decodable)
        }
        if !plugins.isEmpty { response = try await plugins.respond(response, for: request) }
        if let validate = request.validate {
            do {
                response = try validate(response)
            } catch {
                throw Pipeline.hookError(
                    error, default: .business, "the response did not pass validation",
                    request, response: response)
            }
        }
        log?.response(response)
        return response
    }

    func acceptable(_ response: Response, for request: Request) -> Bool {
        request.acceptableStatusCodes?.contains(response.status) ?? response.isSuccessful
    }

    /// An error thrown by a hook: an `HTTPError` as it is (with the request filled in), anything else wrapped.
    static func hookError(
        _ error: any Error, default code: HTTPError.Code, _ message: String, _ request: Request,
        response: Response? = nil
    ) -> HTTPError {
        if var error = error as? HTTPError {
            if error.request == nil { error.request = request }
            if error.response == nil { error.response = response }
            return error
        }
        return HTTPError(code, "\(message): \(error)", request: request, response: response, underlying: error)
    }
}
