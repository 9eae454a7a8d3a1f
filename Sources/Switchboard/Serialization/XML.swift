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
    /// - Throws: `HTTPError` with code `.decoding` when the data is not well-formed XML, or nests elements more than
    ///   512 deep.
    public init(data: Data) throws(HTTPError) {
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
