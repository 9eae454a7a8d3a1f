import Foundation
import Testing
@testable import Switchboard

/// `JSON.Object`: members in the order of the text or of their adding, each name once, equal in any order; read by
/// search while small and through an index past 16 members.
@Suite struct JSONObjectTests {
    @Test func aParsedObjectKeepsTheOrderOfItsText() throws {
        let json = try JSON(data: Data(#"{"z":1,"a":2,"m":{"y":true,"b":null},"k":[{"q":1,"p":2}]}"#.utf8))
        #expect(json.object?.keys == ["z", "a", "m", "k"])
        #expect(json["m"]?.object?.keys == ["y", "b"])
        #expect(json["k"]?[0]?.object?.keys == ["q", "p"])
        #expect(json.object?.values == [1, 2, ["y": true, "b": nil], [["q": 1, "p": 2]]])
        #expect(json.object.map { $0.map(\.key) } == ["z", "a", "m", "k"])
    }

    /// A repeated name keeps its first place with its last value, and the text is marked as one `JSONDecoder` reads
    /// otherwise.
    @Test func aRepeatedNameKeepsItsPlaceWithTheLastValue() throws {
        let parsed = try JSON.parsed(Data(#"{"a":1,"b":2,"a":3}"#.utf8))
        #expect(parsed.value.object?.keys == ["a", "b"])
        #expect(parsed.value["a"] == 3)
        #expect(!parsed.decodable)
        #expect(try JSON.parsed(Data(#"{"a":1,"b":2}"#.utf8)).decodable)
        let literal: JSON.Object = ["x": 1, "y": 2, "x": 3]
        #expect(literal.keys == ["x", "y"] && literal["x"] == 3)
    }

    @Test func objectsAreEqualAndHashAlikeInAnyOrder() {
        let one: JSON = ["a": 1, "b": ["c": "d", "e": nil]]
        let other: JSON = ["b": ["e": nil, "c": "d"], "a": 1]
        #expect(one == other)
        #expect(one.hashValue == other.hashValue)
        #expect(Set([one, other]).count == 1)
        #expect(one != ["a": 1, "b": ["c": "d", "e": false]])
        #expect(one != ["a": 1])
        #expect(one != ["a": 1, "b": ["c": "d", "e": nil], "f": 2])
        #expect(JSON.Object(["b": 2, "a": 1]).keys == ["a", "b"])
    }

    /// Past 16 members the names are indexed: every lookup, replacement and removal reads the same as a search
    /// would, in either order of adding, and an object shrunk below 16 again is searched.
    @Test func largeObjectsReadTheSameThroughTheirIndex() {
        let names = (0..<40).map { "member\($0)" }
        var object = JSON.Object()
        for (value, name) in names.enumerated() {
            #expect(object.updateValue(.number(.init(value)), forKey: name) == nil)
        }
        #expect(object.count == 40 && object.keys == names)
        for (value, name) in names.enumerated() { #expect(object[name] == .number(.init(value))) }
        #expect(object["member40"] == nil)
        #expect(object.updateValue("replaced", forKey: "member7") == 7)
        #expect(object.keys == names && object["member7"] == "replaced")
        for name in names[10..<35] { #expect(object.removeValue(forKey: name) != nil) }
        #expect(object.removeValue(forKey: "member12") == nil)
        #expect(object.keys == Array(names[..<10] + names[35...]))
        #expect(object["member36"] == 36 && object["member20"] == nil)
        object["member20"] = "back"
        #expect(object.keys.last == "member20" && object["member20"] == "back")
        var reversed = JSON.Object()
        for name in object.keys.reversed() { reversed[name] = object[name] }
        #expect(reversed == object && reversed.hashValue == object.hashValue)
        reversed["member0"] = nil
        #expect(reversed != object && reversed.count == 15)
    }

    /// Printed with sorted names (as before, whatever the order), and through `Codable` as the same object.
    @Test func anObjectPrintsSortedAndEncodesAsItself() throws {
        let json: JSON = ["z": 1, "a": ["y": "x", "b": true]]
        #expect(json.description == #"{"a":{"b":true,"y":"x"},"z":1}"#)
        let decoded = try JSONDecoder().decode(JSON.self, from: JSONEncoder().encode(json))
        #expect(decoded == json)
        let object = try JSONDecoder().decode(JSON.Object.self, from: Data(#"{"b":1,"a":2}"#.utf8))
        #expect(object.keys == ["a", "b"])
    }
}
