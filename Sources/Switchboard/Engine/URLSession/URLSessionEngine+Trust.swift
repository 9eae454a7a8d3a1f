#if canImport(Security)
import Foundation
import Security

extension SessionDelegate {
    /// Answers a server-trust or client-certificate challenge by the trust policy of the challenge's host (a
    /// redirect's hop has its own), and says so; any other challenge is left to the caller.
    func answeredTrust(
        _ challenge: URLAuthenticationChallenge, for transfer: SessionTransfer?,
        completionHandler: @escaping @Sendable (URLSession.AuthChallengeDisposition, URLCredential?) -> Void
    ) -> Bool {
        let policy = transfer?.trust?.policy(forHost: challenge.protectionSpace.host)
        guard let answer = TrustChallenge.answer(challenge, policy: policy) else { return false }
        if let failure = answer.failure { transfer?.recordFailure(failure) }
        completionHandler(answer.disposition, answer.credential)
        return true
    }
}

/// How URLSessionEngine answers the TLS challenges of a host with a trust policy, on Apple platforms (URLSession on
/// Linux asks its delegate neither; see `URLSessionEngine.trustRefusal`). Written from the Security framework's
/// documented API; it cannot be built where the tests run.
enum TrustChallenge {
    struct Answer {
        var disposition: URLSession.AuthChallengeDisposition
        var credential: URLCredential?
        /// What the request fails with when the challenge is cancelled for it.
        var failure: HTTPError?

        static func refuse(_ failure: HTTPError) -> Answer {
            Answer(disposition: .cancelAuthenticationChallenge, credential: nil, failure: failure)
        }
    }

    /// The answer to a server-trust or client-certificate challenge under `policy` (`nil`: the system's trust), or
    /// `nil` for any other kind of challenge.
    static func answer(_ challenge: URLAuthenticationChallenge, policy: TrustPolicy?) -> Answer? {
        let space = challenge.protectionSpace
        switch space.authenticationMethod {
        case NSURLAuthenticationMethodServerTrust:
            guard let policy else { return Answer(disposition: .performDefaultHandling, credential: nil) }
            guard let trust = space.serverTrust else {
                return .refuse(HTTPError(.serverTrust, "\(space.host) presented no certificate to evaluate"))
            }
            return evaluate(trust, host: space.host, policy: policy)
        case NSURLAuthenticationMethodClientCertificate:
            guard let identity = policy?.clientIdentity else {
                return Answer(disposition: .performDefaultHandling, credential: nil)
            }
            return present(identity)
        default:
            return nil
        }
    }

    private static func evaluate(_ trust: SecTrust, host: String, policy: TrustPolicy) -> Answer {
        if policy.evaluatesServerTrust {
            SecTrustSetPolicies(trust, SecPolicyCreateSSL(true, host as CFString))
            switch policy.roots {
            case .system: break
            case .adding(let file), .replacing(let file):
                let text = (try? String(contentsOf: file, encoding: .utf8)) ?? ""
                let anchors = DERCertificate.fromPEM(text).compactMap {
                    SecCertificateCreateWithData(nil, $0 as CFData)
                }
                guard !anchors.isEmpty else {
                    return .refuse(HTTPError(.serverTrust, "no certificate authority could be read from \(file.path)"))
                }
                SecTrustSetAnchorCertificates(trust, anchors as CFArray)
                SecTrustSetAnchorCertificatesOnly(trust, policy.roots == .replacing(file))
            }
            var error: CFError?
            guard SecTrustEvaluateWithError(trust, &error) else {
                let detail = error.map { ($0 as any Error).localizedDescription } ?? "no reason given"
                return .refuse(HTTPError(.serverTrust, "the server's certificate is not trusted: \(detail)"))
            }
        }
        let certificates = (SecTrustCopyCertificateChain(trust) as? [SecCertificate]) ?? []
        guard policy.pinsMatch(chain: certificates.map { SecCertificateCopyData($0) as Data }) else {
            return .refuse(HTTPError(.pinning, "the certificates \(host) presented match none of its pins"))
        }
        return Answer(disposition: .useCredential, credential: URLCredential(trust: trust))
    }

    private static func present(_ identity: TrustPolicy.ClientIdentity) -> Answer {
        guard case .pkcs12(let file, let password) = identity else {
            return .refuse(
                HTTPError(
                    .unsupported,
                    "URLSessionEngine makes a client identity from PKCS#12 only on Apple platforms (\(identity))"))
        }
        var items: CFArray?
        let options = [kSecImportExportPassphrase as String: password] as CFDictionary
        guard let data = try? Data(contentsOf: file), SecPKCS12Import(data as CFData, options, &items) == errSecSuccess,
            let first = (items as? [[String: Any]])?.first, let found = first[kSecImportItemIdentity as String]
        else {
            return .refuse(HTTPError(.clientCertificate, "the client identity \(identity) could not be read"))
        }
        // Safety of the cast: the item under kSecImportItemIdentity is a SecIdentity, as the documentation says.
        let chain = (first[kSecImportItemCertChain as String] as? [SecCertificate]) ?? []
        return Answer(
            disposition: .useCredential,
            credential: URLCredential(
                identity: found as! SecIdentity, certificates: Array(chain.dropFirst()), persistence: .forSession))
    }
}
#endif
