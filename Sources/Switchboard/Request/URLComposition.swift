import Foundation

/// Turns `url`, or `server` plus `api`, into the URL a request goes to (XMNetworking's rules, RFC 3986 resolution).
enum URLComposition {
    /// The URL string for a merged request: `url` when set, else `api` resolved against `server`, else `server`;
    /// and whether it is in the plain form (`URLAddress.isPlain`) by construction, which encoding then need not
    /// check: `plainServer` (see `isPlainServer(_:)`), or it with a plain `api`.
    ///
    /// A server with a path and no trailing slash gets one, so `api` extends the path instead of replacing its last
    /// segment: `https://x.com/v1` + `users` is `https://x.com/v1/users`. An `api` that starts with `/` replaces the
    /// path; an absolute `api` wins.
    static func compose(
        _ request: Request, plainServer: String? = nil
    ) throws(HTTPError) -> (text: String, isPlain: Bool) {
        if let url = request.url {
            // An empty URL is a mistake (a missing value read into it), not "no URL": sent to the server's root, it
            // failed later as some other error.
            guard !url.isEmpty else {
                throw HTTPError(.invalidURL, "the request's url is empty; nothing was sent", request: request)
            }
            return (url, false)
        }
        let server = request.server ?? ""
        let api = request.api ?? ""
        guard !api.isEmpty else {
            guard !server.isEmpty else {
                throw HTTPError(.invalidURL, "no URL: set `url`, or `api` with a server", request: request)
            }
            return (server, server == plainServer)
        }
        if isPlainPath(api) {
            // What RFC 3986 resolution gives for a relative path of plain segments under a directory, without
            // parsing either (`validate` parses the result, unless the server is a plain one).
            let serverIsPlain = server == plainServer
            if serverIsPlain || isPlainDirectory(server) { return (joined(server, api), serverIsPlain) }
        }
        // Escapes the caller wrote stay as they are (`keepingEscapes`).
        let escapedAPI = keepingEscapes(api)
        if let absolute = URL(string: escapedAPI), absolute.scheme != nil {
            return (absolute.absoluteString, false)
        }
        guard !server.isEmpty else {
            throw HTTPError(.invalidURL, "api \"\(api)\" has no server to resolve against", request: request)
        }
        guard var base = URL(string: keepingEscapes(server)), base.scheme != nil else {
            throw HTTPError(.invalidURL, "the server \"\(server)\" is not a valid URL", request: request)
        }
        if !base.path.isEmpty && !server.hasSuffix("/") {
            base = base.appendingPathComponent("")
        }
        guard let resolved = URL(string: escapedAPI, relativeTo: base) else {
            throw HTTPError(.invalidURL, "api \"\(api)\" is not a valid URL reference", request: request)
        }
        return (resolved.absoluteString, false)
    }

    /// Two strings as one, written once into a string of their joint length (`+` copies the first, then grows the
    /// copy for the second).
    private static func joined(_ first: String, _ second: String) -> String {
        first.withUTF8Bytes { first in
            second.withUTF8Bytes { second in
                String(unsafeUninitializedCapacity: first.count + second.count) { buffer in
                    let end = buffer.initialize(fromContentsOf: first)
                    return buffer[end...].initialize(fromContentsOf: second)
                }
            }
        }
    }

    /// Whether `server` is in the plain form (`URLAddress.isPlain`) and a directory (`isPlainDirectory`): a plain
    /// `api` under it makes a URL in the plain form, and a query that encoding escapes keeps it so.
    static func isPlainServer(_ server: String) -> Bool {
        return isPlainDirectory(server) && server.withUTF8Bytes(URLAddress.isPlain)
    }

