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
        let a = Center { $0.server = "https://a.example/" }
        let b = Center { $0.server = "https://b.example/" }
        a.setHeader("1", for: "X-A")
        #expect(b.configuration.headers["X-A"] == nil)
        #expect(a.configuration.server != b.configuration.server)
        #expect(Center.shared.configuration.headers["X-A"] == nil)
    }

    @Test func theDefaultEngineIsTheSharedURLSessionEngineUnlessTheEnvironmentAsksForCurl() {
        let engine = Center().configuration.engine
        if ProcessInfo.processInfo.environment["SWITCHBOARD_ENGINE"] == "curl" {
            #expect(engine is CurlEngine)
        } else {
            #expect(engine as? URLSessionEngine === URLSessionEngine.shared)
        }
    }
}
