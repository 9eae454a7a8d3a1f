/// An ordered collection of HTTP header fields whose names compare case-insensitively.
///
/// Setting a value replaces any field of the same name whatever its case; setting `nil` removes it. The first
/// spelling of a name is kept, so headers go on the wire as the caller wrote them.
///
/// ```swift
/// var headers: HTTPHeaders = ["Accept": "application/json"]
/// headers["accept"]              // "application/json"
/// headers["X-Trace"] = "42"
/// ```
public struct HTTPHeaders: Sendable, Hashable, ExpressibleByDictionaryLiteral, Sequence, CustomStringConvertible {
    /// One header field: a name and its value.
    public struct Field: Sendable, Hashable {
        /// The name, in the spelling it was first set with.
        public var name: String
        /// The value.
        public var value: String

        /// Creates a field.
        public init(name: String, value: String) {
            self.name = name
            self.value = value
        }
    }

    private var fields: [Field] = []
    /// How many leading fields are known to be sendable and not `Content-Length` or `Transfer-Encoding`, which the
    /// check before sending reads (`markSendable()`), unchanged since: a center checks its headers once, when they
    /// are set, and each request it sends starts from them.
    private var sendablePrefix = 0
    /// Where fields are found besides `fields`, for the few headers that need it: one stored property for both, so
    /// that every copy of the others counts one reference less.
    private var lookup: Lookup?
    private static let indexedFrom = 16

    private enum Lookup {
        /// Each name folded to lower case, with its field's position: kept once there are more than `indexedFrom`
        /// fields, so that a response with thousands of fields (a hostile server's) is not read in quadratic time.
        case positions([String: Int])
        /// A received head's fields, still as bytes (then `fields` is empty): read by name in place, made into
        /// `fields` when they are read whole or changed.
        case received(ReceivedFields)
    }

    private var positions: [String: Int]? {
        get { if case .positions(let positions) = lookup { positions } else { nil } }
        set { lookup = newValue.map { .positions($0) } }
    }

    /// Whether the fields are still received bytes: asked without copying them out (a count up and down of their
    /// buffer), on every read and change of every set of headers.
    private var isReceived: Bool {
        if case .received = lookup { true } else { false }
    }

    /// Creates an empty set of headers.
    public init() {}

    /// Creates headers from a dictionary literal; later duplicates (ignoring case) replace earlier ones.
    public init(dictionaryLiteral elements: (String, String)...) {
        for (name, value) in elements { self[name] = value }
    }

    /// Creates headers from a dictionary, in name order so that the result is deterministic.
    public init(_ dictionary: [String: String]) {
        for name in dictionary.keys.sorted() { self[name] = dictionary[name] }
    }

    /// Fields as Foundation's `HTTPURLResponse` holds them: a dictionary, whose fields of one name are joined already
    /// unless the names differ in case. Names that differ only in case are joined too, in name order, as repeated
    /// fields are (one replaced the other), and a value loses the spaces and tabs around it (RFC 9110 section 5.5:
    /// they are not part of it), so that a head reads the same from every engine.
    init(received dictionary: [String: String]) {
        reserveCapacity(dictionary.count)
        for name in dictionary.keys.sorted() {
            append(receivedName: name, value: Self.trimmingBlanks(dictionary[name]!))
        }
    }

    /// Fields as an engine received them, kept as bytes until read (see `ReceivedFields`).
    init(received: ReceivedFields) {
        if !received.isEmpty { lookup = .received(received) }
    }

    /// The fields, made from the received bytes if they are still kept so.
    private var allFields: [Field] {
        if case .received(let received) = lookup { received.headers.fields } else { fields }
    }

    /// Makes the received bytes into fields, before a change.
    private mutating func makeFields() {
        guard case .received(let received) = lookup else { return }
        self = received.headers
    }

    /// Whether a field can go on the wire as it is: a name of visible ASCII characters other than `:`, and a value
    /// without CR, LF or NUL. A line break would end the field early and let the rest be read as fields of its own
    /// (or end the head); libcurl, under both engines, sends it as it is, and cuts a value at a NUL.
    static func isSendable(name: String, value: String) -> Bool {
        // Over the strings' bytes in place (a copy only for a string that has none): every request's fields are
        // checked, once by the center and once by its engine.
        !name.isEmpty
            && allBytes(of: name) { $0 > 0x20 && $0 < 0x7F && $0 != UInt8(ascii: ":") }
            && allBytes(of: value) { $0 != 0x0D && $0 != 0x0A && $0 != 0x00 }
    }

