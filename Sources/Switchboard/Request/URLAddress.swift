import Foundation

/// A URL, held either as Foundation's `URL` or as text that Foundation would take exactly as it is.
///
/// Parsing a URL with Foundation costs about as much as the rest of the center's work for a small request, and
/// most requests never need the parsed value: CurlEngine hands libcurl the text, and the center reads the URL
/// back only for logs, caches and errors. A composed URL whose text is in the plain form `isPlain` accepts is
/// kept as that text, and parsed only when someone reads `url` (on each read: the value is not shared).
enum URLAddress: Sendable {
    /// A URL Foundation made (or `nil`), as given.
    case url(URL?)
    /// Text that `URL(string:)` takes unchanged (`isPlain`): an `http` or `https` URL.
    case text(String)

    /// Foundation's `URL`, made now from the text when the address is text.
    var url: URL? {
        switch self {
        case .url(let url): url
        case .text(let text): URL(string: text)
        }
    }

    /// The URL's text (Foundation's `absoluteString`), without parsing it.
    var text: String? {
        switch self {
        case .url(let url): url?.absoluteString
        case .text(let text): text
        }
    }

    /// The address of a URL: its text when that is plain (what an engine reads, once, instead of asking the URL for
    /// it at every step), else the URL as it is.
    init(_ url: URL?) {
        if let text = url?.absoluteString, text.withUTF8Bytes(Self.isPlain) {
            self = .text(text)
        } else {
            self = .url(url)
        }
    }

    /// The address of a text: kept as text when it is plain, else parsed (`nil` when Foundation refuses it).
    init(parsing text: String) {
        if text.withUTF8Bytes(Self.isPlain) {
            self = .text(text)
        } else {
            // Escapes in it are kept (see `URLComposition.keepingEscapes`).
            self = .url(URL(string: URLComposition.keepingEscapes(text)))
        }
    }

    /// Whether `text` is an `http` or `https` URL in a plain form, which Foundation's `URL(string:)` accepts and
    /// keeps exactly as it is (its `absoluteString` is the same text, nothing percent-encoded or changed):
    ///
    /// - the scheme `http://` or `https://`, in lower case;
    /// - a host of letters, digits, `-`, `.`, `_` and `~` (no user info, no IP literal), then at most a `:` and 1 to
    ///   5 digits of port;
    /// - then nothing, or a path starting with `/`, a query starting with `?` or a fragment starting with `#`, made
    ///   of RFC 3986's unreserved characters, sub-delimiters, `:`, `@`, `/`, `?` and percent escapes of two hex
    ///   digits, with at most one `#`.
    ///
    /// Anything else is left to Foundation, which percent-encodes what it must (a space as `%20`) or refuses the
    /// text. `URLAddressTests` holds this to Foundation's answers over generated texts.
    static func isPlain(_ text: UnsafeBufferPointer<UInt8>) -> Bool {
        let count = text.count
        var index: Int
        if count >= 7, text[0] == UInt8(ascii: "h"), text[1] == UInt8(ascii: "t"), text[2] == UInt8(ascii: "t"),
            text[3] == UInt8(ascii: "p")
        {
            index = text[4] == UInt8(ascii: "s") ? 5 : 4
        } else {
            return false
        }
        guard index + 3 <= count, text[index] == UInt8(ascii: ":"), text[index + 1] == UInt8(ascii: "/"),
            text[index + 2] == UInt8(ascii: "/")
        else { return false }
        index += 3
        let hostStart = index
        while index < count, isHostByte(text[index]) { index += 1 }
        guard index > hostStart else { return false }
        if index < count, text[index] == UInt8(ascii: ":") {
            index += 1
            let portStart = index
            while index < count, text[index] >= UInt8(ascii: "0"), text[index] <= UInt8(ascii: "9") { index += 1 }
            guard index > portStart, index - portStart <= 5 else { return false }
        }
        guard index < count else { return true }
        switch text[index] {
        case UInt8(ascii: "/"), UInt8(ascii: "?"), UInt8(ascii: "#"): break
        default: return false
        }
        var sawFragment = false
        while index < count {
            let byte = text[index]
            if byte == UInt8(ascii: "%") {
                guard index + 2 < count, text[index + 1].hexDigitValue != nil, text[index + 2].hexDigitValue != nil
                else {
                    return false
                }
                index += 3
                continue
            }
            if byte == UInt8(ascii: "#") {
                if sawFragment { return false }
                sawFragment = true
            } else if !isPathByte(byte) {
                return false
            }
            index += 1
        }
        return true
    }

    /// Letters, digits, `-`, `.`, `_`, `~`: RFC 3986's unreserved characters.
    static func isHostByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"),
            UInt8(ascii: "~"):
            true
        default: false
        }
    }

    /// Unreserved characters, sub-delimiters (`!$&'()*+,;=`), `:`, `@`, `/` and `?`: what a path, a query and a
    /// fragment may hold without escaping.
    static func isPathByte(_ byte: UInt8) -> Bool {
        if isHostByte(byte) { return true }
        return switch byte {
        case UInt8(ascii: "!"), UInt8(ascii: "$"), UInt8(ascii: "&"), UInt8(ascii: "'"), UInt8(ascii: "("),
            UInt8(ascii: ")"), UInt8(ascii: "*"), UInt8(ascii: "+"), UInt8(ascii: ","), UInt8(ascii: ";"),
            UInt8(ascii: "="), UInt8(ascii: ":"), UInt8(ascii: "@"), UInt8(ascii: "/"), UInt8(ascii: "?"):
            true
        default: false
        }
    }
}
