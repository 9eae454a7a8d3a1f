import Foundation

// What `print` and `dump` show of a center and its configuration: the configuration's secrets (its headers',
// parameters' and user info's, the authenticator's credential) hidden.

extension Center: CustomReflectable {
    /// What `dump` shows: the configuration (as its own mirror shows it) and how much work is running.
    public var customMirror: Mirror {
        Mirror(self, children: ["configuration": configuration, "running": registry.count], displayStyle: .class)
    }
}

extension Center.Configuration: CustomStringConvertible, CustomReflectable {
    /// One line: the server (secrets in its URL hidden) and the engine.
    ///
    /// ```swift
    /// print(Center.shared.configuration)    // Configuration https://api.example.com/v1/, URLSessionEngine
    /// ```
    public var description: String {
        "Configuration \(server.map(Redaction.standard.url) ?? "(no server)"), \(type(of: engine))"
    }

    /// What `dump` shows: every setting, with the values of secret header fields, parameters and user info hidden
    /// (by the console log's rule and `consoleLogSecretNames`), the authenticator without its credential, and
    /// engines, plugins and hooks by their types.
    public var customMirror: Mirror {
        let redaction = Redaction(adding: consoleLogSecretNames)
        let nodeLines = nodes.map { "\($0.key): \(redaction.url($0.value))" }.sorted()
        let children: [(label: String?, value: Any)] = [
            ("server", server.map(redaction.url) as Any), ("nodes", nodeLines),
            ("engine", String(describing: type(of: engine))),
            ("headers", redaction.headerLines(headers)), ("parameters", redaction.parameterLines(parameters)),
            ("userInfo", redaction.parameterLines(userInfo)),
            ("plugins", plugins.map { String(describing: type(of: $0)) }),
            (
                "nodePlugins",
                nodePlugins.map { "\($0.key): \($0.value.map { String(describing: type(of: $0)) })" }.sorted()
            ),
            ("authenticator", authenticator.map(\.description) as Any),
            ("cache", cache.map(\.description) as Any), ("callbackQueue", callbackQueue?.label as Any),
            ("consoleLog", consoleLog), ("timeout", "\(timeout)"),
            ("totalTimeout", totalTimeout.map { "\($0)" } as Any),
            ("maxResponseBytes", maxResponseBytes as Any),
            ("acceptableStatusCodes", Self.runs(of: acceptableStatusCodes)),
            ("retryPolicy", retryPolicy), ("deduplicatesGETs", deduplicatesGETs),
            ("allowsInsecureRedirects", allowsInsecureRedirects), ("forwardsSecretHeaders", forwardsSecretHeaders),
            ("trustPolicies", trustPolicies.map { "\($0.key): \($0.value)" }.sorted()),
            ("usesEndpointStubs", usesEndpointStubs),
            ("retainedFailures", retainedFailures),
            (
                "hooks",
                [
                    onRequest.map { _ in "onRequest" }, onResponse.map { _ in "onResponse" },
                    onError.map { _ in "onError" },
                ].compactMap { $0 }
            ),
        ]
        return Mirror(self, children: children, displayStyle: .struct)
    }

    /// Status codes as runs (`200...299`, `304`), not one line each.
    private static func runs(of codes: Set<Int>) -> [String] {
        var runs: [ClosedRange<Int>] = []
        for code in codes.sorted() {
            if let last = runs.last, last.upperBound + 1 == code {
                runs[runs.count - 1] = last.lowerBound...code
            } else {
                runs.append(code...code)
            }
        }
        return runs.map { $0.count == 1 ? "\($0.lowerBound)" : "\($0.lowerBound)...\($0.upperBound)" }
    }
}
