import Foundation

/// Prints XMNetworking-style banners for requests, responses and errors, with secrets redacted.
///
/// ```
/// ============ [Switchboard Request] ============
/// #3 POST https://api.example.com/v1/login
/// headers:
///   Authorization: <redacted>
/// parameters:
///   password: <redacted>
/// ===============================================
/// ```
///
/// One log serves one request, every attempt of it: each attempt's request banner, and a banner for each outcome (a
/// response, a retry, a credential refresh, the final error), each with the request's `#N`. The secret values the
/// request sent (the values of its secret-named fields, query items and parameters) are hidden wherever they appear
/// in what is printed for it, such as a body the server echoed them in.
struct ConsoleLog: Sendable {
    private let handler: @Sendable (String) -> Void
    private let redaction: Redaction
    /// The secret values the request sent, longest first.
    private let sent = Locked<[String]>([])
    /// Bodies longer than this are cut in the log (after redaction).
    static let bodyLimit = 4096
    /// Values shorter than this are not looked for in the text (a `1` would hide every digit).
    static let shortestSecret = 4

    init(_ handler: @escaping @Sendable (String) -> Void, secretNames: Set<String> = []) {
        self.handler = handler
        redaction = Redaction(adding: secretNames)
    }

    /// Prints a banner after one last pass over all its text, so that a secret from any source (an underlying
    /// error's description, a body that echoes what was sent) is hidden too.
    private func output(_ banner: String) {
        var text = redaction.text(banner)
        for secret in sent.withLock({ $0 }) where text.contains(secret) {
            text = text.replacingOccurrences(of: secret, with: Redaction.placeholder)
        }
        handler(text)
    }

    /// Keeps the secret values an attempt sends, to hide them in whatever is printed after.
    private func remember(_ request: Request, _ encoded: EngineRequest) {
        var values: [String] = []
        for field in encoded.headers where redaction.isSecret(field.name) {
            values.append(field.value)
            // `Bearer abc`: the credential alone too, wherever it is echoed without its scheme.
            if let space = field.value.firstIndex(of: " ") {
                values.append(String(field.value[field.value.index(after: space)...]))
            }
        }
        for (name, value) in request.parameters where redaction.isSecret(name) {
            values.append(contentsOf: ConsoleLog.texts(of: value))
        }
        if let url = encoded.urlText, let items = URLComponents(string: url)?.queryItems {
            for item in items where redaction.isSecret(item.name) { values.append(item.value ?? "") }
        }
        let kept = values.filter { $0.count >= ConsoleLog.shortestSecret }
        guard !kept.isEmpty else { return }
        sent.withLock { sent in
            sent = Array(Set(sent + kept)).sorted { $0.count > $1.count }
        }
    }

    /// The texts a parameter value holds, at any depth (not its flags and numbers, which are no secrets to look
    /// for in text).
    private static func texts(of value: Any) -> [String] {
        switch value {
        case let dictionary as [String: any Sendable]: dictionary.values.flatMap { texts(of: $0) }
        case let array as [any Sendable]: array.flatMap { texts(of: $0) }
        case is Bool, is any BinaryInteger, is any BinaryFloatingPoint: []
        default: ["\(value)"]
        }
    }

    /// `#N ` for a request that has its identifier.
    private static func number(_ request: Request?) -> String {
        request.map { "\($0.id) " } ?? ""
    }

    func request(_ request: Request, _ encoded: EngineRequest) {
        remember(request, encoded)
        var lines = ["\(ConsoleLog.number(request))\(request.method) \(encoded.urlText ?? "")"]
        lines += section("headers", redaction.headerLines(encoded.headers))
        lines += section("parameters", redaction.parameterLines(request.parameters))
        if request.body != nil, case .data(let body) = encoded.body {
            lines += section("body", ["\(body.count) bytes"])
        }
        output(ConsoleLog.banner("Switchboard Request", lines))
    }

    /// A response banner; `streamed`: the bytes of a body that went to a stream's reader.
    func response(_ response: Response, streamed: Int? = nil) {
        let status = response.source == .revalidated ? "\(response.status) (revalidated: 304)" : "\(response.status)"
        let size = streamed.map { "\($0) bytes streamed" } ?? "\(response.data.count) bytes"
        var lines = [
            "\(ConsoleLog.number(response.request))\(status) \(response.request.method) "
                + (response.address.text ?? response.request.url ?? "")
                + " (\(ConsoleLog.milliseconds(response.duration)) ms, \(size))"
        ]
        lines += section("headers", redaction.headerLines(response.headers, sorted: false))
        lines += section("body", [redaction.body(response.data, limit: ConsoleLog.bodyLimit)])
        output(ConsoleLog.banner("Switchboard Response", lines))
    }

    func error(_ error: HTTPError, request: Request) {
        var lines = [ConsoleLog.number(request) + error.description]
        if let underlying = error.underlying {
            lines += section("underlying", [String(describing: underlying)])
        }
        if let response = error.response, !response.data.isEmpty {
            lines += section("body", [redaction.body(response.data, limit: ConsoleLog.bodyLimit)])
        }
        output(ConsoleLog.banner("Switchboard Error", lines))
    }

    func retry(_ error: HTTPError, request: Request, attempt: Int, of attempts: Int, after delay: Duration) {
        let wait = String(format: "%.2f s", delay.seconds)
        output(
            ConsoleLog.banner(
                "Switchboard Retry",
                [
                    ConsoleLog.number(request) + error.description,
                    "attempt \(attempt) of \(attempts) failed; retrying in \(wait)",
                ]))
    }

    /// The banner of an attempt whose credential was refused, before the authenticator's refresh.
    func refresh(_ error: HTTPError, request: Request) {
        output(
            ConsoleLog.banner(
                "Switchboard Refresh",
                [
                    ConsoleLog.number(request) + error.description,
                    "the credential was refused; refreshing it, then sending the request again once",
                ]))
    }

    private func section(_ title: String, _ lines: [String]) -> [String] {
        lines.isEmpty ? [] : ["\(title):"] + lines.map { "  " + $0 }
    }

    static func banner(_ title: String, _ lines: [String]) -> String {
        let head = "============ [\(title)] ============"
        return ([head] + lines + [String(repeating: "=", count: head.count)]).joined(separator: "\n")
    }

    static func milliseconds(_ duration: Duration) -> String {
        String(format: "%.1f", duration.seconds * 1000)
    }
}
