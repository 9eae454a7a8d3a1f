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

    /// A configuration is a value: copies share their storage until one changes, and a change never shows in
    /// another copy, nor in a snapshot a request took before `setup` changed the center.
    @Test func configurationCopiesAreIndependent() {
        var first = Center.Configuration()
        first.headers["X-Client"] = "app"
        first.parameters["v"] = 1
        var second = first
        second.headers["X-Client"] = "other"
        second.parameters["v"] = 2
        second.timeout = .seconds(5)
        #expect(first.headers["X-Client"] == "app")
        #expect(first.parameters["v"] as? Int == 1)
        #expect(first.timeout == .seconds(60))
        #expect(second.headers["X-Client"] == "other")
        #expect(second.parameters["v"] as? Int == 2)

        let center = testCenter { $0.server = "https://a.example/" }
        let snapshot = center.configuration
        center.setup {
            $0.server = "https://b.example/"; $0.headers["X-Late"] = "1"
        }
        #expect(snapshot.server == "https://a.example/")
        #expect(snapshot.headers["X-Late"] == nil)
        #expect(center.configuration.server == "https://b.example/")
    }

    /// The library reads no environment: the default is the shared URLSessionEngine whatever `SWITCHBOARD_ENGINE`
    /// says (that switch belongs to the test suite, in `TestEngine`).
    @Test func theDefaultEngineIsTheSharedURLSessionEngine() {
        #expect(Center().configuration.engine as? URLSessionEngine === URLSessionEngine.shared)
        #expect(Center.shared.configuration.engine is URLSessionEngine)
    }
}
