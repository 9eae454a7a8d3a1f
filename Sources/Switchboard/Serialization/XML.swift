import Foundation
#if canImport(FoundationXML)
import FoundationXML
#endif

/// An XML element with its attributes, text and child elements: what the `.xml` response serializer produces.
///
/// ```swift
/// let title = response.xml?["slide"]?["title"]?.text
/// ```
public struct XML: Sendable, Hashable {
    /// The element name.
    public var name: String
    /// The attributes.
    public var attributes: [String: String]
    /// The child elements, in document order.
    public var children: [XML]
    /// The text directly inside this element (not inside its children), trimmed of surrounding white space.
    public var text: String

    /// Creates an element.
    public init(name: String, attributes: [String: String] = [:], children: [XML] = [], text: String = "") {
        self.name = name
        self.attributes = attributes
        self.children = children
        self.text = text
    }

    /// The first child element with this name.
    public subscript(child: String) -> XML? {
        children.first { $0.name == child }
    }

    /// Every child element with this name.
    public func all(_ child: String) -> [XML] {
        children.filter { $0.name == child }
    }

    /// How deep elements may nest, as for JSON (`JSONParser.maximumDepth`): `XMLParser` on Linux reads any depth,
    /// and a tree 100,000 elements deep from a hostile server overflowed the stack when hashed.
    static let maximumDepth = 512

    /// Parses an XML document into its root element.
    ///
    /// - Throws: `HTTPError` with code `.decoding` when the data is not well-formed XML, nests elements more than
    ///   512 deep, or is read as UTF-8 (it declares no other encoding) and is not valid UTF-8.
    public init(data: Data) throws(HTTPError) {
        if XML.readsAsUTF8(data), !data.withUnsafeBytes(\.isValidUTF8) {
            // XMLParser on Linux stops the process at a name, comment or processing instruction that is not UTF-8
            // (it force-unwraps the text libxml2 hands it): five bytes from a server, `<`, 0xC1, `""1`, were enough.
            throw HTTPError(
                .decoding,
                "the body is not well-formed XML (it is read as UTF-8, having no other encoding, and is not valid "
                    + "UTF-8)")
        }
        let builder = TreeBuilder()
        let parser = XMLParser(data: data)
        parser.delegate = builder
        parser.shouldResolveExternalEntities = false
        let parsed = parser.parse()
        if builder.tooDeep {
            throw HTTPError(.decoding, "the body is XML nested more than \(XML.maximumDepth) deep")
        }
        guard parsed, let root = builder.root else {
            let reason = parser.parserError.map { " (\($0.localizedDescription))" } ?? ""
            throw HTTPError(.decoding, "the body is not well-formed XML\(reason)", underlying: parser.parserError)
        }
        self = root
    }
}

extension XML {
    /// Whether libxml2, beneath `XMLParser`, reads a document as UTF-8: it starts with UTF-8's byte order mark, or
    /// shows no other encoding. Another encoding shows by the first four bytes as libxml2 reads them (a byte order mark
    /// of UTF-16 or UTF-32, `<` or `<?` in UTF-16 or UTF-32 without one, `<?xm` in EBCDIC), or by an XML declaration
    /// at the start that names one outside the UTF and UCS families, spelled as XML spells an encoding name. libxml2
    /// converts such a document to UTF-8, or fails it; it reads any other as UTF-8, a declaration of UTF-16 in 8-bit
    /// text and a name it cannot read (empty, with blanks) too.
    static func readsAsUTF8(_ data: Data) -> Bool {
        let head = Array(data.prefix(4))
        if head.starts(with: [0xEF, 0xBB, 0xBF]) { return true }
        let others: [[UInt8]] = [
            [0xFE, 0xFF], [0xFF, 0xFE], [0x00, 0x00, 0xFE, 0xFF], [0x3C, 0x00, 0x3F, 0x00], [0x00, 0x3C, 0x00, 0x3F],
            [0x00, 0x00, 0x00, 0x3C], [0x3C, 0x00, 0x00, 0x00], [0x00, 0x00, 0x3C, 0x00], [0x00, 0x3C, 0x00, 0x00],
            [0x4C, 0x6F, 0xA7, 0x94],
        ]
        if others.contains(where: { head.starts(with: $0) }) { return false }
        guard let encoding = declaredEncoding(data) else { return true }
        return ["utf", "ucs", "iso-10646"].contains { encoding.hasPrefix($0) }
    }

