import Foundation

// What `print`, string interpolation, `debugPrint` and `dump` show of a request and a response: the parts a reader
// looks for, with secrets hidden by the console log's rule (`Redaction`). Printing is logging: `print(request)` and
// `dump(response)` showed the storage box, and `dump` every header and parameter as it was, credentials included.

extension Request: CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// One line: the identifier (once sent), the method and the URL, or the `api` path until the URL is composed,
    /// with secrets in the URL (a password, a `token` in the query) hidden.
    ///
    /// ```swift
    /// print(request)    // Request #12 GET https://api.example.com/v1/users?page=2
    /// ```
    public var description: String {
        var line = "Request \(id) \(method)"
        if let url {
            line += " " + Redaction.standard.url(url)
        } else if let api {
            line += " " + Redaction.standard.url((server ?? "") + api)
        }
        return line
    }

    /// `description`, then the header fields and parameters the request has of its own (a secret's value hidden),
    /// and what its body is.
    public var debugDescription: String {
        var lines = [description]
        if !headers.isEmpty {
            lines.append("  headers: " + Redaction.standard.headerLines(headers).joined(separator: ", "))
        }
        if !parameters.isEmpty {
            lines.append("  parameters: " + Redaction.standard.parameterLines(parameters).joined(separator: ", "))
        }
        if !form.isEmpty { lines.append("  form: \(form.count) part\(form.count == 1 ? "" : "s")") }
        if let body { lines.append("  body: " + (body.file.map { "the file \($0.path)" } ?? "set")) }
        return lines.joined(separator: "\n")
    }

    /// What `dump` shows: the identifier, method, URL or `api`, and the header fields and parameters, secrets hidden.
    public var customMirror: Mirror {
        var children: [(label: String?, value: Any)] = [
            ("id", id as Any), ("method", method.rawValue),
        ]
        if let url { children.append(("url", Redaction.standard.url(url))) }
        if let server { children.append(("server", Redaction.standard.url(server))) }
        if let api { children.append(("api", Redaction.standard.url(api))) }
        if let node { children.append(("node", node.description)) }
        children.append(("headers", Redaction.standard.headerLines(headers)))
        children.append(("parameters", Redaction.standard.parameterLines(parameters)))
        children.append(("kind", kind))
        return Mirror(self, children: children, displayStyle: .struct)
    }
}

extension Response: CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// One line: the status, the request's method and the URL that answered (secrets hidden), the body's size and
    /// type, and where the response came from when not the network.
    ///
    /// ```swift
    /// print(response)   // Response 200 GET https://api.example.com/v1/users (1532 bytes, application/json)
    /// ```
    public var description: String {
        var line = "Response \(status) \(request.method)"
        if let address = url?.absoluteString ?? request.url { line += " " + Redaction.standard.url(address) }
        var details = [fileURL.map { "saved to \($0.path)" } ?? "\(data.count) bytes"]
        if let type = headers["Content-Type"] { details.append(type) }
        switch source {
        case .network: break
        case .cache: details.append("from the cache")
        case .revalidated: details.append("from the cache, revalidated")
        case .stub: details.append("a stub")
        }
        return line + " (" + details.joined(separator: ", ") + ")"
    }

    /// `description`, then the header fields (a secret's value hidden) and the start of the body as the console log
    /// shows it (redacted, then cut to 1,024 characters).
    public var debugDescription: String {
        var lines = [description]
        lines += Redaction.standard.headerLines(headers).map { "  " + $0 }
        if fileURL == nil, !data.isEmpty { lines.append("  " + Redaction.standard.body(data, limit: 1024)) }
        return lines.joined(separator: "\n")
    }

    /// What `dump` shows: the status, the URL, the header fields (secrets hidden), the body's size, where the
    /// response came from, and the request (as its own mirror shows it).
    public var customMirror: Mirror {
        Mirror(
            self,
            children: [
                ("status", status),
                ("url", (url?.absoluteString ?? request.url).map(Redaction.standard.url) as Any),
                ("headers", Redaction.standard.headerLines(headers)),
                ("bytes", data.count), ("fileURL", fileURL as Any), ("source", source), ("attempts", attempts),
                ("request", request),
            ],
            displayStyle: .struct)
    }
}

