import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// How a redirect is followed, the same for every engine that follows redirects itself: credentials never go to
/// another origin, `301`/`302`/`303` turn a `POST` into a `GET` without body (as browsers and URLSession do),
/// `307`/`308` keep the method and body.
enum Redirects {
    /// The error of an exchange that passed its limit of redirects, the same on every engine.
    static func tooMany(_ limit: Int) -> URLError {
        URLError(.httpTooManyRedirects, userInfo: [NSLocalizedDescriptionKey: "more than \(limit) redirects"])
    }
    static let credentialHeaders = ["Authorization", "Cookie", "Proxy-Authorization"]

    /// The fields of `headers` that do not go to another origin: the credential fields, and unless the request
    /// forwards them, every field whose name is secret by the console log's rule (`X-Api-Key`, `Private-Token`,
    /// `X-Signature`: an API key sent on to whatever host a redirect names is an API key given away).
    static func originBoundHeaders(_ headers: HTTPHeaders, forwardingSecrets: Bool) -> [String] {
        guard !forwardingSecrets else { return credentialHeaders }
        return credentialHeaders + headers.map(\.name).filter { SecretName.isSecret($0) }
    }

    /// The names among `headers` that are credentials or secret-named (`originBoundHeaders` without forwarding),
    /// each present in `headers`: what a center leaves behind for another origin, and what keys a cached response
    /// to its credential.
    static func credentialFields(in headers: HTTPHeaders) -> [String] {
        originBoundHeaders(headers, forwardingSecrets: false).filter { headers[$0] != nil }
    }

    /// What an engine does with a redirect under the request's policy.
    enum Step {
        /// The redirect response is the answer.
        case answer
        /// Send this request next.
        case follow(EngineRequest)
        /// The request fails: past the limit, or a decision gave a request that cannot be sent.
        case fail(HTTPError)
    }

    /// The step for the redirect numbered `number` (from 1) whose following request the rules made (`proposed`):
    /// the policy decides (`RedirectPolicy.decision`), and a request a decision changed is held to the rules any
    /// request is (an `http` or `https` URL with a host; fields that can be sent).
    static func step(
        _ proposed: EngineRequest, status: Int, headers: HTTPHeaders, from: URL?, number: Int, policy: RedirectPolicy
    ) -> Step {
        let next = Redirect.Next(url: proposed.url, method: proposed.method, headers: proposed.headers)
        let redirect = Redirect(status: status, responseHeaders: headers, from: from, next: next, number: number)
        switch policy.decision(redirect) {
        case .answer:
            return .answer
        case .pastLimit:
            return .fail(HTTPError.from(tooMany(policy.maxRedirects)))
        case .follow(let chosen):
            var request = proposed
            guard chosen.url != next.url || chosen.method != next.method || chosen.headers != next.headers else {
                return .follow(request)
            }
            (request.url, request.method, request.headers) = (chosen.url, chosen.method, chosen.headers)
            do {
                try check(request)
                try request.checkBeforeSending()
            } catch {
                return .fail(error)
            }
            return .follow(request)
        }
    }

    /// The request that follows a redirect response, or `nil` when the response is not one to follow.
    static func next(after response: EngineResponse, for request: EngineRequest) -> EngineRequest? {
        // The status first: the URLs are made only for a redirect (the center's may be text, parsed when read).
        guard follows(status: response.status) else { return nil }
        let from = response.url ?? request.url
        guard let target = target(of: response.value(forHTTPHeaderField: "Location"), from: from),
            isFollowable(target)
        else { return nil }
        var next = request
        next.url = target
        if !sameOrigin(from, target) {
            for name in originBoundHeaders(request.headers, forwardingSecrets: request.forwardsSecretHeaders) {
                next.headers[name] = nil
            }
        }
        let method = request.method
        if !keepsBody(status: response.status, method: method) {
            if method != .head { next.method = .get }
            next.body = .none
            next.headers["Content-Type"] = nil
            next.headers["Content-Length"] = nil
            next.headers["Transfer-Encoding"] = nil
        }
        return next
    }

    /// Whether a response with this status is followed as a redirect: `301`, `302`, `303`, `307` and `308`; not a
    /// `300` (a choice for the user), a `304`, the deprecated `305 Use Proxy` or the unused `306` (RFC 9110 section
    /// 15.4), which are answers.
    static func follows(status: Int) -> Bool {
        status == 301 || status == 302 || status == 303 || status == 307 || status == 308
    }

