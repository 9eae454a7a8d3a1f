import Foundation
import Testing
@testable import Switchboard

/// The event-stream rules of the WHATWG HTML standard, fed in every possible split of the bytes.
struct ServerSentEventParserTests {
    /// The events of `text`, parsed from the bytes split at every position (and whole), which must all agree.
    private func events(_ text: String, bytes: [UInt8]? = nil) throws -> [ServerSentEvent] {
        let all = bytes ?? Array(text.utf8)
        var whole = ServerSentEventParser()
        var expected: [ServerSentEvent] = []
        try whole.push(Data(all)) { expected.append($0) }
        for cut in 0...all.count {
            var parser = ServerSentEventParser()
            var found: [ServerSentEvent] = []
            try parser.push(Data(all[..<cut])) { found.append($0) }
            try parser.push(Data(all[cut...])) { found.append($0) }
            #expect(found == expected, "split at \(cut)")
        }
        var byteByByte = ServerSentEventParser()
        var found: [ServerSentEvent] = []
        for byte in all { try byteByByte.push(Data([byte])) { found.append($0) } }
        #expect(found == expected, "one byte at a time")
        return expected
    }

    @Test func fieldsCommentsAndMultiLineData() throws {
        let parsed = try events(
            ": a comment\nid: 7\nevent: update\ndata: first\ndata: second\nretry: 2500\n\ndata: plain\n\n")
        #expect(
            parsed == [
                ServerSentEvent(type: "update", data: "first\nsecond", id: "7", retry: .milliseconds(2500)),
                ServerSentEvent(type: "message", data: "plain", id: "7"),
            ])
    }

    @Test(arguments: ["\n", "\r\n", "\r"])
    func everyLineEndingSeparatesLines(newline: String) throws {
        let text = ["id: 1", "data: a", "", "data: b", "data: c", "", ""].joined(separator: newline)
        #expect(
            try events(text) == [
                ServerSentEvent(data: "a", id: "1"), ServerSentEvent(data: "b\nc", id: "1"),
            ])
    }

    @Test func aByteOrderMarkAtTheStartIsSkippedOnlyThere() throws {
        let bom: [UInt8] = [0xEF, 0xBB, 0xBF]
        let parsed = try events("", bytes: bom + Array("data: x\n\n".utf8) + bom + Array("data: y\n\n".utf8))
        // The second mark is part of a field name, "\u{FEFF}data", which is unknown and ignored.
        #expect(parsed == [ServerSentEvent(data: "x")])
    }

    @Test func aFieldWithoutAColonHasAnEmptyValue() throws {
        // `data` alone appends an empty line; `event` alone resets the type to "message".
        #expect(try events("data\ndata\n\n") == [ServerSentEvent(data: "\n")])
        #expect(try events("event\ndata: x\n\n") == [ServerSentEvent(data: "x")])
    }

    @Test func anEmptyDataFieldStillDispatchesAnEvent() throws {
        #expect(try events("data:\n\n") == [ServerSentEvent(data: "")])
        #expect(try events("data: \n\n") == [ServerSentEvent(data: "")])
    }

    @Test func aBlockWithoutDataDispatchesNothingButKeepsItsID() throws {
        #expect(try events("id: 3\nevent: ignored\n\ndata: x\n\n") == [ServerSentEvent(data: "x", id: "3")])
    }

    @Test func onlyOneSpaceAfterTheColonIsDropped() throws {
        #expect(try events("data:  two spaces\ndata:none\n\n") == [ServerSentEvent(data: " two spaces\nnone")])
    }

    @Test func anIDWithNULIsIgnoredAndAnEmptyOneResets() throws {
        #expect(
            try events("id: 5\n\nid: a\u{0}b\ndata: x\n\nid\ndata: y\n\n") == [
                ServerSentEvent(data: "x", id: "5"), ServerSentEvent(data: "y", id: ""),
            ])
    }

    @Test func retryCountsOnlyWhenAllDigits() throws {
        var parser = ServerSentEventParser()
        var found: [ServerSentEvent] = []
        try parser.push(Data("retry: 12a\nretry: -5\nretry:\ndata: x\n\nretry: 300\n\n".utf8)) { found.append($0) }
        #expect(found == [ServerSentEvent(data: "x")])
        #expect(parser.reconnectionTime == .milliseconds(300))
    }

    @Test func unknownFieldsAreIgnoredAndAnUnfinishedEventIsNotDispatched() throws {
        #expect(try events("foo: bar\ndata: x\n\ndata: never closed\n") == [ServerSentEvent(data: "x")])
    }

    @Test func invalidUTF8BecomesReplacementCharacters() throws {
        let bytes = Array("data: a".utf8) + [0xFF] + Array("b\n\n".utf8)
        #expect(try events("", bytes: bytes) == [ServerSentEvent(data: "a\u{FFFD}b")])
    }

    @Test func linesSplitAtEveryTerminatorAcrossChunks() throws {
        var splitter = LineSplitter()
        var lines: [String] = []
        for piece in ["a\r", "\nb\rc", "\n", "\r", "\nd"] {
            try splitter.push(Data(piece.utf8)) { lines.append(String(decoding: $0, as: UTF8.self)) }
        }
        if let last = splitter.finish() { lines.append(String(decoding: last, as: UTF8.self)) }
        #expect(lines == ["a", "b", "c", "", "d"])
    }

    @Test func anEmptyChunkBetweenACarriageReturnAndItsLineFeedChangesNothing() throws {
        var splitter = LineSplitter()
        var lines: [String] = []
        for piece in ["a\r", "", "\nb\r", "", "", "\n"] {
            try splitter.push(Data(piece.utf8)) { lines.append(String(decoding: $0, as: UTF8.self)) }
        }
        #expect(lines == ["a", "b"])
        // The same through the event parser: one event, not one cut short at a blank line the chunks made.
        var parser = ServerSentEventParser()
        var received: [ServerSentEvent] = []
        for piece in ["data: 1\r", "", "\ndata: 2\r", "", "\n\r", "", "\n"] {
            try parser.push(Data(piece.utf8)) { received.append($0) }
        }
        #expect(received == [ServerSentEvent(data: "1\n2")])
    }

    /// Every line of `bytes` fed in two pieces cut at every position, through a splitter of `limit`: the lines it
    /// gave, and whether it refused one.
    private func splitEverywhere(_ bytes: [UInt8], limit: Int) -> [([String], Bool)] {
        (0...bytes.count).map { (cut: Int) -> ([String], Bool) in
            var splitter = LineSplitter(limit: limit)
            var lines: [String] = []
            do throws(HTTPError) {
                for piece in [bytes[..<cut], bytes[cut...]] {
                    try splitter.push(Data(piece)) { lines.append(String(decoding: $0, as: UTF8.self)) }
                }
                if let last = splitter.finish() { lines.append(String(decoding: last, as: UTF8.self)) }
                return (lines, false)
            } catch {
                #expect(error.code == .streamOverflow)
                return (lines, true)
            }
        }
    }

    @Test func aLineOfTheLimitIsReadAndALongerOneRefusedWhereverItIsCut() {
        for terminator in ["\n", "\r\n", "\r", ""] {
            let fits = Array("ab\n12345\(terminator)".utf8)
            for (lines, refused) in splitEverywhere(fits, limit: 5) {
                #expect(!refused && lines == ["ab", "12345"], "\(terminator.debugDescription)")
            }
            let over = Array("ab\n123456\(terminator)cd\n".utf8)
            for (lines, refused) in splitEverywhere(over, limit: 5) {
                #expect(refused && lines == ["ab"], "\(terminator.debugDescription): \(lines)")
            }
        }
    }

    @Test func aBodyWithoutLineBreaksIsNotHeldPastTheLimit() {
        var splitter = LineSplitter(limit: 1000)
        var pushed = 0
        var refusedAt: Int?
        for _ in 0..<100 {
            do throws(HTTPError) {
                try splitter.push(Data(repeating: 0x61, count: 300)) { _ in }
                pushed += 300
            } catch {
                refusedAt = pushed + 300
                break
            }
        }
        #expect(refusedAt == 1200, "refused at the first piece that takes the line past 1000 bytes")
        #expect(splitter.finish() == nil, "nothing held after the refusal")
    }

    @Test func anEventsDataIsBoundedAcrossItsLines() throws {
        // Three data lines of 4 bytes: 4 + 1 + 4 + 1 + 4 = 14 bytes of data.
        let text = "data: x\n\ndata: 1234\ndata: 5678\ndata: 9abc\n\n"
        for (limit, expected) in [(14, ["x", "1234\n5678\n9abc"]), (13, ["x"])] {
            var parser = ServerSentEventParser(limit: limit)
            var found: [String] = []
            var refused = false
            do throws(HTTPError) {
                try parser.push(Data(text.utf8)) { found.append($0.data) }
            } catch {
                #expect(error.code == .streamOverflow)
                #expect(error.message.contains("more than \(limit) bytes of data"))
                refused = true
            }
            #expect(found == expected, "limit \(limit)")
            #expect(refused == (limit == 13))
        }
    }
}
