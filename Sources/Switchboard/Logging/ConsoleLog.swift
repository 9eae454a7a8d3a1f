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
/// One log serves one request, every attempt of it, as the last of its observers: each attempt's request banner
/// (`sent`), a banner for each redirect followed (`redirected`) and each retry (`retried`, after a credential refresh
/// too), and one for the outcome (a response, an error), each with the request's `#N`. The secret values the request
/// sent (the values of its secret-named fields, query items and parameters) are hidden wherever they appear in what
/// is printed for it, such as a body the server echoed them in.
struct ConsoleLog: RequestObserver {
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

    func observe(_ event: RequestEvent) async {
        switch event.kind {
        case .sent(let encoded): request(event.request, encoded)
        case .retried(let attempt, let error, let delay):
            retry(error, request: event.request, attempt: attempt, after: delay)
        case .finished(.success(let response)): self.response(response)
        case .finished(.failure(let error)): self.error(error, request: event.request)
        case .cancelled: self.error(HTTPError(.cancelled, "the request was cancelled"), request: event.request)
        case .redirected(let status, let from, let to): redirect(status, from: from, to: to, request: event.request)
        case .created, .responseHead: break
        }
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

    /// A response banner; for a stream, the bytes its reader read.
    func response(_ response: Response) {
        let status = response.source == .revalidated ? "\(response.status) (revalidated: 304)" : "\(response.status)"
        let size = response.streamedBytes.map { "\($0) bytes streamed" } ?? "\(response.data.count) bytes"
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

    /// A redirect's banner: each one followed, as the engine reports it.
    func redirect(_ status: Int, from: URL?, to: URL?, request: Request) {
        output(
            ConsoleLog.banner(
                "Switchboard Redirect",
                [
                    "\(ConsoleLog.number(request))\(status) \(from?.absoluteString ?? "?")",
                    "followed to \(to?.absoluteString ?? "?")",
                ]))
    }

    /// A retry's banner: by the retry policy, a plugin, or the credential's plugin after a refresh.
    func retry(_ error: HTTPError, request: Request, attempt: Int, after delay: Duration) {
        let wait = String(format: "%.2f s", delay.seconds)
        output(
            ConsoleLog.banner(
                "Switchboard Retry",
                [ConsoleLog.number(request) + error.description, "attempt \(attempt) failed; sending again in \(wait)"])
        )
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
