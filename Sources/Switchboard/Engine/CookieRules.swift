import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Which stored cookies a request carries (RFC 6265, section 5.4), for both engines.
///
/// `HTTPCookieStorage.cookies(for:)` on Linux matches the domain and nothing else, and that loosely: a `Secure` cookie
/// went out over plain `http`, a cookie for `/admin` to every path of its host, an expired one for as long as the
/// process ran, and a cookie a server set for a domain such as `com` (or `0.0.1`, from `127.0.0.1`) to every host
/// under it. These rules choose among all the storage's cookies, matching the domain themselves, more strictly than
/// the storage does; where the storage keeps the same rules already (Apple platforms) nothing changes. The storage is
/// not asked for a URL's cookies: that lookup reads the URL's host anew (Foundation decodes it each time), which cost
/// more than the rest of the lookup even when the storage held no cookie at all.
enum CookieRules {
    /// The `Cookie` field for a request to `url`: the stored cookies that `url` may carry, longest path first, or
    /// `nil` when there are none.
    static func requestField(
        for url: @autoclosure () -> URL?, in storage: HTTPCookieStorage, now: Date? = nil
    ) -> String? {
        guard let stored = storage.cookies, !stored.isEmpty, let url = url(), let host = url.host?.lowercased(),
            !host.isEmpty
        else { return nil }
        let now = now ?? Date()
        let secure = isSecure(url)
        var path = url.path(percentEncoded: true)
        if path.isEmpty { path = "/" }
        let sent =
            stored
            .filter { allows($0, host: host, path: path, secure: secure, now: now) }
            .enumerated()
            .sorted { ($0.element.path.utf8.count, -$0.offset) > ($1.element.path.utf8.count, -$1.offset) }
            .map(\.element)
        guard !sent.isEmpty else { return nil }
        return HTTPCookie.requestHeaderFields(with: sent)["Cookie"]
    }

    /// Keeps the cookies of a response's `Set-Cookie` values in `storage`, and applies their `Max-Age` (see
    /// `CookieMaxAge`), for both engines (URLSessionEngine on Linux stores them here too: URLSession's own storing
    /// gives every cookie without a `Path` the path `/`).
    ///
    /// Over plain http a response cannot replace or delete a `Secure` cookie (RFC 6265bis section 5.7, step 16, as
    /// browsers and curl apply it): a cookie of the same name whose domain matches the secure one's either way, and
    /// whose path lies within the secure one's, is ignored. Without this a network attacker who answers one plain
    /// http request for the host could swap the session cookie that only https ever carried.
    static func store(_ values: [String], for url: URL, in storage: HTTPCookieStorage) {
        // Looked up only when a response over plain http sets something, and only the `Secure` cookies.
        let secured = isSecure(url) ? [] : (storage.cookies ?? []).filter(\.isSecure)
        let spares = { (cookie: HTTPCookie) in !secured.contains { shadows(cookie, $0) } }
        let received = cookiesWithoutMaxAge(from: values, for: url).filter(spares)
        if !received.isEmpty { storage.setCookies(received, for: url, mainDocumentURL: nil) }
        CookieMaxAge.update(storage, from: values, for: url, keeping: spares)
    }

    /// The cookies of `Set-Cookie` field values that have no `Max-Age`: those with one are stored (or deleted) by
    /// `CookieMaxAge` alone. Stored with the others first, a cookie that `Max-Age=0` deletes was in the storage for a
    /// moment, and a request on another thread could send it.
    static func cookiesWithoutMaxAge(from values: [String], for url: URL) -> [HTTPCookie] {
        values.flatMap(cookieTexts).filter { CookieMaxAge.maxAge(of: $0) == nil }
            .compactMap { cookie(fromText: $0, for: url) }
    }

    /// Whether a request to `url` goes over a secure connection (https), as `Secure` cookies require both ways.
    static func isSecure(_ url: URL) -> Bool {
        url.scheme?.lowercased() == "https"
    }

