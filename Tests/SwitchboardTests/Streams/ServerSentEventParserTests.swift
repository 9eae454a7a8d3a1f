import Foundation
import Testing
@testable import Switchboard

/// The event-stream rules of the WHATWG HTML standard, fed in every possible split of the bytes.
struct ServerSentEventParserTests {
    /// The events of `text`, parsed from the bytes split at every position (and whole), which must all agree.
    private func events(_ text: String, bytes: [UInt8]? = nil) -> [ServerSentEvent] {
        let all = bytes ?? Array(text.utf8)
        var whole = ServerSentEventParser()
        var expected: [ServerSentEvent] = []
        whole.push(Data(all)) { expected.append($0) }
        for cut in 0...all.count {
            var parser = ServerSentEventParser()
            var found: [ServerSentEvent] = []
            parser.push(Data(all[..<cut])) { found.append($0) }
            parser.push(Data(all[cut...])) { found.append($0) }
            #expect(found == expected, "split at \(cut)")
        }
        var byteByByte = ServerSentEventParser()
        var found: [ServerSentEvent] = []
        for byte in all { byteByByte.push(Data([byte])) { found.append($0) } }
        #expect(found == expected, "one byte at a time")
        return expected
    }

    @Test func fieldsCommentsAndMultiLineData() {
        let parsed = events(
            ": a comment\nid: 7\nevent: update\ndata: first\ndata: second\nretry: 2500\n\ndata: plain\n\n")
        #expect(
            parsed == [
                ServerSentEvent(type: "update", data: "first\nsecond", id: "7", retry: .milliseconds(2500)),
                ServerSentEvent(type: "message", data: "plain", id: "7"),
            ])
    }

    @Test(arguments: ["\n", "\r\n", "\r"])
    func everyLineEndingSeparatesLines(newline: String) {
        let text = ["id: 1", "data: a", "", "data: b", "data: c", "", ""].joined(separator: newline)
        #expect(
            events(text) == [
                ServerSentEvent(data: "a", id: "1"), ServerSentEvent(data: "b\nc", id: "1"),
            ])
    }

    @Test func aByteOrderMarkAtTheStartIsSkippedOnlyThere() {
        let bom: [UInt8] = [0xEF, 0xBB, 0xBF]
        let parsed = events("", bytes: bom + Array("data: x\n\n".utf8) + bom + Array("data: y\n\n".utf8))
        // The second mark is part of a field name, "\u{FEFF}data", which is unknown and ignored.
        #expect(parsed == [ServerSentEvent(data: "x")])
    }

    @Test func aFieldWithoutAColonHasAnEmptyValue() {
        // `data` alone appends an empty line; `event` alone resets the type to "message".
        #expect(events("data\ndata\n\n") == [ServerSentEvent(data: "\n")])
        #expect(events("event\ndata: x\n\n") == [ServerSentEvent(data: "x")])
    }

    @Test func anEmptyDataFieldStillDispatchesAnEvent() {
        #expect(events("data:\n\n") == [ServerSentEvent(data: "")])
        #expect(events("data: \n\n") == [ServerSentEvent(data: "")])
    }

    @Test func aBlockWithoutDataDispatchesNothingButKeepsItsID() {
        #expect(events("id: 3\nevent: ignored\n\ndata: x\n\n") == [ServerSentEvent(data: "x", id: "3")])
    }

    @Test func onlyOneSpaceAfterTheColonIsDropped() {
        #expect(events("data:  two spaces\ndata:none\n\n") == [ServerSentEvent(data: " two spaces\nnone")])
    }

    @Test func anIDWithNULIsIgnoredAndAnEmptyOneResets() {
        #expect(
            events("id: 5\n\nid: a\u{0}b\ndata: x\n\nid\ndata: y\n\n") == [
                ServerSentEvent(data: "x", id: "5"), ServerSentEvent(data: "y", id: ""),
            ])
    }

    @Test func retryCountsOnlyWhenAllDigits() {
        var parser = ServerSentEventParser()
        var found: [ServerSentEvent] = []
        parser.push(Data("retry: 12a\nretry: -5\nretry:\ndata: x\n\nretry: 300\n\n".utf8)) { found.append($0) }
        #expect(found == [ServerSentEvent(data: "x")])
        #expect(parser.reconnectionTime == .milliseconds(300))
    }

    @Test func unknownFieldsAreIgnoredAndAnUnfinishedEventIsNotDispatched() {
        #expect(events("foo: bar\ndata: x\n\ndata: never closed\n") == [ServerSentEvent(data: "x")])
    }

    @Test func invalidUTF8BecomesReplacementCharacters() {
        let bytes = Array("data: a".utf8) + [0xFF] + Array("b\n\n".utf8)
        #expect(events("", bytes: bytes) == [ServerSentEvent(data: "a\u{FFFD}b")])
    }

    @Test func linesSplitAtEveryTerminatorAcrossChunks() {
        var splitter = LineSplitter()
        var lines: [String] = []
        for piece in ["a\r", "\nb\rc", "\n", "\r", "\nd"] {
            splitter.push(Data(piece.utf8)) { lines.append(String(decoding: $0, as: UTF8.self)) }
        }
        if let last = splitter.finish() { lines.append(String(decoding: last, as: UTF8.self)) }
        #expect(lines == ["a", "b", "c", "", "d"])
    }
}
