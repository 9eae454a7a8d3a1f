import Foundation

/// Decodes a response body with the request's response serializer.
enum ResponseDecoding {
    /// Whether a body holds nothing but JSON's whitespace (spaces, tabs, CR and LF). Stops at the first other byte,
    /// read from the bytes in place (`Data`'s own iteration cost more than the rest of this check).
    static func isBlank(_ data: Data) -> Bool {
        data.withUnsafeBytes(isBlank)
    }

    static func isBlank(_ bytes: UnsafeRawBufferPointer) -> Bool {
        bytes.allSatisfy { $0 == 0x20 || $0 == 0x0A || $0 == 0x0D || $0 == 0x09 }
    }

    /// The decoded value, and whether a JSON value holds everything `JSONDecoder` would read in the body (see
    /// `JSON.parsed(_:of:)`). An empty body is `.empty` whatever the serializer (a `HEAD`, a `204` are successes).
    ///
    /// - Throws: `.decoding`, saying what was expected and what the body looks like.
    static func decode(_ response: Response) throws(HTTPError) -> (value: Response.Value, decodable: Bool) {
        if response.data.isEmpty { return (.empty, true) }
        do throws(HTTPError) {
            return try (response.request.responseSerializer ?? .json).decode(response)
        } catch {
            var error = error
            if error.request == nil { error.request = response.request }
            if error.response == nil { error.response = response }
            error.message += " (\(describe(response)))"
            throw error
        }
    }

    /// A response's body read as JSON. Only spaces and line breaks (what some servers send for "no content") are no
    /// value, as an empty body is. The bytes are read in place once, for both; the `Content-Type` only when they are
    /// not JSON as UTF-8.
    static func json(_ response: Response) throws(HTTPError) -> (value: Response.Value, decodable: Bool) {
        let data = response.data
        let parsed = data.withUnsafeBytes { bytes in
            Result { () throws(HTTPError) -> (value: Response.Value, decodable: Bool) in
                if isBlank(bytes) { return (.empty, true) }
                let (json, decodable) = try JSON.parsed(bytes, of: data)
                return (.json(json), decodable)
            }
        }
        if case .failure(let error) = parsed,
            let text = declaredText(of: data, contentType: response.headers["Content-Type"])
        {
            // Read in the charset the server declared; if that fails too, the first error says more.
            guard let (json, decodable) = try? JSON.parsed(Data(text.utf8)) else { throw error }
            return (.json(json), decodable)
        }
        return try parsed.get()
    }

    /// `text/html, 1234 bytes`: enough to see at a glance why a body did not decode.
    private static func describe(_ response: Response) -> String {
        // The media type, before any `;`; a field with none (`;`, or empty) is shown as it came.
        let type = response.headers["Content-Type"].map { value in
            let media = HTTPHeaders.trimmingBlanks(String(value.prefix { $0 != ";" }))
            return media.isEmpty ? "Content-Type \(String(reflecting: value))" : media
        }
        return "\(type ?? "no Content-Type"), \(response.data.count) bytes"
    }

    /// JSON text in the charset a `Content-Type` declares, when that is not a Unicode one (`charset=GBK` from an older
    /// server, ISO-8859-1) and the body is not UTF-8 either; `nil` otherwise. JSON is UTF-8 (RFC 8259), and a body
    /// that is UTF-8 is read so whatever the label says (servers label UTF-8 as ISO-8859-1 often enough); only a body
    /// that cannot be UTF-8 is read in the declared charset, as AFNetworking read every JSON body, where it failed
    /// with "invalid UTF-8".
    static func declaredText(of data: Data, contentType: String?) -> String? {
        guard let label = charset(of: contentType), let encoding = encoding(forCharset: label),
            ![.utf8, .ascii, .utf16, .utf16BigEndian, .utf16LittleEndian].contains(encoding),
            byteOrderMark(data) == nil, String(data: data, encoding: .utf8) == nil
        else { return nil }
        return String(data: data, encoding: encoding)
    }

    /// The body as text, in the charset its `Content-Type` names (UTF-8 when it names none).
    ///
    /// - Throws: `.decoding`, naming the charset, when the body is not text in it; for a charset Switchboard does not
    ///   know, when the body is not UTF-8 either.
    static func text(of data: Data, contentType: String?) throws(HTTPError) -> String {
        // A byte order mark decides, whatever the label says, and is not part of the text (the WHATWG Encoding
        // Standard's "decode", as browsers read): UTF-16 labelled UTF-8 failed, UTF-8 labelled ISO-8859-1 was garbled.
        if let (encoding, name, length) = byteOrderMark(data) {
            guard let text = String(data: data.dropFirst(length), encoding: encoding) else {
                throw HTTPError(.decoding, "the body starts with a \(name) byte order mark but is not \(name) text")
            }
            return text
        }
        let label = charset(of: contentType)
        let known = label.flatMap(encoding(forCharset:))
        if let text = String(data: data, encoding: known ?? .utf8) { return text }
        guard let label else { throw HTTPError(.decoding, "the body is not UTF-8 text (no charset is declared)") }
        guard known != nil else {
            throw HTTPError(
                .decoding, "the body's charset \"\(label)\" is not one Switchboard reads, and the body is not UTF-8")
        }
        throw HTTPError(.decoding, "the body is not text in the charset it declares (\(label))")
    }

