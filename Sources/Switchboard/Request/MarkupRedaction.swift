/// Hides the secrets of an XML body (a plist, a SOAP or Atom document) by the redaction's rule for names, read as
/// markup: the text of an element whose name is secret is hidden, and so is everything inside it (its child
/// elements' text, its attributes' values), as a secret JSON member hides its whole value; an attribute whose name
/// is secret has its value hidden; in a property list, the value after a `<key>` whose text is secret is hidden
/// whole.
///
/// One pass over the bytes, tolerant of what is not well formed: a body cut short, tags never closed, stray `<`
/// (text that only looks like markup is at worst hidden too much, never too little). Comments, processing
/// instructions and declarations are copied as they are, unless inside a secret element.
struct MarkupRedaction {
    private let redaction: Redaction
    private let input: [UInt8]
    private var output: [UInt8] = []
    private var position = 0
    /// Open elements, innermost last: each name, and whether it is secret (its own name, or inside a secret one).
    private var open: [(name: ArraySlice<UInt8>, secret: Bool)] = []
    /// The text of the `<key>` element being read, and whether the next element is a secret key's value.
    private var keyText: [UInt8]?
    private var valueIsSecret = false

    private init(_ redaction: Redaction, _ text: String) {
        self.redaction = redaction
        input = Array(text.utf8)
        output.reserveCapacity(input.count)
    }

    /// The text with every secret the markup rule finds hidden; text without markup comes back as it was.
    static func redact(_ text: String, by redaction: Redaction) -> String {
        guard text.utf8.contains(UInt8(ascii: "<")) else { return text }
        var scanner = MarkupRedaction(redaction, text)
        scanner.run()
        return String(decoding: scanner.output, as: UTF8.self)
    }

    private var insideSecret: Bool { open.last?.secret ?? false }

    private mutating func run() {
        while position < input.count {
            if input[position] == UInt8(ascii: "<") {
                markup()
            } else {
                text(upTo: firstIndex(of: UInt8(ascii: "<"), from: position) ?? input.count)
            }
        }
    }

    // MARK: - Text

    /// Text up to `end`: hidden inside a secret element (whitespace alone is kept, so the layout stays).
    private mutating func text(upTo end: Int) {
        let run = input[position..<end]
        keyText?.append(contentsOf: run)
        if insideSecret, run.contains(where: { !Self.isSpace($0) }) {
            output.append(contentsOf: Redaction.placeholder.utf8)
        } else {
            output.append(contentsOf: run)
        }
        position = end
    }

    // MARK: - Markup

    private mutating func markup() {
        if starts(with: "<![CDATA[") {
            // Character data is text: hidden as text is.
            output.append(contentsOf: "<![CDATA[".utf8)
            position += 9
            let end = firstIndex(of: "]]>", from: position) ?? input.count
            text(upTo: end)
            copy(upTo: min(end + 3, input.count))
        } else if starts(with: "<!--") {
            hidden(upTo: firstIndex(of: "-->", from: position + 4).map { $0 + 3 } ?? input.count, keeping: 4, 3)
        } else if starts(with: "<?") || starts(with: "<!") {
            hidden(upTo: firstIndex(of: UInt8(ascii: ">"), from: position).map { $0 + 1 } ?? input.count, keeping: 2, 1)
        } else if starts(with: "</") {
            closingTag()
        } else if position + 1 < input.count, Self.isNameStart(input[position + 1]) {
            openingTag()
        } else {
            // A `<` that starts no markup is text.
            keyText?.append(input[position])
            output.append(input[position])
            position += 1
        }
    }

    /// A comment, declaration or processing instruction up to `end`: copied, or inside a secret element, hidden
    /// between its first `head` and last `tail` bytes.
    private mutating func hidden(upTo end: Int, keeping head: Int, _ tail: Int) {
        guard insideSecret, end - position > head + tail else { return copy(upTo: end) }
        output.append(contentsOf: input[position..<(position + head)])
        output.append(contentsOf: Redaction.placeholder.utf8)
        output.append(contentsOf: input[(end - tail)..<end])
        position = end
    }

    private mutating func openingTag() {
        output.append(UInt8(ascii: "<"))
        position += 1
        let name = self.name()
        output.append(contentsOf: name)
        // A property list's `<key>` (in a `<dict>`) holds a name, not a key: its text decides about the next value.
        let isDictionaryKey = Self.equal(name, "key") && open.last.map { Self.equal($0.name, "dict") } == true
        let secret =
            insideSecret || valueIsSecret
            || (!isDictionaryKey && redaction.isSecret(String(decoding: name, as: UTF8.self)))
        valueIsSecret = false
        keyText = nil
        let selfClosing = attributes(hidingAll: secret)
        guard !selfClosing else { return }
        open.append((name, secret))
        if isDictionaryKey && !secret { keyText = [] }
    }

