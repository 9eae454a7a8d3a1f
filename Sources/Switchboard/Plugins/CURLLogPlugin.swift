import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Prints each attempt as a `curl` command line, to replay it from a terminal, with secrets redacted by the same
/// rule as the console log: headers, query items, form fields, JSON members, XML elements and attributes,
/// property-list keys and multipart parts whose names contain `token`, `secret`, `key`, `password`, `passwd`,
/// `session`, `auth`, `signature`, `cookie` or `credential` (and any word you add), or have a word such as `pin`,
/// `otp`, `cvv` or `card` (`user_pin`, `cardNumber`), show `<redacted>`.
///
/// ```swift
/// Center.shared.setup { $0.plugins.append(CURLLogPlugin()) }
/// // curl -X POST 'https://api.example.com/v1/login' -H 'Content-Type: application/json' --data-binary '{"password":"<redacted>","user":"ada"}'
/// ```
///
/// Bodies in memory are printed up to `bodyLimit` bytes (after redaction); a file body is shown as
/// `--data-binary @<path>`, a stream body by its length.
public struct CURLLogPlugin: Plugin {
    private let redaction: Redaction
    private let handler: @Sendable (String) -> Void
    /// Longest body printed, in characters. 4,096 by default; 0 (or less) prints none of it.
    public var bodyLimit: Int

    /// Creates a logger.
    ///
    /// - Parameters:
    ///   - secretNames: words that make a name secret, beside the built-in ones.
    ///   - bodyLimit: the longest body printed, in characters.
    ///   - handler: where the lines go; standard output by default.
    public init(
        secretNames: Set<String> = [], bodyLimit: Int = 4096,
        handler: @escaping @Sendable (String) -> Void = { print($0) }
    ) {
        redaction = Redaction(adding: secretNames)
        self.bodyLimit = bodyLimit
        self.handler = handler
    }

    public func willSend(_ request: EngineRequest, for original: Request) async {
        handler(command(for: request))
    }

    /// The command line for an encoded request.
    func command(for request: EngineRequest) -> String {
        // Each argument is redacted as it is, then quoted: redacting the quoted command could take a secret's value
        // up to and past its closing quote, and the command would no longer read as the shell reads it.
        var parts = ["curl"]
        if request.method != .get {
            // A method is a token, which may hold `'`, `|`, `&` or `$`: quoted unless it is letters and digits.
            let method = request.method.rawValue
            let plain = method.utf8.allSatisfy {
                (0x30...0x39).contains($0) || (0x41...0x5A).contains($0) || (0x61...0x7A).contains($0)
            }
            parts += ["-X", plain ? method : Self.quoted(method)]
        }
        parts.append(Self.quoted(redaction.url(request.url?.absoluteString ?? "")))
        for field in redaction.headers(request.headers.sortedByName) {
            parts += ["-H", Self.quoted(redaction.text("\(field.name): \(field.value)"))]
        }
        switch request.body {
        case .none:
            break
        case .data(let data):
            guard !data.isEmpty else { break }
            let text = redaction.body(data, limit: bodyLimit)
            parts += ["--data-binary", Self.quoted(text)]
        case .file(let url):
            parts += ["--data-binary", Self.quoted(redaction.text("@" + url.path))]
        case .stream(let stream):
            parts += [
                "--data-binary", Self.quoted("<a stream of \(stream.length.map(String.init) ?? "unknown") bytes>"),
            ]
        }
        return parts.joined(separator: " ")
    }

    /// Single-quoted for a POSIX shell: each `'` scalar becomes `'\''`, a combining mark after it or not (see
    /// `replacingScalars`).
    private static func quoted(_ text: String) -> String {
        "'" + text.replacingScalars { $0 == "'" ? "'\\''" : nil } + "'"
    }
}
