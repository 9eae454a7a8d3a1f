import Foundation
import Testing
@testable import Switchboard
import SwitchboardTestSupport

/// Parameters from an `Encodable` value, their place and their form style: the text written, without I/O, then the
/// bytes a loopback server received on both engines.
@Suite struct ParameterEncodingTests {
    struct Search: Encodable {
        var query: String
        var pageSize: Int
        var since: Date
        var price: Decimal
        var tags: [String]
        var exact: Bool
    }

    static let search = Search(
        query: "swift & more", pageSize: 20, since: Date(timeIntervalSince1970: 1_700_000_000),
        price: Decimal(string: "12345678901234567890.000000001")!, tags: ["a", "b"], exact: true)

    static var encoder: JSONEncoder {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .iso8601
        encoder.keyEncodingStrategy = .convertToSnakeCase
        return encoder
    }

    // MARK: - Without I/O

    @Test func theFormStyleWritesArraysAndBooleansAsAsked() throws {
        let members = try ParameterValue.object(from: ["tag": ["a", "b"], "on": true, "n": 1])
        #expect(FormEncoding.written(ParameterLayers(own: members)) == "n=1&on=true&tag%5B%5D=a&tag%5B%5D=b")
        let repeated = FormStyle(arrays: .repeatedKeys, booleans: .numbers)
        #expect(FormEncoding.written(ParameterLayers(own: members), style: repeated) == "n=1&on=1&tag=a&tag=b")
        #expect(
            FormEncoding.written(ParameterLayers(own: members), style: FormStyle(arrays: .indexed))
                == "n=1&on=true&tag%5B0%5D=a&tag%5B1%5D=b")
        // Only arrays and members of arrays: an object's members keep `key[member]`.
        let nested = try ParameterValue.object(from: ["m": ["k": [false]]])
        #expect(FormEncoding.written(ParameterLayers(own: nested), style: repeated) == "m%5Bk%5D=0")
    }

    /// A request's parameters over its center's are read in key order, the request's member for a key in both, from
    /// either list's end; the query written from them is the same, and a nested member of either takes the pairs path.
    @Test func layeredParametersReadAsTheirMergeWithTheRequestsWinning() throws {
        let general = try ParameterValue.object(from: ["a": 1, "c": "center", "e": 5, "z": 26])
        let own = try ParameterValue.object(from: ["b": 2, "c": "own", "d": 4])
        let layers = ParameterLayers(own: own, general: general)
        let read = layers.map { "\($0.key)=\($0.value.formText(FormStyle()))" }
        #expect(read == ["a=1", "b=2", "c=own", "d=4", "e=5", "z=26"])
        #expect(layers.merged.map(\.key) == ["a", "b", "c", "d", "e", "z"])
        #expect(ParameterLayers(own: general, general: own).map(\.key) == ["a", "b", "c", "d", "e", "z"])
        #expect(ParameterLayers(own: [], general: general).merged.map(\.key) == ["a", "c", "e", "z"])
        #expect(ParameterLayers(own: own, general: []).merged.map(\.key) == ["b", "c", "d"])
        #expect(Array(ParameterLayers(own: [])).isEmpty && ParameterLayers(own: []).isEmpty)
        #expect(
            FormEncoding.written(layers, prefix: "/x", separator: UInt8(ascii: "?")) == "/x?a=1&b=2&c=own&d=4&e=5&z=26")
        let nested = ParameterLayers(own: own, general: try ParameterValue.object(from: ["c": ["x"], "y": ["k": 1]]))
        #expect(FormEncoding.written(nested) == "b=2&c=own&d=4&y%5Bk%5D=1")
    }

    @Test func anEncodableValueBecomesTheParametersWithEveryDigit() throws {
        var request = Request()
        request.setParameters(Self.search, encoder: Self.encoder)
        let parameters = request.parameters
        #expect(parameters["query"] as? JSON == "swift & more")
        #expect(parameters["page_size"] as? JSON == 20)
        #expect(parameters["since"] as? JSON == "2023-11-14T22:13:20Z")
        #expect((parameters["price"] as? JSON)?.number?.description == "12345678901234567890.000000001")
        #expect(parameters["tags"] as? JSON == ["a", "b"])
        #expect(try ParameterValue.object(from: parameters).count == 6)
    }

    // MARK: - On both engines

    /// A server that answers with what it received: the request target, the body as text and its type.
    static func echoing() throws -> LoopbackServer {
        try LoopbackServer { request in
            .json([
                "method": request.method, "target": request.target,
                "body": String(decoding: request.body, as: UTF8.self),
                "type": request.header("Content-Type") ?? "",
            ])
        }
    }

    @Test(arguments: bothEngines)
    func anEncodableValueGoesInTheQueryWithTheCentersParameters(engineName: String) async throws {
        let server = try Self.echoing()
        defer { server.stop() }
        let center = try loopbackCenter(engineName, server: server) { config in
            config.parameters = ["app": "demo"]
            config.formStyle = FormStyle(arrays: .repeatedKeys, booleans: .numbers)
        }
        let response = try await center.send { request in
            request.api = "search"
            request.setParameters(Self.search, encoder: Self.encoder)
        }
        #expect(
            response.json?["target"]?.string
                == "/search?app=demo&exact=1&page_size=20&price=12345678901234567890.000000001&query=swift%20%26%20more"
                + "&since=2023-11-14T22%3A13%3A20Z&tags=a&tags=b")
    }

    @Test(arguments: bothEngines)
    func aJSONBodyKeepsEveryDigitAndAFormBodyItsStyle(engineName: String) async throws {
        let server = try Self.echoing()
        defer { server.stop() }
        let center = try loopbackCenter(engineName, server: server)
        let json = try await center.send { request in
            request.api = "orders"
            request.method = .post
            request.requestSerializer = .json
            request.setParameters(Self.search, encoder: Self.encoder)
        }
        #expect(json.json?["type"]?.string == "application/json")
        let sent = try #require(json.json?["body"]?.string)
        #expect(sent.contains(#""price":12345678901234567890.000000001"#), "\(sent)")
        #expect(sent.contains(#""exact":true"#) && sent.contains(#""tags":["a","b"]"#), "\(sent)")
        let form = try await center.send { request in
            request.api = "orders"
            request.method = .post
            request.formStyle = FormStyle(arrays: .indexed)
            request.parameters = ["tags": ["a", "b"], "exact": false]
        }
        #expect(form.json?["body"]?.string == "exact=false&tags%5B0%5D=a&tags%5B1%5D=b")
        #expect(form.json?["target"]?.string == "/orders")
    }

    @Test(arguments: bothEngines)
    func aRequestPlacesItsParameters(engineName: String) async throws {
        let server = try Self.echoing()
        defer { server.stop() }
        let center = try loopbackCenter(engineName, server: server)
        let post = try await center.send { request in
            request.api = "items"
            request.method = .post
            request.parameterPlacement = .query
            request.parameters = ["page": 2]
        }
        #expect(post.json?["target"]?.string == "/items?page=2")
        #expect(post.json?["body"]?.string == "")
        let delete = try await center.send { request in
            request.api = "items"
            request.method = .delete
            request.parameterPlacement = .body
            request.parameters = ["id": 7]
        }
        #expect(delete.json?["target"]?.string == "/items")
        #expect(delete.json?["body"]?.string == "id=7")
        let get = await center.sendRecording { request in
            request.api = "items"
            request.parameterPlacement = .body
            request.parameters = ["id": 7]
        }
        #expect(get.error?.code == .encoding, "\(String(describing: get.error))")
        #expect(server.acceptedConnections == 1, "the GET with a body was never sent")
    }

    @Test(arguments: bothEngines)
    func aValueThatIsNoObjectFailsBeforeAnythingIsSent(engineName: String) async throws {
        let server = try Self.echoing()
        defer { server.stop() }
        let center = try loopbackCenter(engineName, server: server)
        let array = await center.sendRecording {
            $0.api = "a"; $0.setParameters([1, 2])
        }
        #expect(array.error?.code == .encoding)
        #expect(array.error?.message.contains("not as an array") == true, "\(String(describing: array.error))")
        let infinite = await center.sendRecording {
            $0.api = "a"; $0.setParameters(["x": Double.infinity])
        }
        #expect(infinite.error?.code == .encoding)
        #expect(server.acceptedConnections == 0)
        // Parameters from a value that can be encoded replace the failure.
        let mended = try await center.send { request in
            request.api = "a"
            request.setParameters([1, 2])
            request.setParameters(["x": 1])
        }
        #expect(mended.json?["target"]?.string == "/a?x=1")
    }
}