    private static func allBytes(of text: String, _ satisfy: (UInt8) -> Bool) -> Bool {
        text.utf8.withContiguousStorageIfAvailable { $0.allSatisfy(satisfy) } ?? text.utf8.allSatisfy(satisfy)
    }

    /// What a request's check before sending reads (`EngineRequest.checkBeforeSending`), in one pass over the fields:
    /// the first that cannot be sent as it is (see `isSendable(name:value:)`), and the values of `Content-Length` and
    /// `Transfer-Encoding`, which an engine sets. Positions, not fields: they are plain integers to hand back, where a
    /// tuple of optional strings was copied by the runtime's generic code.
    var sendingCheck: (unsendable: Int?, contentLength: Int?, transferEncoding: Int?) {
        var found: (unsendable: Int?, contentLength: Int?, transferEncoding: Int?) = (nil, nil, nil)
        let sendablePrefix = isReceived ? 0 : sendablePrefix
        allFields.withUnsafeBufferPointer { fields in
            for index in sendablePrefix..<fields.count {
                // The first of each; a name of another length costs a comparison of lengths.
                if found.contentLength == nil, fields[index].name.equalsIgnoringASCIICase("Content-Length") {
                    found.contentLength = index
                } else if found.transferEncoding == nil,
                    fields[index].name.equalsIgnoringASCIICase("Transfer-Encoding")
                {
                    found.transferEncoding = index
                }
                if found.unsendable == nil,
                    !Self.isSendable(name: fields[index].name, value: fields[index].value)
                {
                    found.unsendable = index
                }
            }
        }
        return found
    }

    /// Whether the check before sending reads a field of this name, wherever it stands.
    private static func isChecked(byName name: String) -> Bool {
        name.equalsIgnoringASCIICase("Content-Length") || name.equalsIgnoringASCIICase("Transfer-Encoding")
    }

    /// The field at a position `sendingCheck` gave.
    func field(at index: Int) -> Field { allFields[index] }

    /// Whether both are the same stored fields (one was copied from the other, and neither changed since), which
    /// means the same fields in the same order: asked without reading them.
    func isSameStorage(as other: HTTPHeaders) -> Bool {
        guard lookup == nil, other.lookup == nil, sendablePrefix == other.sendablePrefix else { return false }
        return fields.withUnsafeBufferPointer { mine in
            other.fields.withUnsafeBufferPointer { $0.baseAddress == mine.baseAddress && $0.count == mine.count }
        }
    }

    /// Checks the fields now, so that `sendingCheck` reads only those set later: all of them when every one is
    /// sendable, else those before the first that is not, or that the check reads by name.
    mutating func markSendable() {
        makeFields()
        sendablePrefix =
            fields.firstIndex {
                !Self.isSendable(name: $0.name, value: $0.value) || Self.isChecked(byName: $0.name)
            } ?? fields.count
    }

    /// Whether a byte is a blank of HTTP's grammar (a space or a tab), which does not belong to a field's value at
    /// either end.
    static func isBlank(_ byte: UInt8) -> Bool { byte == 0x20 || byte == 0x09 }

