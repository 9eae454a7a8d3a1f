import Foundation

extension CurlEngine.TLS {
    /// A host name as pins are looked up by: lower case, without a trailing dot (`API.Example.com.` is
    /// `api.example.com`).
    static func pinHost(_ host: String) -> String {
        var host = host.lowercased()
        while host.hasSuffix(".") { host.removeLast() }
        return host
    }

    /// The options with every pin checked and its host normalised (hosts that name the same one are merged).
    ///
    /// - Throws: `HTTPError` with code `.unsupported` for a pin that could never apply: a host that is empty or has
    ///   a scheme, a port, a path or a wildcard in it, a host without keys, or a key that is not `sha256//` and the
    ///   base-64 of 32 bytes.
    func validated() throws(HTTPError) -> CurlEngine.TLS {
        var pins: [String: [String]] = [:]
        for (name, keys) in pinnedPublicKeys {
            let host = Self.pinHost(name.trimmingCharacters(in: .whitespaces))
            func refuse(_ why: String) -> HTTPError {
                HTTPError(.unsupported, "CurlEngine: the pins for \"\(name)\" can never apply: \(why)")
            }
            if host.isEmpty { throw refuse("the host is empty") }
            if host.contains("/") || host.contains("@") || host.contains("*") || host.contains(where: \.isWhitespace) {
                throw refuse("give a host name alone, without a scheme, path or wildcard")
            }
            if let colon = host.lastIndex(of: ":"), !host.contains("::"), host.filter({ $0 == ":" }).count == 1,
                host[host.index(after: colon)...].allSatisfy(\.isNumber)
            {
                throw refuse("a pin applies to a host on every port; leave the port out")
            }
            if keys.isEmpty { throw refuse("no keys are given") }
            for key in keys where !Self.isPin(key) {
                throw refuse("\"\(key)\" is not sha256// followed by the base-64 SHA-256 of a public key")
            }
            pins[host, default: []] += keys
        }
        var copy = self
        copy.pinnedPublicKeys = pins
        return copy
    }

    private static func isPin(_ key: String) -> Bool {
        guard key.hasPrefix("sha256//") else { return false }
        return Data(base64Encoded: String(key.dropFirst("sha256//".count)))?.count == 32
    }
}
