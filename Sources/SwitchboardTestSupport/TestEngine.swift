import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Switchboard

/// The engine the test suite runs on: a `URLSessionEngine`, or a `CurlEngine` when the environment variable
/// `SWITCHBOARD_ENGINE` is `curl` (how CI runs the suite on both engines). The switch lives here, in the tests, not
/// in the library: a center's engine is whatever its configuration says.
public enum TestEngine {
    /// Decided once per process. When `curl` is asked for and libcurl cannot run here, every request fails with
    /// `.unsupported` saying why, so a run meant for CurlEngine can never pass on URLSession instead.
    ///
    /// The `URLSessionEngine` takes up to 256 exchanges with one host at a time, as `CurlEngine` takes any number:
    /// the suite's tests run side by side against one loopback server, and with URLSession's default of 6, a test's
    /// quick request waited behind other tests' slow ones (a 20 s answer, a stalled body) for up to 25 s and failed
    /// its own timing.
    public static let selected: any Engine = {
        guard isCurl else {
            let configuration = URLSessionConfiguration.default
            configuration.httpMaximumConnectionsPerHost = 256
            return URLSessionEngine(configuration: configuration)
        }
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
