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
    private let output: @Sendable (String) -> Void
    /// Bodies longer than this are cut in the log.
    static let bodyLimit = 4096

    init(_ output: @escaping @Sendable (String) -> Void) {
        self.output = output
    }

    func request(_ request: Request, _ encoded: EngineRequest) {
        var lines = ["\(request.id.map { "\($0) " } ?? "")\(request.method) \(Redaction.url(encoded.url?.absoluteString ?? ""))"]
        var headers = HTTPHeaders()
        for (name, value) in (encoded.urlRequest.allHTTPHeaderFields ?? [:]).sorted(by: { $0.key < $1.key }) {
            headers[name] = value
        }
        lines += section("headers", Redaction.headers(headers).map { "\($0.name): \($0.value)" })
        let parameters = Redaction.parameters(request.parameters).sorted { $0.key < $1.key }
        lines += section("parameters", parameters.map { "\($0.key): \($0.value)" })
        if request.body != nil, case .data(let body) = encoded.body {
            lines += section("body", ["\(body.count) bytes"])
        }
        output(ConsoleLog.banner("Switchboard Request", lines))
    }

    func response(_ response: Response) {
        var lines = [
            "\(response.request.id.map { "\($0) " } ?? "")\(response.status) \(response.request.method) "
                + Redaction.url(response.url?.absoluteString ?? response.request.url ?? "")
                + " (\(ConsoleLog.milliseconds(response.duration)) ms, \(response.data.count) bytes)",
        ]
        lines += section("headers", Redaction.headers(response.headers).map { "\($0.name): \($0.value)" })
        lines += section("body", [ConsoleLog.bodyText(response.data)])
        output(ConsoleLog.banner("Switchboard Response", lines))
    }

    func error(_ error: HTTPError, request: Request) {
        var lines = [error.description]
        if let underlying = error.underlying {
            lines += section("underlying", [String(describing: underlying)])
        }
        if let response = error.response, !response.data.isEmpty {
            lines += section("body", [ConsoleLog.bodyText(response.data)])
        }
        output(ConsoleLog.banner("Switchboard Error", lines))
    }

    func retry(_ error: HTTPError, attempt: Int, of attempts: Int, after delay: Duration) {
        let wait = String(format: "%.2f s", delay.seconds)
        output(ConsoleLog.banner("Switchboard Retry", [error.description, "attempt \(attempt) of \(attempts) failed; retrying in \(wait)"]))
    }

    private func section(_ title: String, _ lines: [String]) -> [String] {
        lines.isEmpty ? [] : ["\(title):"] + lines.map { "  " + $0 }
    }

    static func banner(_ title: String, _ lines: [String]) -> String {
        let head = "============ [\(title)] ============"
        return ([head] + lines + [String(repeating: "=", count: head.count)]).joined(separator: "\n")
    }

    static func bodyText(_ data: Data) -> String {
        if data.isEmpty { return "(empty)" }
        let prefix = data.prefix(bodyLimit)
        guard let text = String(data: prefix, encoding: .utf8) else { return "(\(data.count) bytes of binary data)" }
        let redacted = redactJSONText(text, complete: prefix.count == data.count)
        return data.count > bodyLimit ? redacted + "… (\(data.count) bytes in all)" : redacted
    }

    /// Redacts secret-named members of a JSON body (a login response carrying a token, say).
    private static func redactJSONText(_ text: String, complete: Bool) -> String {
        guard complete, let json = try? JSON(data: Data(text.utf8)) else { return text }
        return Redaction.redactedJSON(json).description
    }

    static func milliseconds(_ duration: Duration) -> String {
        String(format: "%.1f", duration.seconds * 1000)
    }
}

extension Redaction {
    static func redactedJSON(_ json: JSON) -> JSON {
        switch json {
        case .object(let members):
            var copy: [String: JSON] = [:]
            for (key, value) in members { copy[key] = isSecretName(key) ? .string(placeholder) : redactedJSON(value) }
            return .object(copy)
        case .array(let elements):
            return .array(elements.map(redactedJSON))
        default:
            return json
        }
    }
}