    /// The encoding a body's byte order mark names, and the mark's length: UTF-8 (EF BB BF), UTF-16 big-endian
    /// (FE FF) or little-endian (FF FE); `nil` without one.
    static func byteOrderMark(_ data: Data) -> (String.Encoding, String, Int)? {
        let start = data.prefix(3)
        if start.elementsEqual([0xEF, 0xBB, 0xBF]) { return (.utf8, "UTF-8", 3) }
        if start.starts(with: [0xFE, 0xFF]) { return (.utf16BigEndian, "UTF-16BE", 2) }
        if start.starts(with: [0xFF, 0xFE]) { return (.utf16LittleEndian, "UTF-16LE", 2) }
        return nil
    }

    /// The media type a `Content-Type` names (what comes before its parameters), in lower case, without blanks.
    static func mediaType(of contentType: String) -> String {
        // Split by scalar, as `charset(of:)` does.
        let type =
            contentType.unicodeScalars.split(separator: ";", maxSplits: 1, omittingEmptySubsequences: false)
            .first.map { String(Substring($0)) } ?? ""
        return type.trimmingCharacters(in: .whitespaces).lowercased()
    }

    /// The charset a `Content-Type` names, in lower case, without quotes.
    static func charset(of contentType: String?) -> String? {
        guard let contentType else { return nil }
        // Split by scalar: a combining mark after `;` would join it into one `Character` and hide the parameter.
        return contentType.lowercased().unicodeScalars.split(separator: ";").lazy
            .map({ String(Substring($0)).trimmingCharacters(in: .whitespaces) })
            .first(where: { $0.hasPrefix("charset=") })?
            .dropFirst("charset=".count)
            .trimmingCharacters(in: CharacterSet(charactersIn: "\" "))
    }

    /// The encoding a charset label names (the WHATWG Encoding Standard's labels, and the usual aliases); `nil` for
    /// one not known here. Chinese labels read as GB 18030 and Big5 as Big5-HKSCS, the supersets browsers read them
    /// as; Shift_JIS as Windows-31J, EUC-KR as its superset CP949, for the same reason.
    static func encoding(forCharset label: String) -> String.Encoding? {
        if let standard = standardEncodings[label] { return standard }
        return coreFoundationEncodings[label].map { String.Encoding(rawValue: 0x8000_0000 | $0) }
    }

    private static let standardEncodings: [String: String.Encoding] = aliases([
        (.utf8, ["utf-8", "utf8", "unicode-1-1-utf-8"]),
        (.isoLatin1, ["iso-8859-1", "iso8859-1", "iso_8859-1", "latin1", "latin-1", "l1"]),
        (.ascii, ["us-ascii", "ascii"]),
        (.utf16, ["utf-16"]), (.utf16LittleEndian, ["utf-16le"]), (.utf16BigEndian, ["utf-16be"]),
        (.windowsCP1250, ["windows-1250", "cp1250", "x-cp1250"]),
        (.windowsCP1251, ["windows-1251", "cp1251", "x-cp1251"]),
        (.windowsCP1252, ["windows-1252", "cp1252", "x-cp1252"]),
        (.windowsCP1253, ["windows-1253", "cp1253", "x-cp1253"]),
        (.windowsCP1254, ["windows-1254", "cp1254", "x-cp1254"]),
        (.isoLatin2, ["iso-8859-2", "iso8859-2", "iso_8859-2", "latin2", "l2"]),
        (.iso2022JP, ["iso-2022-jp", "csiso2022jp"]),
    ])

    /// Core Foundation's numbers for encodings `String.Encoding` has no name for.
    private static let coreFoundationEncodings: [String: UInt] = aliases([
        (0x0632, ["gb18030", "gbk", "gb2312", "gb_2312", "gb_2312-80", "x-gbk", "cp936", "csgb2312", "chinese"]),
        (0x0A06, ["big5", "big5-hkscs", "cn-big5", "csbig5", "x-x-big5"]),
        (
            0x0420,
            ["shift_jis", "shift-jis", "sjis", "ms_kanji", "csshiftjis", "windows-31j", "x-sjis", "ms932", "cp932"]
        ),
        (0x0422, ["euc-kr", "ks_c_5601-1987", "windows-949", "cp949", "ksc5601", "korean", "csksc56011987"]),
        (0x0A02, ["koi8-r", "koi8", "koi", "cskoi8r"]),
        (0x0505, ["windows-1255", "cp1255"]), (0x0506, ["windows-1256", "cp1256"]),
        (0x0507, ["windows-1257", "cp1257"]), (0x0508, ["windows-1258", "cp1258"]),
        (0x041D, ["windows-874", "tis-620", "iso-8859-11", "dos-874"]),
        (0x0205, ["iso-8859-5", "iso8859-5", "cyrillic"]), (0x0207, ["iso-8859-7", "iso8859-7", "greek"]),
        (0x0209, ["iso-8859-9", "iso8859-9", "latin5"]), (0x020F, ["iso-8859-15", "iso8859-15", "latin-9"]),
    ])

    private static func aliases<Value>(_ groups: [(Value, [String])]) -> [String: Value] {
        var table: [String: Value] = [:]
        for (value, labels) in groups {
            for label in labels { table[label] = value }
        }
        return table
    }
}
