import Foundation

/// Hides secrets before anything is printed: credentials in headers, secret-looking parameters, passwords in URLs.
enum Redaction {
    static let placeholder = "<redacted>"

    /// Headers whose values are credentials.
    static let secretHeaders: Set<String> = [
        "authorization", "proxy-authorization", "cookie", "set-cookie", "x-api-key", "x-auth-token",
    ]

    /// Parameter and query names that look like secrets: any name containing one of these words.
    static let secretWords = ["password", "passwd", "token", "secret", "api_key", "apikey", "credential"]

    static func isSecretHeader(_ name: String) -> Bool {
        secretHeaders.contains(name.lowercased())
    }

    static func isSecretName(_ name: String) -> Bool {
        let lowered = name.lowercased()
        return secretWords.contains { lowered.contains($0) }
    }

    static func headers(_ headers: HTTPHeaders) -> HTTPHeaders {
        var copy = headers
        for field in headers where isSecretHeader(field.name) { copy[field.name] = placeholder }
        return copy
    }

    /// Redacts parameters at any depth: a secret name hides its whole value.
    static func parameters(_ parameters: [String: any Sendable]) -> [String: String] {
        var result: [String: String] = [:]
        for (key, value) in parameters {
            result[key] = isSecretName(key) ? placeholder : describe(value)
        }
        return result
    }

    private static func describe(_ value: Any) -> String {
        switch value {
        case let dictionary as [String: any Sendable]:
            let members = parameters(dictionary).sorted { $0.key < $1.key }.map { "\($0.key): \($0.value)" }
            return "{" + members.joined(separator: ", ") + "}"
        case let array as [any Sendable]:
            return "[" + array.map(describe).joined(separator: ", ") + "]"
        case let json as JSON:
            return redactedJSON(json).description
        default:
            return String(describing: value)
        }
    }

    /// Hides a password in the user-info part and secret-looking query values of a URL.
    static func url(_ string: String) -> String {
        guard var components = URLComponents(string: string) else { return string }
        var changed = false
        if components.password != nil {
            components.password = placeholder
            changed = true
        }
        if let items = components.queryItems, items.contains(where: { isSecretName($0.name) }) {
            components.queryItems = items.map { isSecretName($0.name) ? URLQueryItem(name: $0.name, value: "REDACTED") : $0 }
            changed = true
        }
        return changed ? (components.string ?? string) : string
    }
}
