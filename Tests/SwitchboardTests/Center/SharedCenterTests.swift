import Foundation
import Testing
@testable import Switchboard

/// The only suite that touches `Center.shared`; serialized, and it restores what it changed.
@Suite(.serialized) struct SharedCenterTests {
    @Test func theSharedCenterIsOneInstanceAndConfigurable() async throws {
        #expect(Center.shared === Center.shared)
        let saved = Center.shared.configuration
        defer { Center.shared.setup { $0 = saved } }
        let stub = StubEngine()
        stub.on(.get, "/v1/ping", reply: .json(["pong": true]))
        Center.shared.setup { config in
            config.engine = stub
            config.server = "https://api.example.com/v1/"
        }
        Center.shared.setHeader("abc", for: "X-Session")
        let response = try await Center.shared.send { $0.api = "ping" }
        #expect(response.json?["pong"]?.bool == true)
        #expect(stub.requests.first?.urlRequest.value(forHTTPHeaderField: "X-Session") == "abc")
    }

    @Test func independentCentersDoNotShareConfiguration() {
        let a = testCenter { $0.server = "https://a.example/" }
        let b = testCenter { $0.server = "https://b.example/" }
        a.setHeader("1", for: "X-A")
        #expect(b.configuration.headers["X-A"] == nil)
        #expect(a.configuration.server != b.configuration.server)
        #expect(Center.shared.configuration.headers["X-A"] == nil)
    }

    /// The library reads no environment: the default is the shared URLSessionEngine whatever `SWITCHBOARD_ENGINE`
    /// says (that switch belongs to the test suite, in `TestEngine`).
    @Test func theDefaultEngineIsTheSharedURLSessionEngine() {
        #expect(Center().configuration.engine as? URLSessionEngine === URLSessionEngine.shared)
        #expect(Center.shared.configuration.engine is URLSessionEngine)
    }
}