extension HTTPHeaders: CustomReflectable {
    /// What `dump` shows: each field as `Name: value`, a secret's value hidden (as `description` shows them).
    public var customMirror: Mirror {
        Mirror(
            self, unlabeledChildren: Redaction.standard.headerLines(self, sorted: false),
            displayStyle: .collection)
    }
}

extension EngineRequest: CustomStringConvertible, CustomReflectable {
    /// One line: the method and the URL, secrets in the URL hidden.
    public var description: String {
        "EngineRequest \(method) " + (url.map(Redaction.standard.url) ?? "(no URL)")
    }

    /// What `dump` shows: the method, the URL and the header fields, secrets hidden, and the body's length.
    public var customMirror: Mirror {
        Mirror(
            self,
            children: [
                ("method", method.rawValue), ("url", url.map(Redaction.standard.url) as Any),
                ("headers", Redaction.standard.headerLines(headers)),
                ("bodyLength", body.count as Any),
            ],
            displayStyle: .struct)
    }
}

extension EngineResponse: CustomStringConvertible, CustomReflectable {
    /// One line: the status, the URL (secrets hidden) and the body's size.
    public var description: String {
        "EngineResponse \(status) " + (url.map(Redaction.standard.url) ?? "(no URL)")
            + " (" + (fileLength.map { "\($0) bytes to a file" } ?? "\(body.count) bytes") + ")"
    }

    /// What `dump` shows: the status, the URL and the header fields, secrets hidden, and the body's size.
    public var customMirror: Mirror {
        Mirror(
            self,
            children: [
                ("status", status), ("url", url.map(Redaction.standard.url) as Any),
                ("headers", Redaction.standard.headerLines(headers ?? [:])),
                ("bytes", body.count), ("fileLength", fileLength as Any),
            ],
            displayStyle: .struct)
    }
}

extension HTTPError: CustomReflectable {
    /// What `dump` shows: the code, status and message, the request and response (as their own mirrors show them),
    /// and the underlying error's description, secrets hidden (it held the request's headers as they were).
    public var customMirror: Mirror {
        var children: [(label: String?, value: Any)] = [
            ("code", code.rawValue), ("status", status as Any), ("message", Redaction.standard.text(message)),
        ]
        if let request { children.append(("request", request)) }
        if let response { children.append(("response", response)) }
        if let underlying { children.append(("underlying", Redaction.standard.text(String(reflecting: underlying)))) }
        return Mirror(self, children: children, displayStyle: .struct)
    }
}

// The objects that hold secrets of their own (a credential, cookies, cached responses, the configuration's headers,
// parameters and user info) show in `dump` what a reader looks for, and not those: `dump(Center.shared)` printed the
// authenticator's credential, and `dump(engine)` every stored cookie's value.

extension Authenticator: CustomStringConvertible, CustomReflectable {
    /// Whether it holds a credential and how many refreshes have run; never the credential.
    public var description: String {
        "Authenticator (\(holdsCredential ? "a credential" : "no credential"), \(refreshCount) refreshes)"
    }

    /// What `dump` shows: `description`'s facts, without the credential.
    public var customMirror: Mirror {
        Mirror(
            self, children: ["hasCredential": holdsCredential, "refreshCount": refreshCount], displayStyle: .class)
    }
}

extension CurlEngine: CustomReflectable {
    /// What `dump` shows: whether it keeps cookies (not the cookies: every stored session cookie's value was shown).
    public var customMirror: Mirror {
        Mirror(self, children: ["keepsCookies": keepsCookies], displayStyle: .class)
    }
}

extension URLSessionEngine: CustomReflectable {
    /// What `dump` shows: whether it keeps cookies itself, and the download segment size (not the cookies, nor the
    /// session's storages).
    public var customMirror: Mirror {
        Mirror(
            self, children: ["keepsCookies": keepsCookies, "downloadSegmentSize": downloadSegmentSize as Any],
            displayStyle: .class)
    }
}