    /// RFC 6265bis section 5.7, step 16: whether `cookie`, received over plain http, would replace or shadow the
    /// stored `Secure` cookie `secure`: the same name, domains that match either way, and a path within its path.
    static func shadows(_ cookie: HTTPCookie, _ secure: HTTPCookie) -> Bool {
        guard cookie.name == secure.name else { return false }
        let new = cookie.domain.lowercased().trimmingPrefix(".")
        let old = secure.domain.lowercased().trimmingPrefix(".")
        guard new == old || new.hasSuffix("." + old) || old.hasSuffix("." + new) else { return false }
        return pathMatches(secure.path, cookie.path)
    }

    /// The cookies of `Set-Cookie` field values (each a field, or fields joined with `, ` as URLSession joins them),
    /// each cookie's text read on its own (joined, one cookie's attributes could be read as another's: a `Secure`
    /// followed by `, =x` was lost), with the path RFC 6265 gives it.
    static func cookies(from values: [String], for url: URL) -> [HTTPCookie] {
        values.flatMap(cookieTexts).compactMap { cookie(fromText: $0, for: url) }
    }

    /// The cookies of a field value that may join several with `, `, split where `HTTPCookie`'s parser splits them
    /// (at a comma followed by a token and `=`, so the comma in an `Expires` date does not split), and at a comma
    /// followed by `=` alone: a field without a name (which RFC 6265 ignores) joined after another cookie would
    /// otherwise be read as that cookie's attribute, and its `Secure` lost.
    static func cookieTexts(_ value: String) -> [String] {
        let bytes = Array(value.utf8)
        var texts: [String] = []
        var start = 0
        var index = 0
        while index < bytes.count {
            if bytes[index] == UInt8(ascii: ","), startsCookie(bytes, at: index + 1) {
                texts.append(String(decoding: bytes[start..<index], as: UTF8.self))
                start = index + 1
            }
            index += 1
        }
        texts.append(String(decoding: bytes[start...], as: UTF8.self))
        return texts.map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
    }

    private static func startsCookie(_ bytes: [UInt8], at start: Int) -> Bool {
        var index = start
        while index < bytes.count, bytes[index] == 0x20 || bytes[index] == 0x09 { index += 1 }
        // A name (a token, or one with bytes beyond ASCII, which `readable` then ignores: read as part of the cookie
        // before it, it became the end of that one's last attribute) or none (`, =x`), then `=`.
        while index < bytes.count, HTTPMethod.isTokenByte(bytes[index]) || bytes[index] >= 0x80 { index += 1 }
        while index < bytes.count, bytes[index] == 0x20 || bytes[index] == 0x09 { index += 1 }
        return index < bytes.count && bytes[index] == UInt8(ascii: "=")
    }