    /// The encoding an XML declaration at the start names, in lower case, when it is a well-formed name (XML 1.0's
    /// `EncName`: a letter, then letters, digits, `.`, `_` and `-`): `<?xml version="1.0" encoding="X"?>`.
    private static func declaredEncoding(_ data: Data) -> String? {
        let head = data.prefix(256)
        guard head.starts(with: Array("<?xml".utf8)), let end = head.firstRange(of: Array("?>".utf8)) else {
            return nil
        }
        let declaration = Substring(decoding: head[..<end.lowerBound], as: UTF8.self).utf8
        let blank: (UInt8) -> Bool = { $0 == 0x20 || $0 == 0x09 || $0 == 0x0D || $0 == 0x0A }
        guard let name = declaration.firstRange(of: "encoding".utf8), name.lowerBound > declaration.startIndex,
            blank(declaration[declaration.index(before: name.lowerBound)])
        else { return nil }
        var rest = declaration[name.upperBound...].drop(while: blank)
        guard rest.first == UInt8(ascii: "=") else { return nil }
        rest = rest.dropFirst().drop(while: blank)
        guard let quote = rest.first, quote == UInt8(ascii: "\"") || quote == UInt8(ascii: "'") else { return nil }
        let value = rest.dropFirst().prefix { $0 != quote }
        guard value.endIndex < rest.endIndex, let first = value.first, isLetter(first),
            value.allSatisfy({ isLetter($0) || ($0 >= 0x30 && $0 <= 0x39) || $0 == 0x2E || $0 == 0x5F || $0 == 0x2D })
        else { return nil }
        return String(decoding: value, as: UTF8.self).lowercased()
    }

    private static func isLetter(_ byte: UInt8) -> Bool {
        (byte | 0x20) >= UInt8(ascii: "a") && (byte | 0x20) <= UInt8(ascii: "z")
    }
}

/// Collects `XMLParser` events into an `XML` tree. Used on one thread, inside `XML(data:)` only.
private final class TreeBuilder: NSObject, XMLParserDelegate {
    private var stack: [XML] = []
    private var texts: [String] = []
    var root: XML?
    /// Whether parsing stopped at an element nested deeper than `XML.maximumDepth`.
    private(set) var tooDeep = false

    func parser(
        _ parser: XMLParser, didStartElement elementName: String, namespaceURI: String?, qualifiedName: String?,
        attributes: [String: String] = [:]
    ) {
        guard stack.count < XML.maximumDepth else {
            tooDeep = true
            parser.abortParsing()
            return
        }
        stack.append(XML(name: elementName, attributes: attributes))
        texts.append("")
    }

    func parser(_ parser: XMLParser, foundCharacters string: String) {
        if !texts.isEmpty { texts[texts.count - 1] += string }
    }

    func parser(_ parser: XMLParser, foundCDATA CDATABlock: Data) {
        if !texts.isEmpty { texts[texts.count - 1] += String(decoding: CDATABlock, as: UTF8.self) }
    }

    func parser(_ parser: XMLParser, didEndElement elementName: String, namespaceURI: String?, qualifiedName: String?) {
        guard var element = stack.popLast(), let text = texts.popLast() else { return }
        element.text = text.trimmingCharacters(in: .whitespacesAndNewlines)
        if stack.isEmpty {
            root = element
        } else {
            stack[stack.count - 1].children.append(element)
        }
    }
}
