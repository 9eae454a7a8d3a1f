import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// `Max-Age` (RFC 6265 section 5.2.2), which `HTTPCookie` on Linux reads for version 1 cookies only (and with it,
/// ignores `Expires`): a cookie a server deletes with `Max-Age=0` (what a Go server's `MaxAge: -1` sends, and many
/// logouts) stayed stored and went on being sent, and one meant to live a minute lived as long as the process. Both
/// engines apply it after the storage's own parse.
enum CookieMaxAge {
    /// What `Max-Age` changes among the cookies of `Set-Cookie` field values (each a field, or fields joined with
    /// `, `): the cookies to store with their expiry set from it, and those to delete (zero or less). Cookies without
    /// the attribute are not listed.
    static func apply(
        to values: [String], for url: URL, now: Date = Date()
    ) -> (store: [HTTPCookie], delete: [HTTPCookie]) {
        var store: [HTTPCookie] = []
        var delete: [HTTPCookie] = []
        for value in values {
            for text in CookieRules.cookieTexts(value) {
                guard let age = maxAge(of: text), let cookie = CookieRules.cookie(fromText: text, for: url) else {
                    continue
                }
                if age <= 0 {
                    delete.append(cookie)
                    continue
                }
                let aged = CookieRules.copy(of: cookie) { properties in
                    // With a `Max-Age` property, `HTTPCookie` reads neither it (but in version 1 cookies) nor
                    // `Expires`.
                    properties[.maximumAge] = nil
                    properties[.expires] = now.addingTimeInterval(TimeInterval(age))
                    properties[.discard] = nil
                }
                if let aged { store.append(aged) }
            }
        }
        return (store, delete)
    }

    /// Stores and deletes what `apply` says, in `storage`, for the cookies `keeping` lets through (see
    /// `CookieRules.store`).
    static func update(
        _ storage: HTTPCookieStorage, from values: [String], for url: URL, keeping: (HTTPCookie) -> Bool
    ) {
        guard values.contains(where: { $0.range(of: "max-age", options: .caseInsensitive) != nil }) else { return }
        let (store, delete) = apply(to: values, for: url)
        let kept = store.filter(keeping)
        if !kept.isEmpty { storage.setCookies(kept, for: url, mainDocumentURL: nil) }
        // The storage deletes the cookie it keeps under the same name, domain and path (RFC 6265 section 5.3).
        for cookie in delete where keeping(cookie) { storage.deleteCookie(cookie) }
    }

    /// The `Max-Age` of one cookie's text, when it has a valid one (an optional `-`, then digits).
    static func maxAge(of text: String) -> Int? {
        var found: Int?
        for digits in CookieRules.attributeValues("max-age", in: text) {
            let body = digits.hasPrefix("-") ? digits.dropFirst() : Substring(digits)
            guard !body.isEmpty, body.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else { continue }
            // The last one counts; a number too large for an Int is as good as forever.
            found = Int(digits) ?? (digits.hasPrefix("-") ? Int.min : Int.max)
        }
        return found
    }
}
