import Foundation

/// Hides secrets before anything is printed, by one rule for every kind of name: a header, a query item, a form
/// field, a parameter, a JSON member, an XML element or attribute (`MarkupRedaction`) or a multipart part is secret
/// when its name is secret by `SecretName`'s rule (with the words the user added): `X-Api-Key`, `apiKey`,
/// `access_token`, `clientSecret`, `PHPSESSID`, but not `author`, `keyboard` or `monkey`. Then, as a last pass over all the text printed, wherever it came from (an underlying
/// error's description, a body too long or too broken to parse), every `name=value` (quoted or not), `"name": value`
/// (in JSON text, or escaped in a JSON string; an object or array value whole), `Name: value` line, `name = value`,
/// `name => value`, `name%3Dvalue` and multipart part with a secret name, every password (or lone user) in a URL, and
/// every credential that says what it is (`Bearer …`, `Basic …`, a JSON Web Token, a key with a vendor's prefix, a
/// PEM private key), is hidden too.
struct Redaction: Sendable {
    static let placeholder = "<redacted>"

    /// The rule with the built-in words only (for `HTTPError.description`).
    static let standard = Redaction()

    /// How much of a body is read for redaction before it is cut to the printed length.
    static let scanLimit = 256 << 10

    /// The words the user added, lower-cased (each a word and an ending, as the built-in ones).
    private let added: [String]

    /// A rule with these words added to the built-in ones.
    init(adding words: some Sequence<String> = []) {
        added = words.flatMap { SecretName.words(of: $0) }
    }

    /// Whether a name is secret (see the type's comment).
    func isSecret(_ name: String) -> Bool {
        SecretName.isSecret(name, adding: added)
    }

    func headers(_ headers: HTTPHeaders) -> HTTPHeaders {
        var copy = headers
        for field in headers where isSecret(field.name) { copy[field.name] = Redaction.placeholder }
        return copy
    }

    /// Header fields as `Name: value` lines, a secret field's value hidden: in name order, or as they stand.
    func headerLines(_ headers: HTTPHeaders, sorted: Bool = true) -> [String] {
        self.headers(sorted ? headers.sortedByName : headers).map { "\($0.name): \($0.value)" }
    }

