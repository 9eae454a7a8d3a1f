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
    ///   512 deep, or is not valid text in its encoding (UTF-8 when it declares no other).
    public init(data: Data) throws(HTTPError) {
        let data = try XML.readable(data)
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
    /// The document as `XMLParser` can read it without stopping the process. `XMLParser` on Linux force-unwraps the
    /// text libxml2 hands it, and stops the process
    /// - at a name, comment or processing instruction that is not UTF-8 in a document read as UTF-8 (five bytes from
    ///   a server, `<`, 0xC1, `""1`, were enough): such a document is refused, as not valid UTF-8;
    /// - at a processing instruction without data (`<?x?>`, well-formed XML): a space is written after its target
    ///   (`<?x ?>`, the same instruction), outside comments and CDATA sections, whose text is kept as it is.
    ///
    /// A document in UTF-16 or UTF-32 is read into UTF-8 first (without its declaration, which would name the other
    /// encoding), so that the same rules apply to it; one in EBCDIC holding an instruction without data is refused.
    static func readable(_ data: Data) throws(HTTPError) -> Data {
        var data = data
        if let (encoding, name, skipped) = try wideEncoding(data) {
            guard let text = String(data: data.dropFirst(skipped), encoding: encoding) else {
                throw HTTPError(.decoding, "the body is not well-formed XML (it is not valid \(name))")
            }
            data = Data(withoutDeclaration(text).utf8)
        } else if data.starts(with: ebcdicStart) {
            if hasInstructionWithoutData(
                data, open: [0x4C, 0x6F], close: [0x6F, 0x6E], blanks: [0x40, 0x25, 0x15, 0x05, 0x0D])
            {
                throw HTTPError(
                    .decoding,
                    "the body is XML in EBCDIC with a processing instruction without data, which XMLParser cannot read")
            }
            return data
        } else if !declaresAnother8BitEncoding(data), !data.withUnsafeBytes(\.isValidUTF8) {
            throw HTTPError(
                .decoding,
                "the body is not well-formed XML (it is read as UTF-8, having no other encoding, and is not valid "
                    + "UTF-8)")
        }
        return spacingInstructionsWithoutData(data)
    }

    /// UTF-16 or UTF-32 as libxml2 finds them (a byte order mark, or `<` / `<?` with zero bytes), with their name and
    /// the length of the mark; `nil` for an 8-bit encoding.
    private static func wideEncoding(_ data: Data) throws(HTTPError) -> (String.Encoding, String, Int)? {
        let head = Array(data.prefix(4))
        if head.starts(with: [0xFF, 0xFE, 0x00, 0x00]) { return (.utf32LittleEndian, "UTF-32", 4) }
        if head.starts(with: [0x00, 0x00, 0xFE, 0xFF]) { return (.utf32BigEndian, "UTF-32", 4) }
        if head.starts(with: [0xFE, 0xFF]) { return (.utf16BigEndian, "UTF-16", 2) }
        if head.starts(with: [0xFF, 0xFE]) { return (.utf16LittleEndian, "UTF-16", 2) }
        if head == [0x3C, 0x00, 0x00, 0x00] { return (.utf32LittleEndian, "UTF-32", 0) }
        if head == [0x00, 0x00, 0x00, 0x3C] { return (.utf32BigEndian, "UTF-32", 0) }
        if head == [0x3C, 0x00, 0x3F, 0x00] { return (.utf16LittleEndian, "UTF-16", 0) }
        if head == [0x00, 0x3C, 0x00, 0x3F] { return (.utf16BigEndian, "UTF-16", 0) }
        if head == [0x00, 0x00, 0x3C, 0x00] || head == [0x00, 0x3C, 0x00, 0x00] {
            throw HTTPError(.decoding, "the body is XML in UCS-4 of an unusual byte order (2143 or 3412), not read")
        }
        return nil
    }

    /// `<?xm` in EBCDIC, as libxml2 finds it.
    private static let ebcdicStart: [UInt8] = [0x4C, 0x6F, 0xA7, 0x94]

    /// Whether a byte is XML's white space (`S`: space, tab, CR, LF).
    private static func isBlank(_ byte: UInt8) -> Bool { byte == 0x20 || byte == 0x09 || byte == 0x0D || byte == 0x0A }

    /// The text without an XML declaration at its start (`<?xml ... ?>`).
    private static func withoutDeclaration(_ text: String) -> Substring {
        let utf8 = text.utf8
        guard utf8.starts(with: "<?xml".utf8),
            utf8.dropFirst(5).first.map(isBlank) == true,
            let end = utf8.firstRange(of: "?>".utf8)
        else { return Substring(text) }
        return Substring(utf8[end.upperBound...])
    }

    /// Whether bytes hold `open`, a target without blanks, then `close` at once (an instruction without data).
    private static func hasInstructionWithoutData(_ data: Data, open: [UInt8], close: [UInt8], blanks: Set<UInt8>)
        -> Bool
    {
        let bytes = Array(data)
        var index = 0
        while let start = bytes[index...].firstRange(of: open) {
            var end = start.upperBound
            while end < bytes.count, !blanks.contains(bytes[end]), bytes[end] != close[0] { end += 1 }
            if end > start.upperBound, bytes[end...].starts(with: close) { return true }
            index = start.upperBound
        }
        return false
    }

    /// The bytes of an ASCII-compatible document with a space after the target of each processing instruction
    /// without data (`<?x?>` as `<?x ?>`), outside comments and CDATA sections; the same bytes when there is none.
    static func spacingInstructionsWithoutData(_ data: Data) -> Data {
        // Read in place: a body without such an instruction (nearly every one) is neither copied nor changed.
        let insertions = data.withUnsafeBytes { bytes -> [Int] in
            var insertions: [Int] = []
            var index = 0
            func skip(past end: String, from start: Int) -> Int {
                bytes[start...].firstRange(of: end.utf8)?.upperBound ?? bytes.count
            }
            while index < bytes.count {
                guard bytes[index] == UInt8(ascii: "<"), index + 1 < bytes.count else {
                    index += 1
                    continue
                }
                if bytes[index...].starts(with: "<!--".utf8) {
                    index = skip(past: "-->", from: index + 4)
                } else if bytes[index...].starts(with: "<![CDATA[".utf8) {
                    index = skip(past: "]]>", from: index + 9)
                } else if bytes[index + 1] == UInt8(ascii: "?") {
                    var end = index + 2
                    while end < bytes.count, !isBlank(bytes[end]), bytes[end] != UInt8(ascii: "?") { end += 1 }
                    if end > index + 2, bytes[end...].starts(with: "?>".utf8) { insertions.append(end) }
                    index = skip(past: "?>", from: end)
                } else {
                    index += 1
                }
            }
            return insertions
        }
        guard !insertions.isEmpty else { return data }
        var spaced = Data(capacity: data.count + insertions.count)
        var copied = data.startIndex
        for position in insertions.map({ data.startIndex + $0 }) {
            spaced.append(data[copied..<position])
            spaced.append(0x20)
            copied = position
        }
        spaced.append(data[copied...])
        return spaced
    }

    /// Whether a document that libxml2 reads 8 bits at a time (no UTF-16, UTF-32 or EBCDIC: `readable` rules those
    /// out first) is in an encoding other than UTF-8 that libxml2 converts, or fails: no UTF-8 byte order mark, and an
    /// XML declaration at the start that names an encoding outside the UTF and UCS families, spelled as XML spells an
    /// encoding name. libxml2 reads any other as UTF-8, one with a declaration of UTF-16 in 8-bit text or a name it
    /// cannot read (empty, with blanks) too.
    private static func declaresAnother8BitEncoding(_ data: Data) -> Bool {
        guard !data.starts(with: [0xEF, 0xBB, 0xBF]), let encoding = declaredEncoding(data) else { return false }
        return !["utf", "ucs", "iso-10646"].contains { encoding.hasPrefix($0) }
    }

    /// The encoding an XML declaration at the start names, in lower case, when it is a well-formed name (XML 1.0's
    /// `EncName`: a letter, then letters, digits, `.`, `_` and `-`): `<?xml version="1.0" encoding="X"?>`.
    private static func declaredEncoding(_ data: Data) -> String? {
        let head = data.prefix(256)
        guard head.starts(with: Array("<?xml".utf8)), let end = head.firstRange(of: Array("?>".utf8)) else {
            return nil
        }
        let declaration = Substring(decoding: head[..<end.lowerBound], as: UTF8.self).utf8
        guard let name = declaration.firstRange(of: "encoding".utf8), name.lowerBound > declaration.startIndex,
            isBlank(declaration[declaration.index(before: name.lowerBound)])
        else { return nil }
        var rest = declaration[name.upperBound...].drop(while: isBlank)
        guard rest.first == UInt8(ascii: "=") else { return nil }
        rest = rest.dropFirst().drop(while: isBlank)
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
