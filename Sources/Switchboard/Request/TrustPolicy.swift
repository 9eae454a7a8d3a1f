import Foundation

/// What TLS trusts for a host, and what it presents: set per host pattern on a center
/// (`CenterConfiguration.trustPolicies`). A host without one gets the system's trust, with no pins and no client
/// certificate.
///
/// ```swift
/// center.setup { config in
///     config.trustPolicies["api.example.com"] = TrustPolicy(
///         publicKeyPins: ["sha256//r8udi/Mxd6pLOS73vTjZ6ReJfE+Q3Ad9EN7pL1Rl9Jw="])
///     config.trustPolicies["*.internal.example.com"] = TrustPolicy(
///         roots: .replacing(URL(fileURLWithPath: "/etc/app/internal-ca.pem")),
///         clientIdentity: .pkcs12(URL(fileURLWithPath: "/etc/app/client.p12"), password: "secret"))
/// }
/// ```
///
/// A pin is `sha256//` followed by the base-64 SHA-256 of what it pins, as libcurl and `openssl dgst` write it. A
/// public-key pin names the server's own key (its DER `SubjectPublicKeyInfo`); a certificate pin names any certificate
/// of the chain the server presents (its DER form), so an intermediate authority can be pinned. With pins of both
/// kinds, one of each kind must match. Pins are checked after the chain is trusted and before the request is sent.
///
/// CurlEngine applies all of it; URLSessionEngine applies it on Apple platforms through the session delegate, and
/// on Linux, where URLSession cannot evaluate trust, fails a request whose host has a policy with
/// `HTTPError.Code.unsupported`, naming it. A chain that is not trusted fails with `.serverTrust`, a pin that
/// matches nothing with `.pinning`, a client certificate the server refuses (or one that cannot be read) with
/// `.clientCertificate`.
public struct TrustPolicy: Sendable, Hashable, CustomStringConvertible {
    /// The certificate authorities a server's chain must lead to.
    public enum Roots: Sendable, Hashable {
        /// The system's authorities.
        case system
        /// The system's authorities and those in a PEM file (a private CA beside the public ones).
        case adding(URL)
        /// Only the authorities in a PEM file.
        case replacing(URL)
    }

    /// A certificate and private key the client presents when the server asks for one (mutual TLS).
    public enum ClientIdentity: Sendable, Hashable, CustomStringConvertible, CustomReflectable {
        /// A PEM certificate (with any intermediates after it) and its unencrypted PEM private key. CurlEngine only:
        /// on Apple platforms an identity is made from PKCS#12.
        case pem(certificate: URL, key: URL)
        /// A PKCS#12 file holding the certificate and its key, and its password.
        case pkcs12(URL, password: String)

        /// The files, never the password.
        public var description: String {
            switch self {
            case .pem(let certificate, let key): "PEM \(certificate.path) with key \(key.path)"
            case .pkcs12(let file, _): "PKCS#12 \(file.path)"
            }
        }

        /// The files, never the password (for `dump`).
        public var customMirror: Mirror {
            switch self {
            case .pem(let certificate, let key): Mirror(self, children: ["certificate": certificate, "key": key])
            case .pkcs12(let file, _): Mirror(self, children: ["file": file])
            }
        }
    }

    /// Which authorities a chain must lead to.
    public var roots: Roots
    /// Public-key pins (`sha256//` and the base-64 SHA-256 of the DER `SubjectPublicKeyInfo`): the server's key must
    /// be one of them. Empty: no public-key pinning.
    public var publicKeyPins: [String]
    /// Certificate pins (`sha256//` and the base-64 SHA-256 of the DER certificate): some certificate of the chain
    /// the server presents must be one of them. Empty: no certificate pinning. On CurlEngine each request to a host
    /// with certificate pins opens a connection of its own (the chain is read at its handshake); public-key pins
    /// keep connections shared.
    public var certificatePins: [String]
    /// What the client presents when the server asks for a certificate, or `nil` for nothing.
    public var clientIdentity: ClientIdentity?
    /// Whether the server's chain and name are checked at all: `true` unless the policy is `.evaluationDisabled`,
    /// which a center accepts only for a host named in full, never for a pattern.
    public private(set) var evaluatesServerTrust: Bool

    /// A policy; the defaults are the system's trust, no pins, no client certificate.
    public init(
        roots: Roots = .system, publicKeyPins: [String] = [], certificatePins: [String] = [],
        clientIdentity: ClientIdentity? = nil
    ) {
        self.roots = roots
        self.publicKeyPins = publicKeyPins
        self.certificatePins = certificatePins
        self.clientIdentity = clientIdentity
        evaluatesServerTrust = true
    }

    /// The system's trust: what a host without a policy gets.
    public static let system = TrustPolicy()

    /// No check of the server's chain or name at all (pins, when given, still apply): for a development server
    /// named in full, never a pattern. Anyone between the client and that host can read and change the traffic.
    public static var evaluationDisabled: TrustPolicy {
        var policy = TrustPolicy()
        policy.evaluatesServerTrust = false
        return policy
    }