    /// Whether `api` is a relative path of plain segments: unreserved characters and `/`, not starting with `/`,
    /// no `.` or `..` segment (so it has no scheme, query or fragment, and nothing to resolve).
    private static func isPlainPath(_ api: String) -> Bool {
        // Read through the string's contiguous bytes: stepping through `utf8` checked the string's form at every
        // byte, and these two checks took as long as the rest of composing.
        return api.withUTF8Bytes { bytes in
            guard bytes.first != UInt8(ascii: "/") else { return false }
            var segmentDots = 0
            var segmentLength = 0
            for byte in bytes {
                switch byte {
                case UInt8(ascii: "/"):
                    if segmentLength > 0 && segmentDots == segmentLength && segmentLength <= 2 { return false }
                    segmentDots = 0
                    segmentLength = 0
                case UInt8(ascii: "."):
                    segmentDots += 1
                    segmentLength += 1
                case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                    UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "_"), UInt8(ascii: "~"):
                    segmentLength += 1
                default:
                    return false
                }
            }
            return !(segmentLength > 0 && segmentDots == segmentLength && segmentLength <= 2)
        }
    }

    /// Whether `server` ends with `/` and has no query, fragment or dot segment (nothing resolution would change).
    private static func isPlainDirectory(_ server: String) -> Bool {
        return server.withUTF8Bytes { bytes in
            var previous: UInt8 = 0
            for byte in bytes {
                if byte == UInt8(ascii: "?") || byte == UInt8(ascii: "#") { return false }
                if byte == UInt8(ascii: ".") && previous == UInt8(ascii: "/") { return false }
                previous = byte
            }
            return previous == UInt8(ascii: "/")
        }
    }

    /// Checks a composed URL string: it must be an absolute `http` or `https` URL with a host. A text in the plain
    /// form (`URLAddress.isPlain`: such a URL, which Foundation would take as it is) is kept as text, unparsed;
    /// any other is parsed by Foundation, which may percent-encode parts of it.
    static func validate(_ string: String, for request: Request) throws(HTTPError) -> URLAddress {
        let address = URLAddress(parsing: string)
        guard case .url(let parsed) = address else { return address }
        guard let url = parsed else {
            throw HTTPError(.invalidURL, "\"\(Redaction.standard.url(string))\" is not a valid URL", request: request)
        }
        // Scheme and host are read off the text Foundation accepted, which costs less than asking the URL for them
        // (each answer a new string): the same answers, since an accepted text's scheme is what precedes its first
        // `:`, and its host what its authority holds between any user info and any port.
        switch string.withUTF8Bytes(Self.authority) {
        case .notHTTP:
            throw HTTPError(
                .invalidURL, "\"\(Redaction.standard.url(string))\" is not an http or https URL", request: request)
        case .noHost:
            throw HTTPError(.invalidURL, "\"\(Redaction.standard.url(string))\" has no host", request: request)
        case .hasHost:
            return .url(url)
        }
    }

    /// The URL as both engines send it (see `canonical(_:)`), the rest of its text as it is.
    static func canonicalizing(_ url: URL) -> URL {
        canonical(url) ?? url
    }

    /// The URL as both engines send it, or `nil` when it is so already (nothing to change).
    static func canonical(_ url: URL) -> URL? {
        canonical(url.absoluteString)
    }

    /// A URL's text (`absoluteString`) as both engines send it, as a URL, or `nil` when it is so already: the scheme
    /// in lower case (`HTTP://x/` as `http://x/`), and a host written as an IPv4 address in an older form in the
    /// usual one (`http://127.1/` as `http://127.0.0.1/`, see `dottedQuad`); the rest as it is.
    ///
    /// Schemes are case-insensitive (RFC 3986 section 3.1), but URLSession on Linux refuses an upper-case one
    /// ("unsupported URL"), where libcurl takes it. libcurl reads `127.1`, `0x7f.1` or `2130706433` as the address
    /// `127.0.0.1`, as browsers do (the WHATWG URL Standard's IPv4 parser); URLSession on Linux, which compares the
    /// URL's host to libcurl's, refused such a URL as a bad URL (`-1000`), and the engines' outcomes differed.
    static func canonical(_ text: String) -> URL? {
        let utf8 = text.utf8
        guard let colon = utf8.firstIndex(of: UInt8(ascii: ":")) else { return nil }
        let upperScheme = utf8[..<colon].contains { $0 >= UInt8(ascii: "A") && $0 <= UInt8(ascii: "Z") }
        let host = text.withUTF8Bytes { bytes -> (Range<Int>, String)? in
            guard let (start, end) = authorityBounds(bytes) else { return nil }
            var hostEnd = start
            while hostEnd < end, bytes[hostEnd] != UInt8(ascii: ":") { hostEnd += 1 }
            return dottedQuad(UnsafeBufferPointer(rebasing: bytes[start..<hostEnd])).map { (start..<hostEnd, $0) }
        }
        guard upperScheme || host != nil else { return nil }
        var bytes = Array(utf8)
        if let (range, quad) = host { bytes.replaceSubrange(range, with: quad.utf8) }
        for index in 0..<utf8.distance(from: utf8.startIndex, to: colon)
        where bytes[index] >= UInt8(ascii: "A") && bytes[index] <= UInt8(ascii: "Z") {
            bytes[index] |= 0x20
        }
        return URL(string: String(decoding: bytes, as: UTF8.self))
    }

    /// The usual form (`127.0.0.1`) of a host that libcurl reads as an IPv4 address written in an older one: one to
    /// four parts, each decimal, hexadecimal (`0x7f`) or octal (`0177`), the last filling the bytes the others leave
    /// (`127.1`, `2130706433`); `nil` for any other host, and for one in the usual form already. A part that is no
    /// number of these (`08`, `0x`, an empty one, a trailing dot) or too large makes the host a name, as it is.
    static func dottedQuad(_ host: UnsafeBufferPointer<UInt8>) -> String? {
        // A name has a letter other than a-f or x: most hosts are known not to be an address at their first byte.
        guard !host.isEmpty,
            host.allSatisfy({ $0 == UInt8(ascii: ".") || $0.hexDigitValue != nil || $0 | 0x20 == UInt8(ascii: "x") })
        else { return nil }
        // Read without allocating: every request a host such as `127.0.0.1` passes here.
        var parts = 0
        var leading: UInt64 = 0  // the parts before the last, a byte each
        var last: UInt64 = 0
        var isUsual = true  // four decimal parts without leading zeros, each at most 255
        var start = 0
        for index in 0...host.count where index == host.count || host[index] == UInt8(ascii: ".") {
            let part = UnsafeBufferPointer(rebasing: host[start..<index])
            guard parts < 4, let number = ipv4Number(part) else { return nil }
            isUsual =
                isUsual && part.count <= 3 && (part.count == 1 || part[0] != UInt8(ascii: "0"))
                && part.allSatisfy { $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }
            if index == host.count {
                last = number
            } else {
                guard number <= 255 else { return nil }
                leading = leading << 8 | number
            }
            parts += 1
            start = index + 1
        }
        // The last part fills the bytes the others leave.
        let lastBytes = UInt64(5 - parts)
        guard last < UInt64(1) << (8 * lastBytes), !(isUsual && parts == 4) else { return nil }
        let address = leading << (8 * lastBytes) | last
        return (0..<4).reversed().map { String(address >> (8 * UInt64($0)) & 0xFF) }.joined(separator: ".")
    }

    /// A part of an IPv4 address in an older form: decimal, `0x` then hexadecimal digits, or `0` then octal digits;
    /// `nil` for anything else, or a value above 2^32.
    private static func ipv4Number(_ part: UnsafeBufferPointer<UInt8>) -> UInt64? {
        var digits = part[...]
        var radix: UInt64 = 10
        if digits.count >= 2, digits.first == UInt8(ascii: "0"), digits.dropFirst().first! | 0x20 == UInt8(ascii: "x") {
            digits = digits.dropFirst(2)
            radix = 16
        } else if digits.count >= 2, digits.first == UInt8(ascii: "0") {
            digits = digits.dropFirst()
            radix = 8
        }
        guard !digits.isEmpty else { return nil }
        var value: UInt64 = 0
        for byte in digits {
            guard let digit = byte.hexDigitValue.map(UInt64.init), digit < radix else { return nil }
            value = value * radix + digit
            if value > UInt64(UInt32.max) { return nil }
        }
        return value
    }

    /// Whether the URL's host is an IP literal in brackets (`http://[::1]:8080/`, RFC 3986 section 3.2.2).
    static func hasIPLiteralHost(_ url: URL) -> Bool {
        return url.absoluteString.withUTF8Bytes { text in
            guard let (hostStart, end) = authorityBounds(text) else { return false }
            return hostStart < end && text[hostStart] == UInt8(ascii: "[")
        }
    }

    enum Authority: Equatable {
        case notHTTP, noHost, hasHost
    }

    /// Whether `text` starts with an `http:` or `https:` scheme (any case), and whether it then has a host:
    /// `//`, then an authority (up to `/`, `?` or `#`) that is not empty once user info (up to its last `@`) and
    /// port (from `:`, after any `[...]` literal) are left out.
    static func authority(_ text: UnsafeBufferPointer<UInt8>) -> Authority {
        func lower(_ byte: UInt8) -> UInt8 { byte | 0x20 }
        guard text.count >= 5, lower(text[0]) == UInt8(ascii: "h"), lower(text[1]) == UInt8(ascii: "t"),
            lower(text[2]) == UInt8(ascii: "t"), lower(text[3]) == UInt8(ascii: "p")
        else { return .notHTTP }
        var index = 4
        if lower(text[index]) == UInt8(ascii: "s") { index += 1 }
        guard index < text.count, text[index] == UInt8(ascii: ":") else { return .notHTTP }
        // The scheme holds no `:`, so the authority found after the first one is this scheme's.
        guard let (hostStart, end) = authorityBounds(text), hostStart < end else { return .noHost }
        if text[hostStart] == UInt8(ascii: "[") {
            // An IP literal: something between the brackets.
            return hostStart + 1 < end && text[hostStart + 1] != UInt8(ascii: "]") ? .hasHost : .noHost
        }
        return text[hostStart] == UInt8(ascii: ":") ? .noHost : .hasHost
    }

    /// The port of an `http` or `https` URL's text, as Foundation's `URL.port` gives it for a text it accepted: the
    /// digits after the host's `:` (after any `[...]` literal), read as `Int` reads them; `nil` when there are none,
    /// or too many for an `Int`. Read off the text: `URL.port` parses the URL again on every request an engine
    /// performs.
    static func port(_ text: UnsafeBufferPointer<UInt8>) -> Int? {
        guard let (hostStart, end) = authorityBounds(text) else { return nil }
        var index = hostStart
        if index < end, text[index] == UInt8(ascii: "[") {
            while index < end, text[index] != UInt8(ascii: "]") { index += 1 }
        }
        while index < end, text[index] != UInt8(ascii: ":") { index += 1 }
        guard index + 1 < end else { return nil }
        var port = 0
        for byte in text[(index + 1)..<end] {
            guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return nil }
            let (times, overflowTimes) = port.multipliedReportingOverflow(by: 10)
            let (sum, overflowSum) = times.addingReportingOverflow(Int(byte - UInt8(ascii: "0")))
            if overflowTimes || overflowSum { return nil }
            port = sum
        }
        return port
    }

    /// The port of a text in the plain form (`URLAddress.isPlain`: `http://` or `https://`, a host of neither `:`
    /// nor `@`, then at most `:` and 1 to 5 digits), as `port` reads it, in one short scan.
    static func plainPort(_ text: UnsafeBufferPointer<UInt8>) -> Int? {
        var index = text[4] == UInt8(ascii: "s") ? 8 : 7
        while index < text.count {
            switch text[index] {
            case UInt8(ascii: ":"):
                var port = 0
                index += 1
                while index < text.count, text[index] >= UInt8(ascii: "0"), text[index] <= UInt8(ascii: "9") {
                    port = port * 10 + Int(text[index] - UInt8(ascii: "0"))
                    index += 1
                }
                return port
            case UInt8(ascii: "/"), UInt8(ascii: "?"), UInt8(ascii: "#"):
                return nil
            default:
                index += 1
            }
        }
        return nil
    }

    /// Where the host of the authority after the scheme's `:` and `//` starts, and where the authority ends (see
    /// `hostBounds`); `nil` when the first `:` is not followed by `//`.
    private static func authorityBounds(_ text: UnsafeBufferPointer<UInt8>) -> (hostStart: Int, end: Int)? {
        guard let colon = text.firstIndex(of: UInt8(ascii: ":")), colon + 2 < text.count,
            text[colon + 1] == UInt8(ascii: "/"), text[colon + 2] == UInt8(ascii: "/")
        else { return nil }
        return hostBounds(text, from: colon + 3)
    }

    /// The authority that starts at `start` (after `//`) ends at the first `/`, `?` or `#`; its host starts after its
    /// last `@`, if any. Returns where the host starts and where the authority ends.
    private static func hostBounds(_ text: UnsafeBufferPointer<UInt8>, from start: Int) -> (hostStart: Int, end: Int) {
        var end = start
        var hostStart = start
        while end < text.count {
            let byte = text[end]
            if byte == UInt8(ascii: "/") || byte == UInt8(ascii: "?") || byte == UInt8(ascii: "#") { break }
            if byte == UInt8(ascii: "@") { hostStart = end + 1 }
            end += 1
        }
        return (hostStart, end)
    }

    // MARK: - Escapes

    /// The text with the bytes a URL cannot hold in its path, query or fragment percent-encoded, and the escapes it
    /// has left as they are; the text itself when it has nothing to encode.
    ///
    /// Foundation's `URL(string:)` encodes a text that holds such a byte (a space, `北京`, `[`) as if it had no
    /// escapes at all, its `%` too: `files/a b/%2F` went as `files/a%20b/%252F`, and the server read the three
    /// characters `%2F` where the caller had written an escaped `/`. Encoded here first, the text is one Foundation
    /// takes as it is, escapes and all, as browsers do; and one that every Foundation takes (before iOS 17 and macOS
    /// 14, `URL(string:)` refused a space instead of encoding it). What is encoded is what Foundation encodes: every
    /// byte but RFC 3986's unreserved characters, sub-delimiters, `:`, `@`, `/` and `?`, with the first `#` kept as
    /// the fragment's start and a `%` without two hex digits after it encoded as `%25`, so that a text without an
    /// escape ends as Foundation would make it. The scheme and the authority are left to Foundation (a host in
    /// another script goes as punycode).
    static func keepingEscapes(_ text: String) -> String {
        let escaped = text.withUTF8Bytes { bytes -> String? in
            let start = pathStart(bytes)
            // Made at the first byte to encode, with everything before it: a text with none allocates nothing.
            var result: [UInt8]?
            var sawFragment = false
            var index = start
            while index < bytes.count {
                let byte = bytes[index]
                let length = byte == UInt8(ascii: "%") && isEscape(bytes, at: index) ? 3 : 1
                let kept = length == 3 || (byte == UInt8(ascii: "#") && !sawFragment) || URLAddress.isPathByte(byte)
                sawFragment = sawFragment || byte == UInt8(ascii: "#")
                if kept {
                    result?.append(contentsOf: bytes[index..<index + length])
                } else {
                    if result == nil {
                        result = Array(bytes[..<index])
                        result!.reserveCapacity(bytes.count + 32)
                    }
                    result!.append(UInt8(ascii: "%"))
                    result!.append(UInt8.upperHexDigit(byte >> 4))
                    result!.append(UInt8.upperHexDigit(byte & 0x0F))
                }
                index += length
            }
            return result.map { String(decoding: $0, as: UTF8.self) }
        }
        return escaped ?? text
    }

    /// Whether `%` at `index` starts an escape: two hex digits follow it.
    private static func isEscape(_ bytes: UnsafeBufferPointer<UInt8>, at index: Int) -> Bool {
        index + 2 < bytes.count && bytes[index + 1].hexDigitValue != nil && bytes[index + 2].hexDigitValue != nil
    }

    /// Where a URL reference's path starts: after its scheme (letters, digits, `+`, `-` and `.` after a letter,
    /// then `:`) and its authority (after `//`), if it has them.
    private static func pathStart(_ bytes: UnsafeBufferPointer<UInt8>) -> Int {
        func isLetter(_ byte: UInt8) -> Bool {
            (byte | 0x20) >= UInt8(ascii: "a") && (byte | 0x20) <= UInt8(ascii: "z")
        }
        func isSchemeByte(_ byte: UInt8) -> Bool {
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "+"), UInt8(ascii: "-"), UInt8(ascii: "."): true
            default: isLetter(byte)
            }
        }
        var index = 0
        if let first = bytes.first, isLetter(first) {
            var end = 1
            while end < bytes.count, isSchemeByte(bytes[end]) { end += 1 }
            if end < bytes.count, bytes[end] == UInt8(ascii: ":") { index = end + 1 }
        }
        guard index + 1 < bytes.count, bytes[index] == UInt8(ascii: "/"), bytes[index + 1] == UInt8(ascii: "/")
        else { return index }
        return hostBounds(bytes, from: index + 2).end
    }
}
