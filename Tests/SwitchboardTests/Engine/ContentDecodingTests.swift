import Foundation
import Testing
@testable import Switchboard
import SwitchboardTestSupport

/// A compressed body arrives decoded on both engines, whether or not the request names its own `Accept-Encoding`
/// (which then goes to the server instead of the engine's list). `CurlEngine` handed the compressed bytes over when
/// the request named one, where URLSessionEngine decoded them: the same request gave different bytes.
@Suite struct ContentDecodingTests {
    /// `{"gzipped": true}`, compressed with gzip.
    static let gzipped = Data(base64Encoded: "H4sIAAAAAAACA6tWSq/KLChITVGyUigpKk2tBQABxuoVEQAAAA==")!

    @Test(arguments: bothEngines, [nil, "gzip", "identity", "gzip, deflate, br"])
    func aCompressedBodyArrivesDecoded(engineName: String, accept: String?) async throws {
        let asked = Locked<String?>(nil)
        let server = try LoopbackServer { request in
            asked.withLock { $0 = request.header("Accept-Encoding") }
            return ServerResponse(
                headers: [("Content-Type", "application/json"), ("Content-Encoding", "gzip")], body: Self.gzipped)
        }
        defer { server.stop() }
        let response = try await loopbackCenter(engineName, server: server).send { request in
            request.api = "compressed"
            if let accept { request.headers["Accept-Encoding"] = accept }
        }
        #expect(response.data == Data(#"{"gzipped": true}"#.utf8), "\(engineName), \(accept ?? "no field")")
        #expect(response.json?["gzipped"]?.bool == true)
        if let accept {
            #expect(asked.snapshot == accept, "\(engineName): the request's own field goes")
        } else {
            #expect(asked.snapshot?.contains("gzip") == true, "\(engineName): \(asked.snapshot ?? "none")")
        }
    }
}
