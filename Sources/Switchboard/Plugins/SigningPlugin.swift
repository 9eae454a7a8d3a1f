import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Signs every request with HMAC-SHA256 over its method, path and query, a timestamp and the SHA-256 of its body,
/// after encoding, so the signature covers exactly the bytes sent.
///
/// ```swift
/// config.nodePlugins[.payment] = [SigningPlugin(key: Data(secret.utf8), keyID: "app-1")]
/// ```
///
/// The string signed is these four lines, joined by `\n`:
/// ```
/// POST
/// /v1/charges?currency=eur
/// 1767225600
/// 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08
/// ```
/// the method, the path with its query exactly as sent, the time in whole seconds since 1970, and the lower-case hex
/// SHA-256 of the body (of no bytes when there is none; a file is read to hash it, a stream body opened once more).
/// The request then carries `X-Signature-Time` with the time and `X-Signature` with `keyId=<keyID>,` (when there is
/// one) followed by `signature=<lower-case hex HMAC>`.
public struct SigningPlugin: Plugin {
    /// The shared secret.
    public var key: Data
    /// Names the key to the server, when it has several.
    public var keyID: String?
    /// The header that carries the signature. `X-Signature` by default.
    public var signatureHeader: String
    /// The header that carries the time signed. `X-Signature-Time` by default.
    public var timeHeader: String
    /// The time to sign; the current time by default.
    public var now: @Sendable () -> Date

    /// Creates a signing plugin.
    public init(
        key: Data, keyID: String? = nil, signatureHeader: String = "X-Signature",
        timeHeader: String = "X-Signature-Time", now: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.key = key
        self.keyID = keyID
        self.signatureHeader = signatureHeader
        self.timeHeader = timeHeader
        self.now = now
    }

    /// The string that is signed for these parts (see the type's description).
    public static func canonicalString(method: String, target: String, time: Int, bodySHA256: String) -> String {
        [method, target, String(time), bodySHA256].joined(separator: "\n")
    }

    public func adapt(_ request: inout EngineRequest, for original: Request) async throws {
        guard let url = request.url else { return }
        let time = Int(now().timeIntervalSince1970)
        let string = Self.canonicalString(
            method: request.method.rawValue, target: Self.target(of: url), time: time,
            bodySHA256: try Self.bodyHash(request.body))
        let code = SHA256Hasher.lowercaseHex(SHA256Hasher.hmac(key: key, message: Data(string.utf8)))
        request.headers[timeHeader] = String(time)
        request.headers[signatureHeader] = (keyID.map { "keyId=\($0)," } ?? "") + "signature=" + code
    }

    /// The path and query as they go on the request line, percent-encoding kept.
    static func target(of url: URL) -> String {
        let components = URLComponents(url: url, resolvingAgainstBaseURL: true)
        let path = components?.percentEncodedPath ?? url.path
        let query = components?.percentEncodedQuery.map { "?" + $0 } ?? ""
        return (path.isEmpty ? "/" : path) + query
    }

    private static func bodyHash(_ body: EngineRequest.Body) throws -> String {
        switch body {
        case .none:
            return SHA256Hasher.hex(Data())
        case .data(let data):
            return SHA256Hasher.hex(data)
        case .file(let url):
            do {
                return try SHA256Hasher.hex(ofFile: url)
            } catch {
                throw HTTPError(.fileSystem, "the body file could not be read to sign it: \(error)", underlying: error)
            }
        case .stream(let stream):
            let input = try stream.open()
            input.open()
            defer { input.close() }
            var hasher = SHA256Hasher()
            var buffer = [UInt8](repeating: 0, count: 64 << 10)
            while true {
                let count = input.read(&buffer, maxLength: buffer.count)
                if count < 0 {
                    throw HTTPError(
                        .encoding, "the body stream could not be read to sign it",
                        underlying: input.streamError)
                }
                if count == 0 { break }
                buffer.withUnsafeBytes { hasher.update(UnsafeRawBufferPointer(rebasing: $0.prefix(count))) }
            }
            return hasher.hexDigest()
        }
    }
}