    /// Whether the request that follows a redirect keeps the method and body: not after a `303`, nor after a `301`
    /// or `302` to a `POST` (which becomes a `GET` without body, as browsers do).
    static func keepsBody(status: Int, method: HTTPMethod) -> Bool {
        !(status == 303 || ((status == 301 || status == 302) && method == .post))
    }

    /// Where a redirect response points: its `Location`, without the blanks around it (not part of a field's value;
    /// URLSession on Linux keeps those after it), resolved against the URL it answered. A `Location` repeated with
    /// the same value (which both engines join into `a, a`) is that value; `conflictingLocations` refuses one
    /// repeated with another value before this is asked.
    static func target(of location: String?, from: URL?) -> URL? {
        guard let location, let from else { return nil }
        let first = locations(location).first ?? ""
        // Escapes in it are kept, as browsers keep them (`URLComposition.keepingEscapes`).
        return URL(string: URLComposition.keepingEscapes(first), relativeTo: from)?.absoluteURL
    }

    /// The values of a `Location` field as both engines read it, repeated fields joined by `, ` (URLSession on Linux
    /// joins them so, and `EngineResponse` as well), each without the blanks around it.
    private static func locations(_ joined: String) -> [String] {
        guard joined.contains(", ") else { return [HTTPHeaders.trimmingBlanks(joined)] }
        return joined.components(separatedBy: ", ").map(HTTPHeaders.trimmingBlanks)
    }

    /// The error of a redirect response with `Location` fields that differ, the same on every engine (browsers
    /// refuse one too); `nil` for any other response. Both engines followed the values joined into one
    /// (`/get, /anything` went to `/get,%20/anything`). A single `Location` holding `, ` is read as two: neither
    /// engine can tell it from two fields on URLSession, and a URI has no blank in it.
    static func conflictingLocations(in response: some ResponseHeadFields) -> URLError? {
        guard follows(status: response.statusCode), let joined = response.value(forHTTPHeaderField: "Location")
        else { return nil }
        let values = locations(joined)
        guard values.contains(where: { $0 != values[0] }) else { return nil }
        let status = response.statusCode
        return URLError(
            .badServerResponse,
            userInfo: [
                NSLocalizedDescriptionKey:
                    "the server answered \(StatusReason.described(status)) with "
                    + "\(values.count) Location fields that differ: no one place to go"
            ])
    }

    /// Whether a URL is one an engine may send: `http` or `https` only (no `file`, `dict`, `ftp`, ...).
    static func isHTTP(_ url: URL?) -> Bool {
        guard let scheme = url?.scheme else { return false }
        return scheme.equalsIgnoringASCIICase("http") || scheme.equalsIgnoringASCIICase("https")
    }

    /// Whether a redirect may be followed to this URL: one an engine would send (see `check`). Otherwise the
    /// redirect response itself is the answer, on every engine.
    static func isFollowable(_ url: URL?) -> Bool {
        guard let url, isHTTP(url), !(url.host?.isEmpty ?? true) else { return false }
        return url.port.map { (1...65535).contains($0) } ?? true
    }

    /// Refuses a request an engine is asked to perform unless its URL is `http` or `https`, with a host and a port
    /// in range.
    static func check(_ request: EngineRequest) throws(HTTPError) {
        if case .text(let text) = request.address {
            // The plain form (`URLAddress.isPlain`, what the center composes) is an http or https URL with a host:
            // only its port can be out of range.
            if let port = text.withUTF8Bytes(URLComposition.plainPort), !(1...65535).contains(port) {
                throw HTTPError(.invalidURL, "the port \(port) is outside 1-65535")
            }
            return
        }
        // Scheme, host and port are read off the URL's text (`URLComposition.authority` and `port`, held to
        // Foundation's answers by their tests): asking the URL for them makes a string of each, or parses it again,
        // on every request an engine performs (and the center's URL may be text, unparsed).
        let address = request.urlText
        let (authority, port) = (address ?? "").withUTF8Bytes {
            (URLComposition.authority($0), URLComposition.port($0))
        }
        guard address != nil, authority != .notHTTP else {
            throw HTTPError(.invalidURL, "only http and https URLs can be sent, not \(request.url?.scheme ?? "none")")
        }
        if let port, !(1...65535).contains(port) {
            throw HTTPError(.invalidURL, "the port \(port) is outside 1-65535")
        }
        if authority == .noHost {
            throw HTTPError(.invalidURL, "the URL has no host")
        }
    }

    /// The error for a redirect from `https` to plain `http`, unless the request allows it.
    static func refusal(from: URL?, to target: URL?, for request: EngineRequest) -> HTTPError? {
        guard !request.allowsInsecureRedirects, from?.scheme?.lowercased() == "https",
            target?.scheme?.lowercased() == "http"
        else { return nil }
        return HTTPError(
            .insecureRedirect,
            "refused a redirect from https to plain http (\(target?.host ?? "")); set allowsInsecureRedirects to allow it"
        )
    }

