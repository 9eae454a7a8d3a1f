/// Whether a name (a header field, a query item, a parameter, a JSON member, a form part) names a secret: one rule
/// for the console log's redaction, the fields and parameters that stay with the center's origins, and the cache's
/// keys.
///
/// A name is secret when one of its words (see `words(of:)`) is one of `words`, or ends with one of `endings`, in any
/// case: `X-Api-Key`, `apiKey`, `access_token`, `clientSecret`, `PHPSESSID`, but not `author`, `keyboard` or
/// `monkey`. The CORS fields (`Access-Control-…`) name fields and flags, never a secret.
enum SecretName {
    /// Words that make a name secret when they are words of it: a credential, a key, a session, a signature, a
    /// cookie, a PIN, a one-time code, a card's number or security code, a social security number, a pass phrase, a
    /// signature in a query (`sig`, as Azure's shared access signatures name it), a JSON Web Token.
    static let words: Set<String> = [
        "token", "tokens", "secret", "secrets", "key", "keys", "apikey", "password", "passwords", "passwd", "pwd",
        "pass", "passcode", "passphrase", "session", "sessionid", "sessid", "auth", "authorization", "signature",
        "sig", "cookie", "cookies", "credential", "credentials", "csrf", "xsrf", "bearer", "pin", "otp", "totp",
        "hotp", "cvv", "cvc", "cvv2", "cvc2", "ssn", "jwt", "card", "iban",
    ]

    /// Endings that make a word secret when it is longer than them, for names written as one word: `accesstoken`,
    /// `clientsecret`, `newpassword`, `xapikey`, `phpsessid`.
    static let endings = [
        "token", "secret", "password", "passwd", "apikey", "sessid", "sessionid", "signature", "cookie", "credential",
    ]

    /// Whether a name is secret; `added`: more words (lower-cased), each a word and an ending as the built-in ones.
    static func isSecret(_ name: String, adding added: [String] = []) -> Bool {
        !String(name.prefix(15)).equalsIgnoringASCIICase("Access-Control-") && hasSecretWord(name, adding: added)
    }

    /// Whether one of the words of a text is secret (or ends as a secret one does).
    static func hasSecretWord(_ text: String, adding added: [String] = []) -> Bool {
        words(of: text).contains { word in
            words.contains(word) || added.contains(word)
                || endings.contains { word.count > $0.count && word.hasSuffix($0) }
                || added.contains { word.count > $0.count && word.hasSuffix($0) }
        }
    }

    /// The words of a name, in lower case: split where a byte is not an ASCII letter or digit (`user_pin`, `X-OTP`),
    /// where a lower-case letter or a digit meets an upper-case one (`cardNumber`), and before the last of a run of
    /// upper-case letters that a lower-case one follows (`OTPCode`). A letter outside ASCII whose lower case is an
    /// ASCII letter (the Kelvin sign) counts as that letter; any other byte outside ASCII separates words (so a
    /// combining mark after `token` leaves the word `token`).
    static func words(of name: String) -> [String] {
        var name = name.utf8.allSatisfy({ $0 < 0x80 }) ? name : asciiFolded(name)
        return name.withUTF8 { bytes in
            func isUpper(_ byte: UInt8) -> Bool { byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z") }
            func isLower(_ byte: UInt8) -> Bool { byte >= UInt8(ascii: "a") && byte <= UInt8(ascii: "z") }
            func isDigit(_ byte: UInt8) -> Bool { byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") }
            var words: [String] = []
            // A word in lower case, in a string of its own (a short one needs no allocation).
            func add(_ start: Int, _ end: Int) {
                guard end > start else { return }
                words.append(
                    String(unsafeUninitializedCapacity: end - start) { buffer in
                        for offset in start..<end {
                            buffer[offset - start] = isUpper(bytes[offset]) ? bytes[offset] | 0x20 : bytes[offset]
                        }
                        return end - start
                    })
            }
            var start = 0
            for index in bytes.indices {
                let byte = bytes[index]
                guard isUpper(byte) || isLower(byte) || isDigit(byte) else {
                    add(start, index)
                    start = index + 1
                    continue
                }
                guard index > start, isUpper(byte) else { continue }
                let previous = bytes[index - 1]
                let nextIsLower = index + 1 < bytes.count && isLower(bytes[index + 1])
                if isLower(previous) || isDigit(previous) || (isUpper(previous) && nextIsLower) {
                    add(start, index)
                    start = index
                }
            }
            add(start, bytes.count)
            return words
        }
    }

    /// A name with each letter outside ASCII whose lower case is one ASCII letter written as that letter (in upper
    /// case, as it was a capital: the Kelvin sign is `K`).
    private static func asciiFolded(_ name: String) -> String {
        var scalars = String.UnicodeScalarView()
        for scalar in name.unicodeScalars {
            let lower = scalar.properties.lowercaseMapping.unicodeScalars
            if !scalar.isASCII, lower.count == 1, let only = lower.first, only.isASCII,
                only.properties.isLowercase
            {
                scalars.append(Unicode.Scalar(UInt8(only.value) & ~0x20))
            } else {
                scalars.append(scalar)
            }
        }
        return String(scalars)
    }
}
