import Foundation
import Testing
@testable import Switchboard
import SwitchboardTestSupport

/// `XMLParser` on Linux stops the process at an element or attribute name, a comment or a processing instruction that
/// is not UTF-8 in a document read as UTF-8 (it force-unwraps the text libxml2 hands it): such a body from a server,
/// decoded with `.xml` or read through `response.xml`, ended the app. Switchboard refuses it first, with `.decoding`;
/// documents in other encodings still go to the parser, which converts them.
@Suite struct XMLEncodingTests {
    /// Bodies that stopped the process inside `XMLParser`, each found or reduced by fuzzing `XML(data:)`.
    static let stoppedTheProcess: [(String, [UInt8])] = [
        ("five bytes", [0x3C, 0xC1, 0x22, 0x22, 0x31]),
        ("an element name", Array("<a".utf8) + [0xC1] + Array(">x</a".utf8) + [0xC1] + Array(">".utf8)),
        ("an attribute name", Array("<a b".utf8) + [0xC1] + Array("=\"1\">x</a>".utf8)),
        ("a comment", Array("<a><!--".utf8) + [0xC1] + Array("--></a>".utf8)),
        ("a processing instruction", Array("<a><?p".utf8) + [0xC1] + Array(" d?></a>".utf8)),
        ("UTF-8 declared", Array("<?xml version=\"1.0\" encoding=\"UTF-8\"?><a".utf8) + [0xC1] + Array("/>".utf8)),
        (
            "UTF-16 declared in 8-bit text",
            Array("<?xml version=\"1.0\" encoding=\"UTF-16\"?><a".utf8) + [0xC1] + Array("/>".utf8)
        ),
        ("an empty encoding name", Array("<?xml version=\"1.0\" encoding=\"\"?><a".utf8) + [0xC1] + Array("/>".utf8)),
        (
            "an encoding name with blanks",
            Array("<?xml version=\"1.0\" encoding=' latin1 '?><a".utf8) + [0xC1] + Array("/>".utf8)
        ),
    ]

    @Test(arguments: stoppedTheProcess)
    func aNameOrCommentThatIsNotUTF8IsRefused(name: String, bytes: [UInt8]) {
        let result = Result { () throws(HTTPError) in try XML(data: Data(bytes)) }
        guard case .failure(let error) = result else {
            Issue.record("\(name): parsed")
            return
        }
        #expect(error.code == .decoding, "\(name)")
        #expect(error.message.contains("not valid UTF-8"), "\(name): \(error.message)")
    }

    /// Documents in another encoding, declared or marked, are converted by the parser as before (the same bytes
    /// above 0x7F that are not UTF-8).
    @Test func documentsInOtherEncodingsStillParse() throws {
        var bytes = Array("<?xml version=\"1.0\" encoding=\"ISO-8859-1\"?><r".utf8) + [0xC1]
        bytes += Array(" a=\"".utf8) + [0xE9] + Array("\">caf".utf8) + [0xE9]
        bytes += Array("</r".utf8) + [0xC1] + Array(">".utf8)
        let latin1 = try XML(data: Data(bytes))
        #expect(latin1.name == "rÁ")
        #expect(latin1.attributes["a"] == "é")
        #expect(latin1.text == "café")
        var utf16 = Data([0xFF, 0xFE])
        utf16.append("<r a=\"é\">\u{1F600}</r>".data(using: .utf16LittleEndian)!)
        let marked = try XML(data: utf16)
        #expect(marked.name == "r" && marked.attributes["a"] == "é" && marked.text == "\u{1F600}")
        let unmarked = try XML(data: "<?xml version=\"1.0\"?><r>ü</r>".data(using: .utf16LittleEndian)!)
        #expect(unmarked.name == "r" && unmarked.text == "ü")
        let utf8 = try XML(data: Data("<?xml version='1.0' encoding='utf-8'?><ré a='ü'><!-- ß --><?p ç?>ñ</ré>".utf8))
        #expect(utf8.name == "ré" && utf8.attributes["a"] == "ü" && utf8.text == "ñ")
    }

    /// The five bytes from a server on loopback, on each engine: `.xml` fails with `.decoding`, and a response taken
    /// raw answers `xml` with `nil`; the process goes on.
    @Test(arguments: bothEngines)
    func aServersBodyThatStoppedTheProcessFailsDecoding(engineName: String) async throws {
        let body = Data([0x3C, 0xC1, 0x22, 0x22, 0x31])
        let server = try LoopbackServer { _ in
            ServerResponse(headers: [("Content-Type", "application/xml")], body: body)
        }
        let center = try loopbackCenter(engineName, server: server)
        let outcome = await center.sendRecording {
            $0.api = "feed.xml"; $0.responseSerializer = .xml
        }
        #expect(outcome.error?.code == .decoding, "\(engineName): \(outcome)")
        #expect(outcome.error?.response?.data == body, "\(engineName)")
        let raw = try await center.send {
            $0.api = "feed.xml"; $0.responseSerializer = .raw
        }
        #expect(raw.data == body && raw.xml == nil, "\(engineName)")
    }
}
