import Foundation
import Switchboard

/// The engine the test suite runs on: `URLSessionEngine.shared`, or a `CurlEngine` when the environment variable
/// `SWITCHBOARD_ENGINE` is `curl` (how CI runs the suite on both engines). The switch lives here, in the tests, not
/// in the library: a center's engine is whatever its configuration says.
public enum TestEngine {
    /// Decided once per process. When `curl` is asked for and libcurl cannot run here, every request fails with
    /// `.unsupported` saying why, so a run meant for CurlEngine can never pass on URLSession instead.
    public static let selected: any Engine = {
        guard isCurl else { return URLSessionEngine.shared }
        do throws(HTTPError) {
            return try CurlEngine()
        } catch {
            return UnavailableEngine(reason: "SWITCHBOARD_ENGINE=curl, but " + error.message)
        }
    }()

    /// Whether the environment asks for CurlEngine.
    public static let isCurl = ProcessInfo.processInfo.environment["SWITCHBOARD_ENGINE"]?.lowercased() == "curl"
}

/// An engine that cannot run here: every request fails with `.unsupported`, saying why.
public struct UnavailableEngine: Engine {
    public let reason: String

    public init(reason: String) {
        self.reason = reason
    }

    public func perform(
        _ request: EngineRequest, progress: @escaping @Sendable (TransferProgress) -> Void
    ) async throws -> EngineResponse {
        throw HTTPError(.unsupported, reason)
    }
}
