/// A response head's fields as they arrived, kept as bytes: a string is made only for a field that is read.
///
/// Each field is a record in one buffer: the name's length and the value's (see `write(_:at:)`), the name, then the
/// value, trimmed of the blanks around it. Receiving a head appends records; reading a field by name walks them. Most
/// heads are never read whole (an engine reads a few fields, an app fewer): making two strings for every field, and
/// looking for each name among the earlier ones, took more than the rest of receiving a small head.
/// `HTTPHeaders(received:)` holds them; reading them whole or changing them makes the fields as
/// `HTTPHeaders.append(receivedName:value:)` makes them from a received dictionary.
struct ReceivedFields: @unchecked Sendable {
    // Safety: `buffer`'s header and bytes are written only after `reserve`, which makes a copy unless this value
    // holds the only reference to it: a buffer two values share is only read.

    /// The records, in a buffer that grows by doubling: the only stored property, so that headers that hold none
    /// are no larger for it.
    private var buffer: Buffer?

    /// The bytes written, the room for them, and where the last record starts, which a folded line continues (read
    /// through pointers: a property of the buffer was checked for exclusive access at run time at every use).
    private final class Buffer: ManagedBuffer<(count: Int, capacity: Int, last: Int), UInt8> {}

    /// No fields.
    init() {}

    /// Whether no field arrived.
    var isEmpty: Bool { count == 0 }

    private var count: Int {
        buffer?.withUnsafeMutablePointerToHeader { $0.pointee.count } ?? 0
    }

    /// Adds a field (a repeated name is joined to the earlier ones when read, with `, `).
    mutating func append(name: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer) {
        // Each length takes at most 10 bytes.
        let start = reserve(20 + name.count + value.count)
        var out = start
        Self.write(name.count, at: &out)
        Self.write(value.count, at: &out)
        if let source = name.baseAddress {
            UnsafeMutableRawPointer(out).copyMemory(from: source, byteCount: name.count)
        }
        out += name.count
        if let source = value.baseAddress {
            UnsafeMutableRawPointer(out).copyMemory(from: source, byteCount: value.count)
        }
        out += value.count
        buffer!.withUnsafeMutablePointerToHeader {
            $0.pointee.last = $0.pointee.count
            $0.pointee.count += start.distance(to: out)
        }
    }

    /// Continues the last field's value with a folded line (obs-fold, RFC 9112 section 5.2): the fold becomes one
    /// space.
    mutating func continueLast(_ text: UnsafeRawBufferPointer) {
        guard let last = buffer?.withUnsafeMutablePointerToHeader({ $0.pointee.last }), !text.isEmpty else { return }
        // Rare: the last record is written again, with its longer value.
        var name: [UInt8] = []
        var value: [UInt8] = []
        forEach(from: last) {
            name = Array($0); value = Array($1)
        }
        if !value.isEmpty { value.append(UInt8(ascii: " ")) }
        value.append(contentsOf: text)
        _ = reserve(0)
        buffer!.withUnsafeMutablePointerToHeader { $0.pointee.count = last }
        name.withUnsafeBytes { name in value.withUnsafeBytes { append(name: name, value: $0) } }
    }

    /// The value of the fields named `name` (compared as `equalsIgnoringASCIICase` compares), joined with `, ` in
    /// arrival order; `nil` when there is none.
    func value(of name: String) -> String? {
        guard let buffer else { return nil }
        return name.withUTF8Bytes { wanted in
            buffer.withUnsafeMutablePointers { header, bytes -> String? in
                // A loop of its own over the bytes, not `forEach`: a field's name is compared for every lookup, and
                // a response has several.
                var found: String?
                var record = UnsafePointer(bytes)
                let end = record + header.pointee.count
                while record < end {
                    let nameLength = Self.readLength(&record)
                    let valueLength = Self.readLength(&record)
                    let value = record + nameLength
                    defer { record = value + valueLength }
                    guard nameLength == wanted.count,
                        String.equalIgnoringASCIICase(UnsafeBufferPointer(start: record, count: nameLength), wanted)
                    else { continue }
                    let text = HTTPHeaders.receivedText(UnsafeRawBufferPointer(start: value, count: valueLength))
                    if let earlier = found {
                        found = earlier + ", " + text
                    } else {
                        found = text
                    }
                }
                return found
            }
        }
    }

    /// The fields as strings, a repeated name's values joined.
    var headers: HTTPHeaders {
        var headers = HTTPHeaders()
        headers.reserveCapacity(12)
        forEach { name, value in
            // A name is a token (the engine checked), so ASCII.
            headers.append(receivedName: String(decoding: name, as: UTF8.self), value: HTTPHeaders.receivedText(value))
        }
        return headers
    }

    /// Calls `body` with the name and value bytes of each record from the one at `start`, in order.
    private func forEach(from start: Int = 0, _ body: (UnsafeRawBufferPointer, UnsafeRawBufferPointer) -> Void) {
        buffer?.withUnsafeMutablePointers { header, bytes in
            var record = UnsafePointer(bytes) + start
            let end = UnsafePointer(bytes) + header.pointee.count
            while record < end {
                let nameLength = Self.readLength(&record)
                let valueLength = Self.readLength(&record)
                let value = record + nameLength
                body(
                    UnsafeRawBufferPointer(start: record, count: nameLength),
                    UnsafeRawBufferPointer(start: value, count: valueLength))
                record = value + valueLength
            }
        }
    }

    /// Room for `extra` more bytes in a buffer of this value's own: where they go.
    private mutating func reserve(_ extra: Int) -> UnsafeMutablePointer<UInt8> {
        let (count, capacity, last) = buffer?.withUnsafeMutablePointerToHeader { $0.pointee } ?? (0, 0, 0)
        // Asked before `buffer` is bound to a name of its own, which would hold a second reference.
        if capacity - count >= extra, isKnownUniquelyReferenced(&buffer) {
            return buffer!.withUnsafeMutablePointerToElements { $0 + count }
        }
        // A usual head fits in the first.
        let size = max(512, 2 * (count + extra))
        let grown = unsafeDowncast(Buffer.create(minimumCapacity: size) { _ in (count, size, last) }, to: Buffer.self)
        grown.withUnsafeMutablePointerToElements { target in
            buffer?.withUnsafeMutablePointerToElements { target.update(from: $0, count: count) }
        }
        buffer = grown
        return grown.withUnsafeMutablePointerToElements { $0 + count }
    }

    /// Writes a length, seven bits to a byte, low bits first, the high bit set on all but the last byte: one byte
    /// for the lengths of nearly every field.
    private static func write(_ length: Int, at out: inout UnsafeMutablePointer<UInt8>) {
        var rest = UInt(length)
        while rest >= 0x80 {
            out.pointee = UInt8(truncatingIfNeeded: rest) | 0x80
            out += 1
            rest >>= 7
        }
        out.pointee = UInt8(rest)
        out += 1
    }

    /// Reads a length that `write(_:at:)` wrote at `record`, and moves past it.
    @inline(__always)
    private static func readLength(_ record: inout UnsafePointer<UInt8>) -> Int {
        // One byte, for nearly every length: a lookup reads two for each field it passes.
        let first = record.pointee
        if first < 0x80 {
            record += 1
            return Int(first)
        }
        return readLongLength(&record)
    }

    @inline(never)
    private static func readLongLength(_ record: inout UnsafePointer<UInt8>) -> Int {
        var length = 0
        var shift = 0
        while true {
            let byte = record.pointee
            record += 1
            length |= Int(byte & 0x7F) << shift
            if byte < 0x80 { return length }
            shift += 7
        }
    }
}
