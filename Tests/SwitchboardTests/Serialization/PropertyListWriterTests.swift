import Foundation
import Testing
@testable import Switchboard
import SwitchboardTestSupport

/// The `.plist` request serializer writes its XML itself. `PropertyListSerialization` changed values on the way: a
/// double went with 17 digits (`19.99` as `19.989999999999998`, which a server reading decimals keeps as such),
/// `-0.0` as `0.0`, a carriage return as it is (an XML parser reads it as a line feed), and a control character as it
/// is (which no XML parser reads).
@Suite struct PropertyListWriterTests {
    private func written(_ parameters: [String: any Sendable]) throws -> (text: String, read: [String: Any]) {
        let data = try ParameterValue.propertyList(try ParameterValue.object(from: parameters))
        let read = try #require(try PropertyListSerialization.propertyList(from: data, format: nil) as? [String: Any])
        return (String(decoding: data, as: UTF8.self), read)
    }

    @Test func valuesGoAsTheyAre() throws {
        let (text, read) = try written([
            "price": 19.99, "tenth": 0.1, "negativeZero": -0.0, "small": 1e-7, "whole": 100.0,
            "decimal": Decimal(string: "19.99")!, "digits": JSON.number(JSON.Number(text: "0.10")!),
            "max": UInt64.max, "min": Int64.min, "yes": true, "no": false,
            "text": "a<b>&c \"q\" 'a'\r\n\tend 北京 🙂", "empty": "",
            "list": [1, 2] as [Int], "none": [Int](), "map": ["k": "v"], "nothing": [String: Int](),
            "up": Double.infinity, "down": -Double.infinity, "notANumber": Double.nan,
        ])
        #expect(text.hasPrefix("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<!DOCTYPE plist PUBLIC"))
        #expect(text.hasSuffix("</dict>\n</plist>\n"))
        for element in [
            "<real>19.99</real>", "<real>0.1</real>", "<real>-0.0</real>", "<real>1e-07</real>", "<real>100</real>",
            "<real>0.10</real>", "<integer>18446744073709551615</integer>", "<integer>-9223372036854775808</integer>",
            "<key>none</key>\n\t<array/>", "<key>nothing</key>\n\t<dict/>",
        ] {
            #expect(text.contains(element), "\(element) in \(text)")
        }
        #expect((read["price"] as? NSNumber)?.doubleValue == 19.99)
        #expect((read["negativeZero"] as? NSNumber)?.doubleValue.sign == .minus)
        #expect((read["small"] as? NSNumber)?.doubleValue == 1e-7)
        #expect((read["decimal"] as? NSNumber)?.doubleValue == 19.99)
        #expect((read["max"] as? NSNumber)?.uint64Value == UInt64.max)
        #expect((read["min"] as? NSNumber)?.int64Value == Int64.min)
        #expect((read["up"] as? NSNumber)?.doubleValue == .infinity)
        #expect((read["down"] as? NSNumber)?.doubleValue == -.infinity)
        #expect((read["notANumber"] as? NSNumber)?.doubleValue.isNaN == true)
        #expect(read["yes"] as? Bool == true)
        #expect(read["no"] as? Bool == false)
        #expect(read["text"] as? String == "a<b>&c \"q\" 'a'\r\n\tend 北京 🙂", "the carriage return too")
        #expect(read["empty"] as? String == "")
        #expect((read["list"] as? [NSNumber])?.map(\.intValue) == [1, 2])
        #expect((read["none"] as? [Any])?.isEmpty == true)
        #expect(read["map"] as? [String: String] == ["k": "v"])
        #expect((read["nothing"] as? [String: Any])?.isEmpty == true)
    }

    @Test func keysAreEscapedAndNestedValuesIndented() throws {
        let (text, read) = try written(["a&b": ["x<y": [["deep": 1]]]])
        #expect(
            text.contains(
                "<dict>\n\t<key>a&amp;b</key>\n\t<dict>\n\t\t<key>x&lt;y</key>\n\t\t<array>\n\t\t\t<dict>\n"
                    + "\t\t\t\t<key>deep</key>\n\t\t\t\t<integer>1</integer>\n\t\t\t</dict>\n\t\t</array>\n\t</dict>\n"
                    + "</dict>\n"), "\(text)")
        let inner = (read["a&b"] as? [String: Any])?["x<y"] as? [[String: Any]]
        #expect((inner?.first?["deep"] as? NSNumber)?.intValue == 1)
    }

    @Test(arguments: ["\u{0}", "\u{1}", "\u{1B}", "\u{FFFE}", "\u{FFFF}"])
    func aCharacterXMLCannotHoldIsRefused(character: String) async {
        await BadInputTests().expectEncodingError(
            {
                $0.api = "x"; $0.method = .post; $0.requestSerializer = .plist
                $0.parameters = ["outer": ["name": "a\(character)b"]]
            }, mentions: "parameter \"outer.name\" holds U+")
        await BadInputTests().expectEncodingError(
            {
                $0.api = "x"; $0.method = .post; $0.requestSerializer = .plist; $0.parameters = ["k\(character)": 1]
            }, mentions: "which an XML property list cannot hold")
    }

    /// Over loopback, on both engines: the body the server reads.
    @Test(arguments: bothEngines)
    func theServerReadsTheValuesAsWritten(engineName: String) async throws {
        let bodies = Locked<[Data]>([])
        let server = try LoopbackServer { request in
            bodies.withLock { $0.append(request.body) }
            return ServerResponse(status: 204, headers: [], body: Data())
        }
        defer { server.stop() }
        let center = try loopbackCenter(engineName, server: server)
        _ = try await center.send { request in
            request.api = "prices"
            request.method = .post
            request.requestSerializer = .plist
            request.parameters = ["price": 19.99, "note": "a\r\nb"]
        }
        let body = String(decoding: try #require(bodies.snapshot.first), as: UTF8.self)
        #expect(
            body.hasSuffix(
                "<plist version=\"1.0\">\n<dict>\n\t<key>note</key>\n\t<string>a&#13;\nb</string>\n\t<key>price</key>\n"
                    + "\t<real>19.99</real>\n</dict>\n</plist>\n"), "\(engineName): \(body)")
    }
}
