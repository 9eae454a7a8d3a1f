import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The one error type of Switchboard: what went wrong, with which request, and what came back if anything did.
///
/// The `code` says what kind of failure it was and is extensible: new codes can be added without breaking a `switch`
/// that has a `default`. The description is one line that names the code, the method and the URL:
///
/// ```
/// HTTPError.unacceptableStatus (404) GET https://api.example.com/v1/users/9
/// ```
public struct HTTPError: Error, Sendable, CustomStringConvertible, CustomDebugStringConvertible {
    /// What kind of failure happened.
    public struct Code: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        /// The code's name.
        public let rawValue: String

        /// Creates a code; use the constants unless you are adding a code of your own.
        public init(rawValue: String) {
            self.rawValue = rawValue
        }

        /// The code's name.
        public var description: String { rawValue }

        /// The URL could not be formed: none given, or the string does not parse as an HTTP(S) URL.
        public static let invalidURL = Code(rawValue: "invalidURL")
        /// The request could not be encoded: a parameter, header, method or body that cannot be sent.
        public static let encoding = Code(rawValue: "encoding")
        /// The `onRequest` hook refused to send the request.
        public static let vetoed = Code(rawValue: "vetoed")
        /// No connection could be made: refused, host not found, offline.
        public static let cannotConnect = Code(rawValue: "cannotConnect")
        /// The transfer failed after it started: connection lost, malformed response, too many redirects, and so on.
        public static let transport = Code(rawValue: "transport")
        /// The credential was refused and could not be refreshed (see `Authenticator`).
        public static let authentication = Code(rawValue: "authentication")
        /// The request did not finish within its timeout.
        public static let timedOut = Code(rawValue: "timedOut")
        /// The request was cancelled, by identifier or by cancelling its Swift task.
        public static let cancelled = Code(rawValue: "cancelled")
        /// The server answered with a status code outside the acceptable range.
        public static let unacceptableStatus = Code(rawValue: "unacceptableStatus")
        /// The response body could not be decoded as the response serializer or `decode(_:)` expected.
        public static let decoding = Code(rawValue: "decoding")
        /// The response was well-formed but the application rejected it (thrown by `onResponse`).
        public static let business = Code(rawValue: "business")
        /// The server's TLS certificate is not trusted (not signed by a trusted authority, expired, wrong host).
        public static let serverTrust = Code(rawValue: "serverTrust")
        /// The server's chain matches none of the pins of its host's trust policy (see `TrustPolicy`).
        public static let pinning = Code(rawValue: "pinning")
        /// The server refused the client's certificate, or asked for one and got none; or the client identity of
        /// the host's trust policy could not be read (see `TrustPolicy.ClientIdentity`).
        public static let clientCertificate = Code(rawValue: "clientCertificate")
        /// The engine is not usable here (a missing system library, an unsupported option).
        public static let unsupported = Code(rawValue: "unsupported")
        /// A member of a batch or chain was never sent: a chain step declined, an earlier step failed, or the group
        /// stopped first.
        public static let notSent = Code(rawValue: "notSent")
        /// A request with `CachePolicy.cacheOnly` found nothing in the cache.
        public static let cacheMiss = Code(rawValue: "cacheMiss")
        /// A local file could not be read or written: a missing upload file, a destination that cannot be written,
        /// a download that does not match its length or checksum.
        public static let fileSystem = Code(rawValue: "fileSystem")
        /// A batch or chain that cannot run: a batch without members, a chain without its first step.
        public static let invalidGroup = Code(rawValue: "invalidGroup")
        /// A redirect from `https` to plain `http` was refused (see `CenterConfiguration.allowsInsecureRedirects`).
        public static let insecureRedirect = Code(rawValue: "insecureRedirect")
        /// `retry` found nothing to run again: the work is still running, succeeded, or is unknown to the center.
        public static let notRetryable = Code(rawValue: "notRetryable")
        /// A stream's consumer fell further behind than its buffer (`Request.streamBufferSize`) allows, on an engine
        /// that cannot pause a transfer (URLSessionEngine); CurlEngine pauses instead.
        public static let streamOverflow = Code(rawValue: "streamOverflow")
        /// The response body is longer than the request allows (`Request.maxResponseBytes`).
        public static let responseTooLarge = Code(rawValue: "responseTooLarge")