    /// One cookie's text as `HTTPCookie` reads it, with the path RFC 6265 gives it (section 5.2.4): its last `Path`
    /// attribute that starts with `/`, or else the default path of `url` (section 5.1.4). `HTTPCookie` gives such a
    /// cookie `/` instead, so a cookie set by `/account/login` went with every request to the host. Its expiry is its
    /// last `Expires` read as a cookie date (see `CookieDate`), where `HTTPCookie` read another date.
    ///
    /// A cookie whose `Domain` the URL's host does not domain-match is ignored (section 5.3, step 6): `HTTPCookie` on
    /// Linux keeps any, so a response from one host stored cookies for another (`Domain=bank.example` from
    /// `evil.example`), which then went with that host's requests, or deleted its cookies with `Max-Age=0`. So is one
    /// whose `Domain` is a public suffix (`co.uk`, `github.io`; see `PublicSuffixes`), unless the host is that name
    /// itself, which gets it as a host-only cookie (step 5): `evil.co.uk` could set or delete `bank.co.uk`'s cookies.
    /// And so is one whose name and value hold more than 4,096 bytes together, a `Secure` one that did not come over
    /// https, and one that breaks the rules of its name's `__Secure-` or `__Host-` prefix (`keepsPrefixRules`).
    static func cookie(fromText original: String, for url: URL) -> HTTPCookie? {
        guard let text = readable(original),
            let cookie = HTTPCookie.cookies(withResponseHeaderFields: ["Set-Cookie": text], for: url).first,
            let host = url.host?.lowercased(), domainMatches(cookie.domain, host)
        else {
            return nil
        }
        // RFC 6265bis section 5.6: a name and value of more than 4,096 bytes together are ignored, as browsers ignore
        // them: such a cookie would go with every request to its host from then on, and a server refuses a request
        // whose head is that large (`431`), so one response could break every later request.
        guard cookie.name.utf8.count + cookie.value.utf8.count <= Self.maximumNameAndValue else { return nil }
        // RFC 6265bis section 5.7, step 10, as browsers and curl apply it: a `Secure` cookie comes over https only.
        // One set over plain http (by anyone who can answer such a request) would go with every https request after.
        guard !cookie.isSecure || isSecure(url), Self.keepsPrefixRules(cookie, text: text, url: url) else {
            return nil
        }
        var hostOnly = false
        if cookie.domain.hasPrefix(".") {
            let domain = cookie.domain.dropFirst().lowercased()
            if PublicSuffixes.isPublicSuffix(domain) {
                guard domain == host else { return nil }
                hostOnly = true
            }
        }
        let path = path(of: text) ?? defaultPath(of: url)
        // The expiry is read from the text as it came (by `CookieDate`, byte by byte): an `Expires` that `readable`
        // keeps from `HTTPCookie` may still be a cookie date.
        let expires = expiry(of: original)
        let expiresDiffers = expires.map { date in
            cookie.expiresDate.map { abs($0.timeIntervalSince(date)) >= 1 } ?? true
        }
        guard cookie.path != path || expiresDiffers == true || hostOnly else { return cookie }
        return copy(of: cookie) { properties in
            if hostOnly { properties[.domain] = host }
            properties[.path] = path
            if let expires {
                properties[.expires] = expires
                properties[.discard] = nil
            }
        }
    }

    /// One cookie's text as `HTTPCookie` can read it, or `nil` when the cookie is to be ignored.
    ///
    /// `HTTPCookie` on Linux splits each `name=value` by characters counted one way and indexed another: a name
    /// holding a character of several scalars (a flag, a letter with a combining accent, CR LF) stopped the process
    /// ("String index is out of bounds"), and one holding any other non-ASCII character lost its value. So:
    /// - a cookie with a control character anywhere (but a tab) is ignored, as RFC 6265bis section 5.6 ignores one
    ///   in its name or value;
    /// - a cookie whose name is not ASCII is ignored (a cookie name is a token, RFC 6265 section 4.1.1);
    /// - an attribute whose name is not ASCII is dropped (no attribute has such a name; an unknown one is ignored);
    /// - so is a cookie, or an attribute, whose `=` a mark that follows it (U+0301, a joiner) makes one character
    ///   with it: `HTTPCookie` does not find that `=`, and ignored such a cookie, took `a=` then a joiner for a name,
    ///   or, with another `=` after it (`a=` U+0301 `=`, `Max-Age=` U+0301 `5=`), stopped the process;
    /// - and an `Expires` attribute whose value is not printable ASCII: `HTTPCookie` hands it to `DateFormatter`,
    ///   which stops the process on Linux at text with a combining mark (`Expires=Wed, 21 Oct 2037 07:28` then
    ///   U+07F2, "Incorrect range"). A cookie date is ASCII; `expiry(of:)` reads one from the text as it came.
    static func readable(_ text: String) -> String? {
        let bytes = text.utf8
        guard !bytes.contains(where: { ($0 < 0x20 && $0 != 0x09) || $0 == 0x7F }) else { return nil }
        guard bytes.contains(where: { $0 >= 0x80 }) else { return text }
        var segments = text.split(separator: ";", omittingEmptySubsequences: false)
        // Its name is ASCII, its first `=` is a character of its own, and an attribute's `Expires` date is printable
        // ASCII.
        func isReadable(_ segment: Substring, isAttribute: Bool) -> Bool {
            let bytes = segment.utf8
            let equals = bytes.firstIndex(of: UInt8(ascii: "=")) ?? bytes.endIndex
            guard bytes[..<equals].allSatisfy({ $0 < 0x80 }),
                segment.first(where: { $0.unicodeScalars.contains("=") }).map({ $0 == "=" }) ?? true
            else { return false }
            guard isAttribute, equals < bytes.endIndex,
                String(decoding: bytes[..<equals], as: UTF8.self).trimmingCharacters(in: .whitespaces)
                    .equalsIgnoringASCIICase("expires")
            else { return true }
            return bytes[bytes.index(after: equals)...].allSatisfy { ($0 >= 0x20 && $0 < 0x7F) || $0 == 0x09 }
        }
        guard let first = segments.first, isReadable(first, isAttribute: false) else { return nil }
        segments = [first] + segments.dropFirst().filter { isReadable($0, isAttribute: true) }
        return segments.joined(separator: ";")
    }