    /// A `Content-Length` value: digits, with any spaces or tabs around them (read without Foundation, which costs
    /// more here than the rest of a head); `nil` for anything else.
    static func contentLength(_ text: String) -> Int64? {
        // One pass over the bytes in place: every response's length is read, by each engine more than once.
        return text.withUTF8Bytes { bytes -> Int64? in
            var (start, end) = (0, bytes.count)
            while start < end, isBlank(bytes[start]) { start += 1 }
            while end > start, isBlank(bytes[end - 1]) { end -= 1 }
            guard start < end else { return nil }
            var length: Int64 = 0
            for byte in bytes[start..<end] {
                guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return nil }
                let (tens, overflow) = length.multipliedReportingOverflow(by: 10)
                let (sum, carry) = tens.addingReportingOverflow(Int64(byte - UInt8(ascii: "0")))
                guard !overflow, !carry else { return nil }
                length = sum
            }
            return length
        }
    }

    /// Whether a `Content-Encoding` value names an encoding other than `identity`: a body the engines decode.
    static func isEncoding(_ contentEncoding: String?) -> Bool {
        guard let contentEncoding else { return false }
        let trimmed = trimmingBlanks(contentEncoding)
        return !trimmed.isEmpty && !trimmed.equalsIgnoringASCIICase("identity")
    }

    /// The text without the spaces and tabs around it.
    static func trimmingBlanks(_ text: String) -> String {
        let utf8 = text.utf8
        guard let first = utf8.first, let last = utf8.last, isBlank(first) || isBlank(last) else { return text }
        guard let start = utf8.firstIndex(where: { !isBlank($0) }), let end = utf8.lastIndex(where: { !isBlank($0) })
        else { return "" }
        return String(text[start...end])
    }

    /// The value of the field with this name, compared case-insensitively; setting `nil` removes the field.
    public subscript(name: String) -> String? {
        // Inlined: a center's request reads a few fields by name (one search each, over few fields).
        @inline(__always) get {
            if case .received(let received) = lookup { return received.value(of: name) }
            return index(of: name).map { fields[$0].value }
        }
        set {
            makeFields()
            if let index = index(of: name) {
                sendablePrefix = Swift.min(sendablePrefix, index)
                if let newValue {
                    fields[index].value = newValue
                } else {
                    let removed = fields.remove(at: index)
                    if var moved = positions {
                        positions = nil
                        if fields.count > Self.indexedFrom {
                            moved[Self.folded(removed.name)] = nil
                            for (key, position) in moved where position > index { moved[key] = position - 1 }
                            positions = moved
                        }
                    }
                }
            } else if let newValue {
                appendNew(name, newValue)
            }
        }
    }

    /// Makes room for `count` fields, so that adding up to that many allocates once.
    mutating func reserveCapacity(_ count: Int) {
        makeFields()
        fields.reserveCapacity(count)
    }

    /// Adds a field as it arrived on the wire: a repeated name joins its value to the earlier one's with `, `.
    mutating func append(receivedName name: String, value: consuming String) {
        makeFields()
        if let index = index(of: name) {
            sendablePrefix = Swift.min(sendablePrefix, index)
            fields[index].value += ", " + value
        } else {
            appendNew(name, value)
        }
    }

    /// Adds a field whose name is not there yet (the caller looked) and whose name and value are sendable (a
    /// constant of the library's own), without looking again or checking it later.
    mutating func appendSendable(_ name: String, _ value: String) {
        assert(!Self.isChecked(byName: name), "\(name) is read by the check before sending")
        makeFields()
        let allSendable = sendablePrefix == fields.count
        appendNew(name, value)
        if allSendable { sendablePrefix = fields.count }
    }

    /// Adds a field whose name is not there yet (the caller looked), without looking again.
    private mutating func appendNew(_ name: String, _ value: String) {
        fields.append(Field(name: name, value: value))
        if var positions {
            // Let go of the stored copy first, so that the dictionary changes in place.
            lookup = nil
            positions[Self.folded(name)] = fields.count - 1
            lookup = .positions(positions)
        } else if fields.count > Self.indexedFrom {
            reindex()
        }
    }

    /// Header bytes as received, as text: UTF-8 when they are UTF-8 (ASCII, the usual case, among them), else
    /// ISO-8859-1, one character per byte (RFC 9110 section 5.5, obs-text), so that a value is never changed on the
    /// way through: no byte is replaced by U+FFFD.
    static func receivedText(_ bytes: UnsafeRawBufferPointer) -> String {
        if !bytes.contains(where: { $0 >= 0x80 }) || bytes.isValidUTF8 {
            return String(decoding: bytes, as: UTF8.self)
        }
        var text = ""
        text.unicodeScalars.append(contentsOf: bytes.lazy.map { Unicode.Scalar($0) })
        return text
    }

    /// The number of fields.
    public var count: Int { isReceived ? allFields.count : fields.count }

    /// Whether there are no fields.
    public var isEmpty: Bool { fields.isEmpty && !isReceived }

    /// The fields as a dictionary keyed by their spelling.
    public var dictionary: [String: String] {
        Dictionary(allFields.map { ($0.name, $0.value) }, uniquingKeysWith: { _, last in last })
    }

    /// The fields sorted by name, for output that reads the same whatever order they were set in.
    var sortedByName: HTTPHeaders {
        var sorted = HTTPHeaders()
        for field in allFields.sorted(by: { $0.name < $1.name }) { sorted[field.name] = field.value }
        return sorted
    }

    /// Adds every field of `other`, replacing fields with the same name.
    public mutating func merge(_ other: HTTPHeaders) {
        for field in other { self[field.name] = field.value }
    }

    /// Iterates the fields in the order they were first set.
    public func makeIterator() -> IndexingIterator<[Field]> {
        allFields.makeIterator()
    }

    /// The fields as `Name: value` lines, with the value of each field whose name is secret shown as `<redacted>`
    /// (by the console log's rule: `Authorization`, `Cookie`, `Set-Cookie`, `X-Api-Key` and the like), so that
    /// printing headers never prints a credential. Read a value itself with the subscript.
    public var description: String {
        Redaction.standard.headerLines(self, sorted: false).joined(separator: "\n")
    }

    /// Two header sets are equal when they hold the same names (ignoring case) with the same values, in any order.
    public static func == (lhs: HTTPHeaders, rhs: HTTPHeaders) -> Bool {
        let (left, right) = (lhs.allFields, rhs.allFields)
        return left.count == right.count && left.allSatisfy { rhs[$0.name] == $0.value }
    }

    /// Hashes the fields independently of their order and the case of their names.
    public func hash(into hasher: inout Hasher) {
        var combined = 0
        let fields = allFields
        for field in fields {
            var fieldHasher = Hasher()
            fieldHasher.combine(field.name.lowercased())
            fieldHasher.combine(field.value)
            combined ^= fieldHasher.finalize()
        }
        hasher.combine(fields.count)
        hasher.combine(combined)
    }

    private func index(of name: String) -> Int? {
        if let positions { return positions[Self.folded(name)] }
        return fields.firstIndex { $0.name.equalsIgnoringASCIICase(name) }
    }

    private mutating func reindex() {
        guard fields.count > Self.indexedFrom else {
            positions = nil
            return
        }
        var positions = [String: Int](minimumCapacity: fields.count)
        for (index, field) in fields.enumerated() { positions[Self.folded(field.name)] = index }
        self.positions = positions
    }

    /// The name with ASCII letters in lower case, as `equalsIgnoringASCIICase` compares.
    private static func folded(_ name: String) -> String {
        String(decoding: name.utf8.map { (65...90).contains($0) ? $0 | 0x20 : $0 }, as: UTF8.self)
    }
}