        /// Every code Switchboard itself gives.
        static let builtIn: Set<Code> = [
            .invalidURL, .encoding, .vetoed, .cannotConnect, .transport, .authentication, .timedOut, .cancelled,
            .unacceptableStatus, .decoding, .business, .serverTrust, .pinning, .clientCertificate, .unsupported,
            .notSent, .cacheMiss,
            .fileSystem, .invalidGroup, .insecureRedirect, .notRetryable, .streamOverflow, .responseTooLarge,
        ]
    }

    /// The fields, in a box of their own: an error is one reference wide. Every `throws(HTTPError)` call site in an
    /// `async` function keeps room for a thrown error in the function's frame, and the frames of the request
    /// pipeline are allocated for every request; seven fields inline made them several kilobytes each.
    private struct Fields {
        var code: Code
        var message: String
        var request: Request?
        var response: Response?
        var underlying: (any Error)?
        var serverCode: JSON?
        var memberResults: [Result<Response, HTTPError>]?
    }

    private var storage: CopyOnWrite<Fields>

    /// What kind of failure happened.
    public var code: Code {
        get { storage.value.code }
        set { storage.unique().value.code = newValue }
        _modify { yield &storage.unique().value.code }
    }
    /// A short explanation in plain words.
    public var message: String {
        get { storage.value.message }
        set { storage.unique().value.message = newValue }
        _modify { yield &storage.unique().value.message }
    }
    /// The request as it was sent (after merging with the configuration and the `onRequest` hook), if it got that far.
    public var request: Request? {
        get { storage.value.request }
        set { storage.unique().value.request = newValue }
        _modify { yield &storage.unique().value.request }
    }
    /// The response, if the server answered; its body is kept (an error page, a business error envelope).
    public var response: Response? {
        get { storage.value.response }
        set { storage.unique().value.response = newValue }
        _modify { yield &storage.unique().value.response }
    }
    /// The error that caused this one (a `URLError`, a `DecodingError`, an error thrown by a hook), if any.
    public var underlying: (any Error)? {
        get { storage.value.underlying }
        set { storage.unique().value.underlying = newValue }
        _modify { yield &storage.unique().value.underlying }
    }
    /// For a `.business` error from an envelope: the code the server sent.
    public var serverCode: JSON? {
        get { storage.value.serverCode }
        set { storage.unique().value.serverCode = newValue }
        _modify { yield &storage.unique().value.serverCode }
    }
    /// For a failed batch or chain: every member's outcome, in member order.
    public var memberResults: [Result<Response, HTTPError>]? {
        get { storage.value.memberResults }
        set { storage.unique().value.memberResults = newValue }
        _modify { yield &storage.unique().value.memberResults }
    }

    /// Creates an error.
    public init(
        _ code: Code,
        _ message: String,
        request: Request? = nil,
        response: Response? = nil,
        underlying: (any Error)? = nil
    ) {
        storage = CopyOnWrite(
            Fields(
                code: code, message: message, request: request, response: response, underlying: underlying,
                serverCode: nil, memberResults: nil))
    }

    /// The HTTP status of the response, if there was one.
    public var status: Int? { response?.status }

    /// One line: code, status if any, method and URL, then the message, with secrets hidden as the console log
    /// hides them (a password in the URL, secret query items, secret values in the message).
    ///
    /// ```
    /// HTTPError.timedOut GET http://127.0.0.1:8080/delay/5: no response within 1.0 s
    /// ```
    public var description: String {
        var line = "HTTPError.\(code)"
        if let status { line += " (\(status))" }
        if let target { line += " \(target)" }
        if !message.isEmpty { line += ": \(message)" }
        return Redaction.standard.text(line)
    }

    /// The description, followed by the underlying error, with secrets hidden in both (an underlying `URLError`
    /// names the URL it failed on, query and all).
    public var debugDescription: String {
        guard let underlying else { return description }
        // The description is redacted already.
        return "\(description) [underlying: \(Redaction.standard.text(String(reflecting: underlying)))]"
    }

    private var target: String? {
        guard let request else { return nil }
        let url = response?.url?.absoluteString ?? request.url ?? request.api ?? ""
        // Redacted on its own first: a value at the URL's end would otherwise run on into the message's `:`.
        return url.isEmpty ? "\(request.method)" : "\(request.method) \(Redaction.standard.url(url))"
    }

    /// A header field that cannot be sent as it is (see `HTTPHeaders.isSendable(name:value:)`); the name is written
    /// with its control characters escaped, the value not at all (it may be a secret).
    static func unsendable(_ field: HTTPHeaders.Field) -> HTTPError {
        HTTPError(
            .encoding,
            "header \(String(reflecting: field.name)) has a name or value that cannot be sent (a line break or NUL in "
                + "the value, or a name that is not a token); nothing was sent")
    }

    /// An error thrown by code of the app's (a hook, a plugin, a serializer, a callback) as an `HTTPError`: one as it
    /// is, with the request and response filled in where it has none; anything else as `code`, its description after
    /// `message`.
    static func wrapping(
        _ error: any Error, as code: Code, _ message: String, request: Request? = nil, response: Response? = nil
    ) -> HTTPError {
        if var error = error as? HTTPError {
            if error.request == nil { error.request = request }
            if error.response == nil { error.response = response }
            return error
        }
        return HTTPError(code, "\(message): \(error)", request: request, response: response, underlying: error)
    }

    /// A copy with the request filled in when it was not known where the error was made.
    func with(request: Request) -> HTTPError {
        var copy = self
        if copy.request == nil { copy.request = request }
        return copy
    }
}