    /// The most bytes a cookie's name and value may hold together (RFC 6265bis section 5.6).
    static let maximumNameAndValue = 4096

    /// RFC 6265bis section 4.1.3, as browsers and curl apply it: a cookie named `__Secure-…` (any case) is kept only
    /// when it is `Secure` and came over https; one named `__Host-…` also only without a `Domain` and with
    /// `Path=/`, so that it stays with the one host that set it. A page over plain http (or a network attacker) could
    /// otherwise plant a cookie that the https site trusts by its name.
    static func keepsPrefixRules(_ cookie: HTTPCookie, text: String, url: URL) -> Bool {
        let name = cookie.name.lowercased()
        let secure = name.hasPrefix("__secure-")
        let host = name.hasPrefix("__host-")
        guard secure || host else { return true }
        guard cookie.isSecure, isSecure(url) else { return false }
        guard host else { return true }
        return attributeValues("domain", in: text).isEmpty && path(of: text) == "/"
    }

    /// The date of the last `Expires` attribute of a cookie's text that is a cookie date (see `CookieDate`), or `nil`.
    static func expiry(of text: String) -> Date? {
        attributeValues("expires", in: text).compactMap(CookieDate.parse).last
    }

    /// The values of a cookie text's attributes called `name` (in lower case; matched in any case), in order, without
    /// the blanks around them; an attribute without `=` has an empty value. The cookie's own name and value, before
    /// the first `;`, are not an attribute.
    static func attributeValues(_ name: String, in text: String) -> [String] {
        text.split(separator: ";", omittingEmptySubsequences: false).dropFirst().compactMap { attribute in
            let parts = attribute.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard parts[0].trimmingCharacters(in: .whitespaces).lowercased() == name else { return nil }
            return parts.count == 2 ? parts[1].trimmingCharacters(in: .whitespaces) : ""
        }
    }

    /// A copy of `cookie` with `change` made to its properties. `Secure` and `HttpOnly` are carried over as text:
    /// `HTTPCookie(properties:)` on Linux reads them only so, and its own `properties` has `Secure` as a boolean and no
    /// `HttpOnly` at all (a cookie remade from them lost both, and a `Secure` cookie then went out over plain http).
    static func copy(
        of cookie: HTTPCookie, _ change: (inout [HTTPCookiePropertyKey: Any]) -> Void
    ) -> HTTPCookie? {
        var properties = cookie.properties ?? [:]
        properties[.secure] = cookie.isSecure ? "TRUE" : nil
        properties[httpOnlyKey] = cookie.isHTTPOnly ? "TRUE" : nil
        change(&properties)
        return HTTPCookie(properties: properties)
    }

    /// The property `HTTPCookie` reads `HttpOnly` from (it has no constant for it).
    private static let httpOnlyKey = HTTPCookiePropertyKey("HttpOnly")

    /// The value of the last `Path` attribute of a cookie's text that starts with `/` (RFC 6265 section 5.2.4: one
    /// that is empty or starts otherwise gives the default path), or `nil`.
    static func path(of text: String) -> String? {
        attributeValues("path", in: text).last.flatMap { $0.hasPrefix("/") ? $0 : nil }
    }

