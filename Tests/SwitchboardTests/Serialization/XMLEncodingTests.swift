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

    /// A processing instruction without data (`<?x?>`) is well-formed XML, and stopped the process inside
    /// `XMLParser` on Linux (it read the missing data as a C string): it is read as `<?x ?>`, wherever it stands, and
    /// the text of comments and CDATA sections is kept as it is.
    @Test func anInstructionWithoutDataIsRead() throws {
        #expect(try XML(data: Data("<a><?x?>t</a>".utf8)).text == "t")
        #expect(try XML(data: Data("<?xml version='1.0'?><?x?><a/><?y?>".utf8)).name == "a")
        #expect(try XML(data: Data("<!DOCTYPE a [<?x?>]><a>u</a>".utf8)).text == "u")
        #expect(try XML(data: Data("<!DOCTYPE a [<!ENTITY e \"<?x?>\">]><a>&e;v</a>".utf8)).name == "a")
        let kept = try XML(data: Data("<a><!-- <?x?> --><![CDATA[<?x?>]]><?y?></a>".utf8))
        #expect(kept.text == "<?x?>")
        let spaced = XML.spacingInstructionsWithoutData(
            Data("<?x?><!--<?c?>--><a><![CDATA[<?d?>]]><?e f?><?g?></a>".utf8))
        #expect(String(decoding: spaced, as: UTF8.self) == "<?x ?><!--<?c?>--><a><![CDATA[<?d?>]]><?e f?><?g ?></a>")
        let plain = Data("<a>no instruction</a>".utf8)
        #expect(XML.spacingInstructionsWithoutData(plain) == plain)
    }

    /// UTF-16 and UTF-32 documents are read into UTF-8 first, so that the same rules keep the parser from stopping.
    @Test func wideDocumentsAreReadWithTheSameRules() throws {
        let text = "<?xml version=\"1.0\" encoding=\"UTF-16\"?><a b=\"\u{E9}\"><?x?>\u{1F600}</a>"
        for (encoding, mark) in [
            (String.Encoding.utf16LittleEndian, [UInt8]([0xFF, 0xFE])), (.utf16BigEndian, [0xFE, 0xFF]),
            (.utf16LittleEndian, []),
            (.utf32LittleEndian, [0xFF, 0xFE, 0x00, 0x00]), (.utf32BigEndian, [0x00, 0x00, 0xFE, 0xFF]),
            (.utf32BigEndian, []),
        ] {
            let data = Data(mark) + text.data(using: encoding)!
            let root = try XML(data: data)
            #expect(
                root.name == "a" && root.attributes["b"] == "\u{E9}" && root.text == "\u{1F600}", "\(encoding) \(mark)")
        }
        // A lone surrogate is not UTF-16.
        let broken =
            Data([0xFF, 0xFE]) + "<a>".data(using: .utf16LittleEndian)! + Data([0x00, 0xD8])
            + "</a>".data(using: .utf16LittleEndian)!
        #expect(throws: HTTPError.self) { try XML(data: broken) }
    }

    /// EBCDIC cannot be read into UTF-8 here: a document in it holding an instruction without data is refused, and
    /// any other still goes to the parser.
    @Test func anEBCDICDocumentWithAnInstructionWithoutDataIsRefused() throws {
        // `<?xml version="1.0" encoding="IBM037"?><a><?x?>t</a>` in code page 037, then with `<?x y?>`.
        let declaration: [UInt8] = [
            0x4C, 0x6F, 0xA7, 0x94, 0x93, 0x40, 0xA5, 0x85, 0x99, 0xA2, 0x89, 0x96, 0x95, 0x7E, 0x7F, 0xF1, 0x4B,
            0xF0, 0x7F, 0x40, 0x85, 0x95, 0x83, 0x96, 0x84, 0x89, 0x95, 0x87, 0x7E, 0x7F, 0xC9, 0xC2, 0xD4, 0xF0,
            0xF3, 0xF7, 0x7F, 0x6F, 0x6E, 0x4C, 0x81, 0x6E,
        ]
        let bare = declaration + [0x4C, 0x6F, 0xA7, 0x6F, 0x6E, 0xA3, 0x4C, 0x61, 0x81, 0x6E]
        let result = Result { () throws(HTTPError) in try XML(data: Data(bare)) }
        #expect(result.failureCode == .decoding)
        let withData = declaration + [0x4C, 0x6F, 0xA7, 0x40, 0xA8, 0x6F, 0x6E, 0xA3, 0x4C, 0x61, 0x81, 0x6E]
        let root = try XML(data: Data(withData))
        #expect(root.name == "a" && root.text == "t")
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

    /// A document with an instruction without data from a server on loopback, on each engine: read, not fatal.
    @Test(arguments: bothEngines)
    func aServersInstructionWithoutDataIsRead(engineName: String) async throws {
        let server = try LoopbackServer { _ in
            ServerResponse(headers: [("Content-Type", "application/xml")], body: Data("<a><?x?>t</a>".utf8))
        }
        let center = try loopbackCenter(engineName, server: server)
        let response = try await center.send {
            $0.api = "feed.xml"; $0.responseSerializer = .xml
        }
        #expect(response.xml?.name == "a" && response.xml?.text == "t", "\(engineName)")
    }
}