    private mutating func closingTag() {
        output.append(contentsOf: "</".utf8)
        position += 2
        let name = self.name()
        output.append(contentsOf: name)
        copy(upTo: firstIndex(of: UInt8(ascii: ">"), from: position).map { $0 + 1 } ?? input.count)
        // Tolerant of a tag closed out of turn: everything opened after the element it closes closes with it.
        if let index = open.lastIndex(where: { $0.name.elementsEqual(name) }) { open.removeSubrange(index...) }
        if let key = keyText, Self.equal(name, "key") {
            valueIsSecret = redaction.isSecret(String(decoding: key, as: UTF8.self))
        }
        keyText = nil
    }

    /// Copies a tag's attributes up to and including its `>`, hiding the values of secret ones (or all of them);
    /// returns whether the tag closes itself (`/>`).
    private mutating func attributes(hidingAll: Bool) -> Bool {
        while position < input.count {
            let byte = input[position]
            if byte == UInt8(ascii: ">") {
                output.append(byte)
                position += 1
                return position >= 2 && input[position - 2] == UInt8(ascii: "/")
            }
            guard Self.isNameStart(byte) else {
                output.append(byte)
                position += 1
                continue
            }
            let name = self.name()
            output.append(contentsOf: name)
            let secret = hidingAll || redaction.isSecret(String(decoding: name, as: UTF8.self))
            copy(while: Self.isSpace)
            guard position < input.count, input[position] == UInt8(ascii: "=") else { continue }
            output.append(UInt8(ascii: "="))
            position += 1
            copy(while: Self.isSpace)
            attributeValue(hidden: secret)
        }
        return false
    }

    /// A quoted or bare attribute value, hidden when `hidden`.
    private mutating func attributeValue(hidden: Bool) {
        guard position < input.count else { return }
        let quote = input[position]
        let end: Int
        if quote == UInt8(ascii: "\"") || quote == UInt8(ascii: "'") {
            output.append(quote)
            position += 1
            end = firstIndex(of: quote, from: position) ?? input.count
        } else {
            end = input[position...].firstIndex { Self.isSpace($0) || $0 == UInt8(ascii: ">") } ?? input.count
        }
        if hidden {
            output.append(contentsOf: Redaction.placeholder.utf8)
            position = end
        } else {
            copy(upTo: end)
        }
        if end < input.count, quote == input[end] {
            output.append(quote)
            position += 1
        }
    }

    // MARK: - Bytes

    /// A name (element or attribute) starting here; it may be empty.
    private mutating func name() -> ArraySlice<UInt8> {
        let start = position
        while position < input.count, Self.isNameByte(input[position]) { position += 1 }
        return input[start..<position]
    }

    private mutating func copy(upTo end: Int) {
        output.append(contentsOf: input[position..<end])
        position = end
    }

    private mutating func copy(while condition: (UInt8) -> Bool) {
        while position < input.count, condition(input[position]) {
            output.append(input[position])
            position += 1
        }
    }

    private func starts(with text: StaticString) -> Bool {
        let count = text.utf8CodeUnitCount
        guard position + count <= input.count else { return false }
        return text.withUTF8Buffer { $0.elementsEqual(input[position..<(position + count)]) }
    }

    private func firstIndex(of byte: UInt8, from start: Int) -> Int? {
        input[start...].firstIndex(of: byte)
    }

    private func firstIndex(of text: StaticString, from start: Int) -> Int? {
        text.withUTF8Buffer { pattern in
            var index = start
            while index + pattern.count <= input.count {
                if input[index..<(index + pattern.count)].elementsEqual(pattern) { return index }
                index += 1
            }
            return nil
        }
    }

    private static func equal(_ name: ArraySlice<UInt8>, _ text: StaticString) -> Bool {
        text.withUTF8Buffer { name.elementsEqual($0) }
    }

    private static func isSpace(_ byte: UInt8) -> Bool {
        byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D
    }

    private static func isNameStart(_ byte: UInt8) -> Bool {
        (byte | 0x20) >= UInt8(ascii: "a") && (byte | 0x20) <= UInt8(ascii: "z") || byte == UInt8(ascii: "_")
            || byte == UInt8(ascii: ":") || byte >= 0x80
    }

    private static func isNameByte(_ byte: UInt8) -> Bool {
        isNameStart(byte) || (byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")) || byte == UInt8(ascii: "-")
            || byte == UInt8(ascii: ".")
    }
}
