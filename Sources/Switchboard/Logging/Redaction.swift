import Foundation

/// Hides secrets before anything is printed, by one rule for every kind of name: a header, a query item, a form
/// field, a parameter or a JSON member is secret when its name contains one of `Redaction.secretWords` (or a word the
/// user added), compared without case. Then, as a last pass over all the text printed, wherever it came from (an
/// underlying error's description, a body too long or too broken to parse), every `name=value` and `"name": value`
/// with a secret name and every password in a URL is hidden too.
struct Redaction: Sendable {
    static let placeholder = "<redacted>"

    /// Words that make a name secret wherever they appear in it.
    static let secretWords = [
        "token", "secret", "key", "password", "passwd", "session", "auth", "signature", "cookie", "credential",
    ]

    /// The rule with the built-in words only (for `HTTPError.description`).
    static let standard = Redaction()

    /// How much of a body is read for redaction before it is cut to the printed length.
    static let scanLimit = 256 << 10

    private let words: [String]

    /// A rule with these words added to the built-in ones.
    init(adding words: some Sequence<String> = []) {
        self.words = Redaction.secretWords + words.map { $0.lowercased() }.filter { !$0.isEmpty }
    }

    func isSecret(_ name: String) -> Bool {
        let lowered = name.lowercased()
        return words.contains { lowered.contains($0) }
    }

    func headers(_ headers: HTTPHeaders) -> HTTPHeaders {
        var copy = headers
        for field in headers where isSecret(field.name) { copy[field.name] = Redaction.placeholder }
        return copy
    }

    /// Redacts parameters at any depth: a secret name hides its whole value.
    func parameters(_ parameters: [String: any Sendable]) -> [String: String] {
        var result: [String: String] = [:]
        for (key, value) in parameters {
            result[key] = isSecret(key) ? Redaction.placeholder : describe(value)
        }
        return result
    }

    private func describe(_ value: Any) -> String {
        switch value {
        case let dictionary as [String: any Sendable]:
            let members = parameters(dictionary).sorted { $0.key < $1.key }.map { "\($0.key): \($0.value)" }
            return "{" + members.joined(separator: ", ") + "}"
        case let array as [any Sendable]:
            return "[" + array.map(describe).joined(separator: ", ") + "]"
        case let json as JSON:
            return self.json(json).description
        default:
            return String(describing: value)
        }
    }

    /// A JSON value with the values of secret members replaced, at any depth.
    func json(_ json: JSON) -> JSON {
        switch json {
        case .object(let members):
            var copy: [String: JSON] = [:]
            for (key, value) in members {
                copy[key] = isSecret(key) ? .string(Redaction.placeholder) : self.json(value)
            }
            return .object(copy)
        case .array(let elements):
            return .array(elements.map(self.json))
        default:
            return json
        }
    }

    /// A body as text for the log: redacted first (as JSON when it parses, then as text), and only then cut to
    /// `limit` characters, so that no size lets a secret through.
    func body(_ data: Data, limit: Int) -> String {
        if data.isEmpty { return "(empty)" }
        let scanned = data.prefix(Redaction.scanLimit)
        guard let text = Redaction.utf8(scanned) else { return "(\(data.count) bytes of binary data)" }
        var redacted: String
        if scanned.count == data.count, let json = try? JSON(data: data) {
            redacted = self.text(self.json(json).description)
        } else {
            redacted = self.text(text)
        }
        let cut = redacted.count > limit || scanned.count < data.count
        if redacted.count > limit { redacted = String(redacted.prefix(limit)) }
        return cut ? redacted + "… (\(data.count) bytes in all)" : redacted
    }

    /// UTF-8 text, allowing a character cut in two at the end; `nil` for binary data.
    private static func utf8(_ data: Data) -> String? {
        for drop in 0...min(3, data.count - 1) {
            if let text = String(data: data.dropLast(drop), encoding: .utf8) {
                return text.contains("\u{0}") ? nil : text
            }
        }
        return nil
    }

    // MARK: - Text

    /// `name=value` (queries, form bodies, error descriptions): the value runs to the next separator.
    /// A name starts after a character that cannot be part of one, and nothing is given back once taken (possessive
    /// quantifiers), so that a long run of text is scanned once, not once per starting position.
    private static let pairPattern = try! NSRegularExpression(
        pattern: #"(?<![A-Za-z0-9_.\-\[\]%])([A-Za-z0-9_.\-\[\]%]++)=([^&\s"',;)<>]*+)"#)
    /// `"name": value` (JSON, even cut short): a string value may lack its closing quote.
    private static let memberPattern = try! NSRegularExpression(
        pattern: #""((?:[^"\\]++|\\.)*+)"\s*+:\s*+("(?:[^"\\]++|\\.)*+"?|[^,}\]\s]++)"#)
    /// `scheme://user:password@`.
    private static let userInfoPattern = try! NSRegularExpression(
        pattern: #"(?<![A-Za-z0-9+.\-])([A-Za-z][A-Za-z0-9+.\-]*+://[^/@\s:]*+):([^/@\s]*+)@"#)

    /// Any text with secret-named values and URL passwords hidden.
    func text(_ text: String) -> String {
        var result = text
        result = replace(Redaction.userInfoPattern, in: result) { _ in
            true
        } value: { _ in
            Redaction.placeholder
        }
        result = replace(Redaction.pairPattern, in: result) {
            isSecret(Redaction.decoded($0))
        } value: { _ in
            Redaction.placeholder
        }
        result = replace(Redaction.memberPattern, in: result) {
            isSecret($0)
        } value: { value in
            value.hasPrefix("\"") ? "\"\(Redaction.placeholder)\"" : Redaction.placeholder
        }
        return result
    }

    /// A URL string with secret query values and a password hidden.
    func url(_ string: String) -> String {
        text(string)
    }

    /// Replaces the second group of each match whose first group passes `secret`.
    private func replace(
        _ pattern: NSRegularExpression, in text: String, secret: (String) -> Bool, value: (String) -> String
    ) -> String {
        let source = text as NSString
        let matches = pattern.matches(in: text, range: NSRange(location: 0, length: source.length))
        guard !matches.isEmpty else { return text }
        let result = NSMutableString(string: text)
        for match in matches.reversed() {
            let name = source.substring(with: match.range(at: 1))
            let range = match.range(at: 2)
            let old = source.substring(with: range)
            guard secret(name), old != "\"\(Redaction.placeholder)\"",
                !Redaction.placeholderStarts(at: range.location, in: source)
            else { continue }
            result.replaceCharacters(in: range, with: value(old))
        }
        return String(result)
    }

    /// Whether a value redacted already starts here: the value is the placeholder itself, or (text redacted twice)
    /// an empty match before it, since `<` ends a `name=value` value.
    private static func placeholderStarts(at location: Int, in source: NSString) -> Bool {
        let length = (placeholder as NSString).length
        guard location + length <= source.length else { return false }
        return source.substring(with: NSRange(location: location, length: length)) == placeholder
    }

    /// A query or form name with its percent-escapes undone (`access%5Ftoken`).
    private static func decoded(_ name: String) -> String {
        name.removingPercentEncoding ?? name
    }
}
