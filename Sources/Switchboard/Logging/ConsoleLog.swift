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
struct ConsoleLog: Sendable {
    private let handler: @Sendable (String) -> Void
    private let redaction: Redaction
    /// Bodies longer than this are cut in the log (after redaction).
    static let bodyLimit = 4096

    init(_ handler: @escaping @Sendable (String) -> Void, secretNames: Set<String> = []) {
        self.handler = handler
        redaction = Redaction(adding: secretNames)
    }

    /// Prints a banner after one last pass over all its text, so that a secret from any source (an underlying
    /// error's description, say) is hidden too.
    private func output(_ banner: String) {
        handler(redaction.text(banner))
    }

    func request(_ request: Request, _ encoded: EngineRequest) {
        var lines = ["\(request.id.map { "\($0) " } ?? "")\(request.method) \(encoded.urlText ?? "")"]
        lines += section("headers", redaction.headerLines(encoded.headers))
        lines += section("parameters", redaction.parameterLines(request.parameters))
        if request.body != nil, case .data(let body) = encoded.body {
            lines += section("body", ["\(body.count) bytes"])
        }
        output(ConsoleLog.banner("Switchboard Request", lines))
    }

    func response(_ response: Response) {
        var lines = [
            "\(response.request.id.map { "\($0) " } ?? "")\(response.status) \(response.request.method) "
                + (response.address.text ?? response.request.url ?? "")
                + " (\(ConsoleLog.milliseconds(response.duration)) ms, \(response.data.count) bytes)"
        ]
        lines += section("headers", redaction.headerLines(response.headers, sorted: false))
        lines += section("body", [redaction.body(response.data, limit: ConsoleLog.bodyLimit)])
        output(ConsoleLog.banner("Switchboard Response", lines))
    }

    func error(_ error: HTTPError, request: Request) {
        var lines = [error.description]
        if let underlying = error.underlying {
            lines += section("underlying", [String(describing: underlying)])
        }
        if let response = error.response, !response.data.isEmpty {
            lines += section("body", [redaction.body(response.data, limit: ConsoleLog.bodyLimit)])
        }
        output(ConsoleLog.banner("Switchboard Error", lines))
    }

    func retry(_ error: HTTPError, attempt: Int, of attempts: Int, after delay: Duration) {
        let wait = String(format: "%.2f s", delay.seconds)
        output(
            ConsoleLog.banner(
                "Switchboard Retry",
                [error.description, "attempt \(attempt) of \(attempts) failed; retrying in \(wait)"]))
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