    /// What the policy asks for, in a few words (the password of a client identity never appears).
    public var description: String {
        var parts: [String] = []
        if !evaluatesServerTrust { parts.append("evaluation disabled") }
        switch roots {
        case .system: break
        case .adding(let file): parts.append("adding the roots in \(file.path)")
        case .replacing(let file): parts.append("only the roots in \(file.path)")
        }
        if !publicKeyPins.isEmpty { parts.append("\(publicKeyPins.count) public-key pin(s)") }
        if !certificatePins.isEmpty { parts.append("\(certificatePins.count) certificate pin(s)") }
        if let clientIdentity { parts.append("client identity \(clientIdentity)") }
        return parts.isEmpty ? "system trust" : parts.joined(separator: ", ")
    }
}

/// A center's trust policies, by host pattern, checked once and looked up per host: an exact name, then the longest
/// `*.suffix` that ends it, then `*`.
final class TrustTable: Sendable {
    private let exact: [String: TrustPolicy]
    /// `(".example.com", policy)` for `*.example.com`, longest first.
    private let suffixes: [(String, TrustPolicy)]
    private let any: TrustPolicy?
    /// Why the table cannot be used, for every request of its center.
    let failure: HTTPError?

    /// The table, or `nil` when every entry is the system's trust (nothing to apply).
    static func make(_ policies: [String: TrustPolicy]) -> TrustTable? {
        policies.values.allSatisfy { $0 == .system } ? nil : TrustTable(policies)
    }

    private init(_ policies: [String: TrustPolicy]) {
        var exact: [String: TrustPolicy] = [:]
        var suffixes: [(String, TrustPolicy)] = []
        var any: TrustPolicy?
        var failure: HTTPError?
        for (pattern, policy) in policies.sorted(by: { $0.key < $1.key }) {
            do throws(HTTPError) {
                try Self.check(policy, pattern: pattern)
                let host = Self.normalized(pattern)
                if host == "*" {
                    any = policy
                } else if host.hasPrefix("*.") {
                    suffixes.append((String(host.dropFirst()), policy))
                } else {
                    exact[host] = policy
                }
            } catch {
                failure = failure ?? error
            }
        }
        self.exact = exact
        self.suffixes = suffixes.sorted { $0.0.count > $1.0.count }
        self.any = any
        self.failure = failure
    }

    /// The policy for an `https` URL's host, or `nil` for the system's trust (and for a plain `http` URL, which has
    /// no TLS to apply one to).
    func policy(for url: URL?) -> TrustPolicy? {
        guard let url, url.scheme?.lowercased() == "https", let host = url.host else { return nil }
        return policy(forHost: host)
    }

    /// The policy for a host (as a URL gives it: an IPv6 address in brackets or not), or `nil` for the system's trust.
    func policy(forHost host: String) -> TrustPolicy? {
        let host = Self.normalized(host)
        if let policy = exact[host] { return policy == .system ? nil : policy }
        let found = suffixes.first { host.hasSuffix($0.0) && host.count > $0.0.count }?.1 ?? any
        return found == .system ? nil : found
    }

    /// A host name as patterns are compared: lower case, without brackets or a trailing dot.
    static func normalized(_ host: String) -> String {
        var host = host.trimmingCharacters(in: .whitespaces).lowercased()
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        while host.hasSuffix(".") { host.removeLast() }
        return host
    }

    /// Throws `.unsupported` for an entry that could never apply as written.
    private static func check(_ policy: TrustPolicy, pattern: String) throws(HTTPError) {
        func refuse(_ why: String) -> HTTPError {
            HTTPError(.unsupported, "the trust policy for \"\(pattern)\" can never apply: \(why)")
        }
        let host = normalized(pattern)
        if host.isEmpty { throw refuse("the host is empty") }
        if host == "*", pattern.trimmingCharacters(in: .whitespaces) != "*" { throw refuse("\"*.\" needs a domain") }
        let wildcard = host == "*" || host.hasPrefix("*.")
        if host.contains("/") || host.contains("@") || host.contains("[") || host.contains("]")
            || host.contains(where: \.isWhitespace)
            || host.dropFirst(wildcard ? 1 : 0).contains("*")
        {
            throw refuse("give a host name, \"*.\" and a domain, or \"*\", without a scheme, path or other wildcard")
        }
        if !host.contains("::"), host.filter({ $0 == ":" }).count == 1 {
            throw refuse("a policy applies to a host on every port; leave the port out")
        }
        if wildcard, !policy.evaluatesServerTrust {
            throw refuse("evaluation can be turned off only for a host named in full, not a pattern")
        }
        for pin in policy.publicKeyPins + policy.certificatePins where !isPin(pin) {
            throw refuse("\"\(pin)\" is not sha256// followed by the base-64 of a SHA-256 digest")
        }
    }

    private static func isPin(_ pin: String) -> Bool {
        guard pin.hasPrefix("sha256//") else { return false }
        return Data(base64Encoded: String(pin.dropFirst("sha256//".count)))?.count == 32
    }
}