    /// Whether both URLs have a scheme and host, and the same origin.
    static func sameOrigin(_ lhs: URL?, _ rhs: URL?) -> Bool {
        guard let origin = Origin(lhs) else { return false }
        return origin == Origin(rhs)
    }
}

/// A URL's origin: scheme and host lowercased (the host percent-decoded), and the port, or the scheme's default for
/// `http` and `https`. Credentials follow a redirect only within one; the per-host queue counts exchanges per one.
struct Origin: Hashable, Sendable {
    var scheme: String
    var host: String
    var port: Int?

    init(scheme: String, host: String, port: Int?) {
        self.scheme = scheme
        self.host = host
        self.port = port
    }

    /// The origin of `url`, or `nil` when it has no scheme or host. Read without decoding or lowercasing what needs
    /// neither: the per-host queue reads one for every request.
    init?(_ url: URL?) {
        guard let url, let scheme = url.scheme, var host = url.host(percentEncoded: true) else { return nil }
        if host.utf8.contains(UInt8(ascii: "%")) { host = url.host ?? host }
        self.scheme = Self.lowercased(scheme)
        self.host = Self.lowercased(host)
        port = url.port ?? (self.scheme == "https" ? 443 : self.scheme == "http" ? 80 : nil)
    }

    /// The origin of a URL given as text, or `nil` when it has no scheme or host. A plain `http` or `https` URL (the
    /// scheme in lower case, a host of ASCII letters, digits, `-`, `.`, `_` and `~`, at most a port of digits) is read
    /// from the text, as `URL` would read it: making a `URL` costs more than a small request's own bookkeeping. Any
    /// other text is read through `URL`.
    init?(text: String) {
        if let origin = Self.plain(text) {
            self = origin
        } else if let origin = Origin(URL(string: URLComposition.keepingEscapes(text))) {
            self = origin
        } else {
            return nil
        }
    }

    /// The origin a URL's text is sent to, as both engines send it: an IPv4 address in an older form read as the
    /// usual one (`http://127.1/`, `http://2130706433/`, see `URLComposition.canonical`), the host percent-decoded
    /// and in lower case, the scheme's default port when none is given. `nil` when it has no scheme or host.
    init?(sending text: String) {
        if let canonical = URLComposition.canonical(text) {
            self.init(canonical)
        } else {
            self.init(text: text)
        }
    }

    /// The origin of a plain `http` or `https` URL (see `init(text:)`), or `nil` for any other text.
    private static func plain(_ text: String) -> Origin? {
        return text.withUTF8Bytes { bytes -> Origin? in
            let https = bytes.starts(with: "https://".utf8)
            guard https || bytes.starts(with: "http://".utf8) else { return nil }
            func ends(_ byte: UInt8) -> Bool {
                byte == UInt8(ascii: "/") || byte == UInt8(ascii: "?") || byte == UInt8(ascii: "#")
            }
            let hostStart = https ? 8 : 7
            var index = hostStart
            while index < bytes.count, !ends(bytes[index]), bytes[index] != UInt8(ascii: ":") {
                guard URLAddress.isHostByte(bytes[index]) else { return nil }
                index += 1
            }
            guard index > hostStart else { return nil }
            let host = lowercased(
                String(decoding: UnsafeBufferPointer(rebasing: bytes[hostStart..<index]), as: UTF8.self))
            var port = https ? 443 : 80
            if index < bytes.count, bytes[index] == UInt8(ascii: ":") {
                index += 1
                let portStart = index
                var value = 0
                while index < bytes.count, bytes[index] >= UInt8(ascii: "0"), bytes[index] <= UInt8(ascii: "9") {
                    value = value * 10 + Int(bytes[index] - UInt8(ascii: "0"))
                    index += 1
                    guard index - portStart <= 5 else { return nil }
                }
                guard index > portStart, value <= 65535, index == bytes.count || ends(bytes[index]) else { return nil }
                port = value
            }
            return Origin(scheme: https ? "https" : "http", host: host, port: port)
        }
    }

    /// `text.lowercased()`, without its cost when there is nothing to lower (ASCII without capitals).
    private static func lowercased(_ text: String) -> String {
        text.utf8.contains { $0 >= 0x80 || ($0 >= UInt8(ascii: "A") && $0 <= UInt8(ascii: "Z")) }
            ? text.lowercased() : text
    }
}