    /// Parameters as `name: value` lines in name order, a secret's value hidden (at any depth).
    func parameterLines(_ parameters: [String: any Sendable]) -> [String] {
        self.parameters(parameters).sorted { $0.key < $1.key }.map { "\($0.key): \($0.value)" }
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
            let members = parameterLines(dictionary)
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
            var copy = JSON.Object()
            for (key, value) in members {
                copy.updateValue(isSecret(key) ? .string(Redaction.placeholder) : self.json(value), forKey: key)
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
        // A limit below zero prints none of the body (cutting to it stopped the process).
        let limit = max(0, limit)
        let scanned = data.prefix(Redaction.scanLimit)
        guard let text = Redaction.utf8(scanned) else { return "(\(data.count) bytes of binary data)" }
        // Markup (XML, a plist; also inside a JSON string) by its own rule, then everything as text.
        let parsed = scanned.count == data.count ? try? JSON(data: data) : nil
        var redacted = self.text(MarkupRedaction.redact(parsed.map { self.json($0).description } ?? text, by: self))
        let cut = redacted.count > limit || scanned.count < data.count
        if redacted.count > limit { redacted = Redaction.prefix(redacted, limit) }
        return cut ? redacted + "… (\(data.count) bytes in all)" : redacted
    }

    /// The first `limit` characters of redacted text, or a few more so as not to end inside a placeholder: a value
    /// cut short there no longer reads as redacted, and the last pass over the banner would hide it again, with
    /// everything after it up to the next quote (the rest of the banner).
    private static func prefix(_ text: String, _ limit: Int) -> String {
        var end = text.index(text.startIndex, offsetBy: limit)
        if let start = text[..<end].lastIndex(of: "<"), text[start...].hasPrefix(placeholder) {
            end = max(end, text.index(start, offsetBy: placeholder.count))
        }
        return String(text[..<end])
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

    /// `name=value` (queries, form bodies, error descriptions, `NSError` user info): the value (group 2) runs to the
    /// next separator, or is quoted (`token="..."`, `key='...'`, an XML attribute's way), when it may hold anything
    /// but its quote. The value is read ahead, not taken, so that pairs inside it are read too (`error="bad token=..."`,
    /// `UserInfo={NSErrorFailingURLKey=https://...?token=...}`). An unquoted value read ahead stops at an `=` (else
    /// `a=a=a=...` would be read to its end from each `=`); a secret one is hidden up to the separator all the same.
    /// A name starts after a character that cannot be part of one, and nothing is given back once taken (possessive
    /// quantifiers), so that a long run of text is scanned once, not once per starting position.
    private static let pairPattern = try! NSRegularExpression(
        pattern: #"(?<![A-Za-z0-9_.\-\[\]%])([A-Za-z0-9_.\-\[\]%]++)=(?=("[^"]*+"?|'[^']*+'?|[^&\s"',;)<>=]*+))"#)
    /// `"name": value` (JSON, even cut short): a string value may lack its closing quote. A name's quote is never
    /// escaped (each escaped quote of a long string would otherwise start a scan to its end). A value that opens an
    /// object or array is not taken (an empty value before it), so that its members are read too; a secret one is
    /// hidden whole (see `extendBalanced`).
    private static let memberPattern = try! NSRegularExpression(
        pattern: #"(?<!\\)"((?:[^"\\]++|\\.)*+)"\s*+:\s*+("(?:[^"\\]++|\\.)*+"?|[^,}\]\s"{\[]++|(?=[{\[]))"#)
    /// `\"name\": value`: a JSON member inside a JSON string (a payload or error carried as text), at any depth of
    /// escaping (group 1, the backslashes before each quote). A string value ends at a quote escaped as its opening
    /// one is; a quote escaped more deeply is part of it. The value is read ahead, not taken, so that the members of
    /// JSON carried one level deeper inside it are read too (they were not: a `password` two levels down printed).
    /// An object or array value, as in `memberPattern`.
    private static let escapedMemberPattern = try! NSRegularExpression(
        pattern:
            #"(?<!\\)(\\++)"([^"\\]*+)\1"\s*+:\s*+(?=(\1"(?:[^"\\]++|\\++(?!")|(?!\1")\\++")*+(?:\1")?|[^,}\]\s\\"{\[]++|(?=[{\[])))"#
    )
    /// A multipart part with a name (`Content-Disposition: form-data; name="password"`): its content, after the
    /// blank line that ends the part's headers, up to the line of the next boundary.
    private static let partPattern = try! NSRegularExpression(
        pattern: #"\bname="([^"\r\n]*+)"[^\r\n]*+(?:\r?\n[^\r\n]++)*+\r?\n\r?\n((?:[^\r\n]++|\r(?!\n)|\r?\n(?!--))*+)"#)
    /// `scheme://user:password@` (group 3 is hidden), or `scheme://user@` (group 4: a user alone is as often a
    /// token, as in `https://TOKEN@host/`). The user information ends where the authority does (`/`, `?`, `#`).
    private static let userInfoPattern = try! NSRegularExpression(
        pattern: #"(?<![A-Za-z0-9+.\-])([A-Za-z][A-Za-z0-9+.\-]*+://)(?:([^/?#@\s:]*+):([^/?#@\s]*+)|([^/?#@\s:]++))@"#)

    /// `Name: value`, `name = value`, `name => value`, `'name': 'value'` (a header line, YAML, a Python or Ruby
    /// dictionary, as servers echo them in error bodies): a secret's value is hidden within its quotes, or unquoted
    /// to the end of its line. The value is read ahead, not taken, so that the names after it on its line are read
    /// too; an unquoted one is read no further than its start (its end is found for secrets alone), so that a long
    /// line is scanned once. `name=value` without blanks is `pairPattern`'s; a colon before `//` starts a URL's
    /// authority, not a value.
    private static let linePattern = try! NSRegularExpression(
        pattern:
            #"(?<![A-Za-z0-9_.\-])(["']?+)([A-Za-z][A-Za-z0-9_.\-]*+)\1(?:[ \t]*+(?::(?!//)|=>)|[ \t]++=|=(?=[ \t]))[ \t]*+(?=("[^"\r\n]*+"?|'[^'\r\n]*+'?|))"#
    )

    /// A credential after its scheme, wherever it stands (`Bearer eyJ…`, `Basic dXNl…` in an error message, with no
    /// name before it): group 1, at least 8 characters of RFC 9110's token68.
    private static let schemeCredentialPattern = try! NSRegularExpression(
        pattern: #"(?<![A-Za-z0-9_\-])(?i:bearer|basic)[ \t]++([A-Za-z0-9\-._~+/]{8,}+=*+)"#)
    /// A JSON Web Token wherever it stands: three base64url parts, the first two JSON objects (`eyJ`).
    private static let webTokenPattern = try! NSRegularExpression(
        pattern: #"(?<![A-Za-z0-9_\-])eyJ[A-Za-z0-9_\-]{4,}+\.eyJ[A-Za-z0-9_\-]{4,}+\.[A-Za-z0-9_\-]*+"#)
    /// Keys and tokens whose prefix says what they are, wherever they stand (a URL's path, an error echoing one):
    /// GitHub's (`ghp_`, `gho_`, `ghu_`, `ghs_`, `ghr_`, `github_pat_`), Slack's (`xoxb-`, `xoxp-`, ...), Stripe's
    /// secret and restricted keys (`sk_live_`, `rk_test_`, ...), Google's API keys (`AIza`), OpenAI's (`sk-`, 32
    /// characters or more after it) and private keys in PEM (`-----BEGIN ... PRIVATE KEY-----` to its end).
    private static let prefixedKeyPattern = try! NSRegularExpression(
        pattern:
            #"(?<![A-Za-z0-9_\-])(?:gh[pousr]_[A-Za-z0-9]{30,}+|github_pat_[A-Za-z0-9_]{30,}+|xox[abeoprs]-[A-Za-z0-9\-]{10,}+|[sr]k_(?:live|test)_[A-Za-z0-9]{16,}+|AIza[0-9A-Za-z_\-]{35}|sk-(?:proj-)?[A-Za-z0-9_\-]{32,}+)|-----BEGIN [A-Z ]*PRIVATE KEY-----(?:[^-]++|-(?!----END))*+(?:-----END [A-Z ]*PRIVATE KEY-----)?"#
    )
    /// `name%3Dvalue`: a pair encoded inside another URL's query (`?next=%2Fhome%3Ftoken%3D…`), whose value runs to
    /// the next `&` or `%26` (group 2, read ahead).
    private static let encodedPairPattern = try! NSRegularExpression(
        pattern:
            #"(?<![A-Za-z0-9_.\-])([A-Za-z0-9_.\-]++)%3[Dd](?=([^&\s"'<>%]*+(?:%(?!26|3[Dd])[0-9A-Fa-f]{2}[^&\s"'<>%]*+)*+))"#
    )

    /// Any text with secret-named values and URL credentials hidden.
    func text(_ text: String) -> String {
        var result = text
        result = replace(Redaction.userInfoPattern, in: result, values: [3, 4]) { _ in true }
        // Credentials that say what they are, with or without a name before them.
        result = replace(Redaction.schemeCredentialPattern, in: result, values: [1]) { _ in true }
        result = replace(Redaction.webTokenPattern, in: result, name: 0, values: [0]) { _ in true }
        result = replace(Redaction.prefixedKeyPattern, in: result, name: 0, values: [0]) { _ in true }
        // The passes below hide the values of secret names only: text without a secret word has none (unless a name
        // is percent-encoded, which the `name=value` pass decodes), and is not scanned for them.
        guard result.utf8.contains(UInt8(ascii: "%")) || SecretName.hasSecretWord(result, adding: added) else {
            return result
        }
        // JSON members first: they are read by their quotes, and hidden with their quotes escaped as they were. A
        // `name=value` pair inside a member's value is hidden to its separator, and took the backslashes that escape
        // the quote after it (`token=abc\\\"` in JSON inside a JSON string): read after that, the member's value
        // ended at that bare quote, and the rest of it was printed.
        result = replace(Redaction.memberPattern, in: result, extent: .balanced) { isSecret($0) }
        result = replace(Redaction.escapedMemberPattern, in: result, name: 2, values: [3], extent: .balanced) {
            isSecret($0)
        }
        result = replace(Redaction.pairPattern, in: result, extent: .toSeparator) { isSecret(Redaction.decoded($0)) }
        result = replace(Redaction.encodedPairPattern, in: result) { isSecret(Redaction.decoded($0)) }
        result = replace(Redaction.partPattern, in: result) { isSecret($0) }
        result = replace(Redaction.linePattern, in: result, name: 2, values: [3], extent: .toLineEnd) { isSecret($0) }
        return result
    }

    /// A URL's text with its credentials and secret query values hidden.
    func url(_ url: URL) -> String {
        self.url(url.absoluteString)
    }

    /// How far a hidden value reaches beyond its group.
    private enum Extent {
        /// The group alone.
        case group
        /// An unquoted value, up to the next separator of `name=value` pairs, past any `=` in it.
        case toSeparator
        /// An unquoted value, up to the end of its line.
        case toLineEnd
        /// An empty value before `{` or `[`: the object or array that starts there, whole (JSON, escaped as group 1
        /// of the match when the pattern has one before the name).
        case balanced
    }

    /// A URL string with secret query values and a password hidden.
    func url(_ string: String) -> String {
        text(string)
    }

    /// Hides the value (the first of the groups `values` that took part) of each match whose name (group `name`)
    /// passes `secret`. A quoted value keeps its quotes, escaped as they were (`"<redacted>"`, `\\"<redacted>\\"`).
    /// A value read ahead may hold the values of later matches: the outer one is hidden whole. How far an unquoted or
    /// empty value reaches is `extent`'s.
    private func replace(
        _ pattern: NSRegularExpression, in text: String, name: Int = 1, values: [Int] = [2], extent: Extent = .group,
        secret: (String) -> Bool
    ) -> String {
        let (toSeparator, toLineEnd, balanced) = (extent == .toSeparator, extent == .toLineEnd, extent == .balanced)
        let source = text as NSString
        let matches = pattern.matches(in: text, range: NSRange(location: 0, length: source.length))
        var hidden: [(range: NSRange, quote: String?)] = []
        for match in matches {
            guard var range = values.lazy.map({ match.range(at: $0) }).first(where: { $0.location != NSNotFound })
            else { continue }
            if let last = hidden.last, range.location < NSMaxRange(last.range) { continue }
            let old = source.substring(with: range)
            // The quote (with the backslashes that escape it) the value opens with, if any.
            let opening = old.prefix { $0 == "\\" }
            let quote = old.dropFirst(opening.count).first.flatMap { $0 == "\"" || $0 == "'" ? "\(opening)\($0)" : nil }
            guard secret(source.substring(with: match.range(at: name))),
                !old.dropFirst(quote?.count ?? 0).hasPrefix(Redaction.placeholder),
                !Redaction.placeholderStarts(at: range.location, in: source)
            else { continue }
            if toSeparator && quote == nil {
                extend(&range, in: source)
                // An authentication scheme (`authorization=Basic dXNl…`): the credential after its blank goes too
                // (hidden already when it looked like one: then with its placeholder).
                let next = NSMaxRange(range) + 1
                if Redaction.authSchemes.contains(source.substring(with: range).lowercased()), next < source.length,
                    source.character(at: next - 1) == 0x20
                {
                    if Redaction.placeholderStarts(at: next, in: source) {
                        range.length += 1 + (Redaction.placeholder as NSString).length
                    } else if !Redaction.separators.contains(source.character(at: next)) {
                        range.length += 1
                        extend(&range, in: source)
                    }
                }
            }
            if balanced && range.length == 0 {
                // A secret object or array: to its closing bracket, its quotes escaped as the name's are.
                let escapes = name > 1 ? match.range(at: 1).length : 0
                Redaction.extendBalanced(&range, in: source, escapes: escapes)
                if range.length == 0 { continue }
            }
            if toLineEnd && quote == nil {
                extend(&range, in: source, to: Redaction.lineEnds)
                // Nothing on the line after the name: nothing to hide.
                if range.length == 0 { continue }
            }
            hidden.append((range, quote))
        }
        guard !hidden.isEmpty else { return text }
        let result = NSMutableString(string: text)
        for (range, quote) in hidden.reversed() {
            result.replaceCharacters(
                in: range, with: quote.map { $0 + Redaction.placeholder + $0 } ?? Redaction.placeholder)
        }
        return String(result)
    }

    /// What ends a secret's unquoted `name=value` value when it is hidden (UTF-16): `&`, white space, `"`, `<`, `>`.
    /// Not `,` `;` `)` `'`, which a query or form value may hold as it is (`?password=a,b`, `token=a;b`): the value was
    /// hidden up to them and the rest of it printed. Text after a secret that only ends at one of them (`token=abc,`
    /// in prose, the closing `'` of a quoted argument) is hidden with it: more hidden than needed, never less.
    private static let separators: Set<unichar> = Set("&\"<> \t\r\n".utf16)
    private static let lineEnds: Set<unichar> = Set("\r\n".utf16)

    /// Authentication schemes whose credential follows a blank (in lower case).
    private static let authSchemes: Set<String> = [
        "basic", "bearer", "digest", "token", "negotiate", "ntlm", "oauth", "hawk", "jwt", "apikey", "ssws",
        "aws4-hmac-sha256",
    ]

    /// Extends a hidden value up to the next of `ends` (by default the separators of `name=value` pairs).
    private func extend(_ range: inout NSRange, in source: NSString, to ends: Set<unichar> = Redaction.separators) {
        while NSMaxRange(range) < source.length, !ends.contains(source.character(at: NSMaxRange(range))) {
            range.length += 1
        }
    }

    /// Extends an empty range before `{` or `[` over the JSON object or array that starts there, to its closing
    /// bracket, or to the end of the text when it has none (JSON cut short: more hidden than needed, never less).
    /// Brackets inside strings do not count. The strings' quotes are escaped by `escapes` backslashes (JSON inside a
    /// JSON string: 1, inside one more: 3, ...): a quote is one of them when the backslashes before it number
    /// `escapes` more than a multiple of `2 × (escapes + 1)` (more are the string's own escapes, escaped in turn).
    private static func extendBalanced(_ range: inout NSRange, in source: NSString, escapes: Int) {
        let start = range.location
        guard start < source.length, source.character(at: start) == 0x7B || source.character(at: start) == 0x5B
        else { return }
        let period = 2 * (escapes + 1)
        var depth = 0
        var inString = false
        var backslashes = 0
        var index = start
        while index < source.length {
            let character = source.character(at: index)
            index += 1
            if character == 0x5C {  // \
                backslashes += 1
                continue
            }
            defer { backslashes = 0 }
            if character == 0x22 {  // "
                if backslashes % period == escapes { inString.toggle() }
                continue
            }
            guard !inString else { continue }
            if character == 0x7B || character == 0x5B {  // { [
                depth += 1
            } else if character == 0x7D || character == 0x5D {  // } ]
                depth -= 1
                if depth == 0 { break }
            }
        }
        range.length = index - start
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