extension String {
    /// Compares two strings byte by byte, folding ASCII letters only: what HTTP field names need, and cheap.
    ///
    /// Inlined as far as the lengths: most names compared differ in length, a native string knows its length without
    /// reading its bytes, and a received field or a lookup by name compares a name with every field's (a call for
    /// each took 2,200 instructions of CurlEngine's 1 MiB GET, whose head has eight fields).
    @inline(__always)
    func equalsIgnoringASCIICase(_ other: String) -> Bool {
        utf8.count == other.utf8.count && sameLengthEqualsIgnoringASCIICase(other)
    }

    /// `equalsIgnoringASCIICase` for two strings of the same length.
    private func sameLengthEqualsIgnoringASCIICase(_ other: String) -> Bool {
        // Over the bytes in place (a small string's are copied to the stack): a byte-by-byte iterator over each took
        // two to three times as long, and every lookup of a field by name compares a name with several.
        if let equal = utf8.withContiguousStorageIfAvailable({ lhs in
            other.utf8.withContiguousStorageIfAvailable { rhs in Self.equalIgnoringASCIICase(lhs, rhs) }
        }), let equal {
            return equal
        }
        // A string whose bytes are not in place (bridged from Objective-C), read byte by byte: copying them costs more.
        return Self.equalIgnoringASCIICase(utf8, other.utf8)
    }

    /// Whether two byte sequences of the same length are equal, ASCII letters compared without case.
    static func equalIgnoringASCIICase(_ lhs: some Sequence<UInt8>, _ rhs: some Sequence<UInt8>) -> Bool {
        for (left, right) in zip(lhs, rhs) where left != right {
            let folded = left | 0x20
            guard folded == right | 0x20, folded >= UInt8(ascii: "a"), folded <= UInt8(ascii: "z") else { return false }
        }
        return true
    }
}