    /// RFC 6265 section 5.1.4: the path of `url` up to its last `/` (not included), or `/` when that leaves nothing.
    static func defaultPath(of url: URL) -> String {
        let path = url.path(percentEncoded: true)
        guard path.hasPrefix("/"), let last = path.utf8.lastIndex(of: UInt8(ascii: "/")),
            last != path.utf8.startIndex
        else { return "/" }
        return String(path[..<last])
    }

    /// Whether a stored cookie may go with a request for `path` on `host`, over a secure
    /// connection or not, at `now`.
    static func allows(_ cookie: HTTPCookie, host: String, path: String, secure: Bool, now: Date) -> Bool {
        // The domain first: with the storage's whole list to go through, most cookies are another host's.
        guard domainMatches(cookie.domain, host) else { return false }
        if cookie.isSecure && !secure { return false }
        // A cookie made in code can hold what a `Set-Cookie` field cannot: a line break would end the `Cookie` field
        // and start fields of its own, a `;` start another cookie.
        if !HTTPHeaders.isSendable(name: cookie.name, value: cookie.value)
            || cookie.name.utf8.contains(UInt8(ascii: ";")) || cookie.value.utf8.contains(UInt8(ascii: ";"))
        {
            return false
        }
        if let expires = cookie.expiresDate, expires <= now { return false }
        return pathMatches(cookie.path, path)
    }

    /// RFC 6265 section 5.1.3: a host-only cookie (no leading dot) goes to its host alone; a domain cookie to its
    /// domain and the names under it, but never to an IP address other than its own, and not under a domain of one
    /// label (`com`; a cookie for any other public suffix, `co.uk`, is refused when it is set). `domain` is compared
    /// without ASCII case, to a `host` in lower case, and without making a string of either: this runs for every
    /// stored cookie on every request: with 1,000 cookies stored, lower-casing each cookie's domain and matching it
    /// as a `String` cost about 1 ms a request, this 0.1 ms (most of it `HTTPCookieStorage` handing over its
    /// cookies).
    static func domainMatches(_ domain: String, _ host: String) -> Bool {
        var name = domain.utf8[...]
        let isDomainCookie = name.first == UInt8(ascii: ".")
        if isDomainCookie { name = name.dropFirst() }
        let bytes = host.utf8
        if equalsLowercased(name, bytes[...]) { return true }
        guard isDomainCookie, bytes.count > name.count + 1, name.contains(UInt8(ascii: ".")) else { return false }
        let start = bytes.index(bytes.endIndex, offsetBy: -name.count)
        guard bytes[bytes.index(before: start)] == UInt8(ascii: "."), equalsLowercased(name, bytes[start...]) else {
            return false
        }
        return !isIPAddress(host)
    }

    /// Whether `text` is `lowercase` once its ASCII letters are in lower case.
    private static func equalsLowercased(_ text: Substring.UTF8View, _ lowercase: Substring.UTF8View) -> Bool {
        text.count == lowercase.count
            && zip(text, lowercase).allSatisfy { byte, lower in
                (byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z") ? byte | 0x20 : byte) == lower
            }
    }

    /// Whether a URL's host is an IP address (four decimal numbers, or an IPv6 literal) rather than a name.
    private static func isIPAddress(_ host: String) -> Bool {
        if host.contains(":") { return true }
        let parts = host.split(separator: ".", omittingEmptySubsequences: false)
        return parts.count == 4 && parts.allSatisfy { !$0.isEmpty && $0.utf8.allSatisfy { $0 >= 0x30 && $0 <= 0x39 } }
    }

    /// RFC 6265 section 5.1.4: the request path is the cookie's path, or starts with it where a segment starts.
    static func pathMatches(_ cookiePath: String, _ requestPath: String) -> Bool {
        let cookiePath = cookiePath.isEmpty ? "/" : cookiePath
        guard requestPath.utf8.starts(with: cookiePath.utf8) else { return false }
        if requestPath.utf8.count == cookiePath.utf8.count || cookiePath.utf8.last == UInt8(ascii: "/") {
            return true
        }
        let next = requestPath.utf8.index(requestPath.utf8.startIndex, offsetBy: cookiePath.utf8.count)
        return requestPath.utf8[next] == UInt8(ascii: "/")
    }
}