extension HTTPError {
    /// Maps any error raised while sending to an `HTTPError`: the single place where foreign errors are translated.
    static func from(_ error: any Error, request: Request? = nil) -> HTTPError {
        if let error = error as? HTTPError {
            return request.map(error.with(request:)) ?? error
        }
        if error is CancellationError {
            return HTTPError(.cancelled, "the request was cancelled", request: request, underlying: error)
        }
        if let error = error as? URLError {
            let message = message(for: error)
            let code = isClientCertificateAlert(message) ? .clientCertificate : code(for: error.code)
            return HTTPError(code, message, request: request, underlying: error)
        }
        if error is EncodingError {
            return HTTPError(.encoding, "the body could not be encoded: \(error)", request: request, underlying: error)
        }
        if error is DecodingError {
            return HTTPError(.decoding, "the body could not be decoded: \(error)", request: request, underlying: error)
        }
        return HTTPError(.transport, String(describing: error), request: request, underlying: error)
    }

    /// A response body longer than `EngineRequest.maxResponseBytes`: announced so by its `Content-Length`, or
    /// counted as it came. The same words on every engine.
    static func responseTooLarge(limit: Int64, announced: Int64? = nil) -> HTTPError {
        HTTPError(
            .responseTooLarge,
            announced.map {
                "the response body is \($0) bytes (its Content-Length), more than maxResponseBytes (\(limit))"
            } ?? "the response body is longer than maxResponseBytes (\(limit) bytes)")
    }

    /// Whether a TLS library's words name an alert the server sends only about the client's certificate: it asked
    /// for one and got none (`certificate required`), or refused the one it got (`bad certificate`, `unknown ca`,
    /// and the like). OpenSSL writes them `tlsv13 alert certificate required`, `tlsv1 alert unknown ca`.
    static func isClientCertificateAlert(_ text: String) -> Bool {
        guard let alert = text.range(of: "alert ") else { return false }
        let name = text[alert.upperBound...]
        return [
            "certificate required", "bad certificate", "unknown ca", "certificate unknown", "certificate expired",
            "certificate revoked", "unsupported certificate",
        ].contains { name.hasPrefix($0) }
    }

    private static func code(for code: URLError.Code) -> Code {
        switch code {
        case .cancelled, .userCancelledAuthentication: .cancelled
        case .timedOut: .timedOut
        case .cannotConnectToHost, .cannotFindHost, .dnsLookupFailed, .notConnectedToInternet,
            .internationalRoamingOff, .dataNotAllowed, .secureConnectionFailed:
            .cannotConnect
        case .badURL, .unsupportedURL: .invalidURL
        // As CurlEngine says for the same certificate (URLSession gave `.transport`).
        case .serverCertificateUntrusted, .serverCertificateHasBadDate, .serverCertificateHasUnknownRoot,
            .serverCertificateNotYetValid:
            .serverTrust
        default: .transport
        }
    }

    private static func message(for error: URLError) -> String {
        // On Linux `localizedDescription` is often only "The operation could not be completed", while the libcurl
        // text ("Failed to connect to 127.0.0.1 port 1 ...") sits in the user info: prefer the more specific one.
        let detail = (error.userInfo[NSLocalizedDescriptionKey] as? String) ?? error.localizedDescription
        return "\(detail) (URLError \(error.code.rawValue))"
    }
}
