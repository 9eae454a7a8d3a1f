import Foundation

extension TrustPolicy {
    /// Whether a chain's certificates (DER, the server's first) satisfy the pins: each kind that has pins must match
    /// one.
    func pinsMatch(chain: [Data]) -> Bool {
        certificatePinsMatch(chain: chain) && publicKeyPinsMatch(chain: chain)
    }

    /// Whether some certificate of the chain is pinned, or there are no certificate pins.
    func certificatePinsMatch(chain: [Data]) -> Bool {
        guard !certificatePins.isEmpty else { return true }
        let digests = Set(chain.map { "sha256//" + Data(SHA256Hasher.digest($0)).base64EncodedString() })
        return certificatePins.contains(where: digests.contains)
    }

    /// Whether the server's own key (the chain's first certificate's) is pinned, or there are no public-key pins.
    func publicKeyPinsMatch(chain: [Data]) -> Bool {
        guard !publicKeyPins.isEmpty else { return true }
        guard let leaf = chain.first, let key = DERCertificate.publicKeyInfo(of: leaf) else { return false }
        return publicKeyPins.contains("sha256//" + Data(SHA256Hasher.digest(key)).base64EncodedString())
    }
}

/// The little of X.509 trust needs without a TLS library: certificates out of PEM text, and a certificate's public
/// key out of its DER form.
enum DERCertificate {
    /// The DER bytes of each `CERTIFICATE` block in PEM text, in order.
    static func fromPEM(_ text: String) -> [Data] {
        var found: [Data] = []
        var body: String?
        for line in text.split(whereSeparator: \.isNewline) {
            let line = line.trimmingCharacters(in: .whitespaces)
            if line == "-----BEGIN CERTIFICATE-----" {
                body = ""
            } else if line == "-----END CERTIFICATE-----" {
                if let text = body, let der = Data(base64Encoded: text) { found.append(der) }
                body = nil
            } else if body != nil {
                body! += line
            }
        }
        return found
    }

    /// The DER `SubjectPublicKeyInfo` of a DER certificate (what a public-key pin hashes), or `nil` when the bytes
    /// are not a certificate.
    static func publicKeyInfo(of certificate: Data) -> Data? {
        let bytes = [UInt8](certificate)
        // Certificate ::= SEQUENCE { tbsCertificate SEQUENCE { [0] version OPTIONAL, serialNumber, signature,
        // issuer, validity, subject, subjectPublicKeyInfo, ... }, ... }
        guard let outer = element(bytes, at: 0), bytes[0] == 0x30,
            let tbs = element(bytes, at: outer.contentStart), bytes[outer.contentStart] == 0x30
        else { return nil }
        var position = tbs.contentStart
        if position < bytes.count, bytes[position] == 0xA0 {
            guard let version = element(bytes, at: position) else { return nil }
            position = version.end
        }
        // serialNumber, signature, issuer, validity, subject.
        for _ in 0..<5 {
            guard position < tbs.end, let skipped = element(bytes, at: position) else { return nil }
            position = skipped.end
        }
        guard position < tbs.end, bytes[position] == 0x30, let key = element(bytes, at: position), key.end <= tbs.end
        else { return nil }
        return Data(bytes[position..<key.end])
    }

    /// The DER element (tag, length, content) at `start`: where its content starts and where it ends.
    private static func element(_ bytes: [UInt8], at start: Int) -> (contentStart: Int, end: Int)? {
        guard start + 1 < bytes.count else { return nil }
        let first = bytes[start + 1]
        var length = Int(first)
        var contentStart = start + 2
        if first & 0x80 != 0 {
            let count = Int(first & 0x7F)
            guard (1...4).contains(count), start + 2 + count <= bytes.count else { return nil }
            length = bytes[(start + 2)..<(start + 2 + count)].reduce(0) { $0 << 8 | Int($1) }
            contentStart += count
        }
        let end = contentStart + length
        return end <= bytes.count ? (contentStart, end) : nil
    }
}
