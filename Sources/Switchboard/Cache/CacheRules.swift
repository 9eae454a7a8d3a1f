import Foundation

/// The directives of a `Cache-Control` field (RFC 9111, section 5.2): names in lower case, with their values
/// (unquoted) when they have one. Repeated fields are joined with `,` before parsing.
struct CacheControl: Sendable, Equatable {
    private(set) var directives: [String: String?] = [:]

    init(_ field: String?) {
        guard let field else { return }
        // Read by scalar: a combining mark after `,`, `=` or `"` joins it into one `Character`, which would hide the
        // separator (`no-store,` U+0301 `max-age=5` would lose its `no-store`).
        let scalars = field.unicodeScalars
        func text(_ range: Range<String.Index>) -> String {
            String(scalars[range]).trimmingCharacters(in: .whitespaces)
        }
        var index = scalars.startIndex
        while index < scalars.endIndex {
            // A directive: token [ "=" ( token / quoted-string ) ], separated by commas.
            let nameEnd = scalars[index...].firstIndex { $0 == "=" || $0 == "," } ?? scalars.endIndex
            let name = text(index..<nameEnd).lowercased()
            index = nameEnd
            var value: String?
            if index < scalars.endIndex, scalars[index] == "=" {
                index = scalars.index(after: index)
                while index < scalars.endIndex, scalars[index] == " " { index = scalars.index(after: index) }
                if index < scalars.endIndex, scalars[index] == "\"" {
                    var quoted = String.UnicodeScalarView()
                    index = scalars.index(after: index)
                    while index < scalars.endIndex, scalars[index] != "\"" {
                        if scalars[index] == "\\", scalars.index(after: index) < scalars.endIndex {
                            index = scalars.index(after: index)
                        }
                        quoted.append(scalars[index])
                        index = scalars.index(after: index)
                    }
                    if index < scalars.endIndex { index = scalars.index(after: index) }
                    value = String(quoted)
                } else {
                    let end = scalars[index...].firstIndex(of: ",") ?? scalars.endIndex
                    value = text(index..<end)
                    index = end
                }
                index = scalars[index...].firstIndex(of: ",") ?? scalars.endIndex
            }
            if index < scalars.endIndex { index = scalars.index(after: index) }
            if !name.isEmpty, directives[name] == nil { directives[name] = value }
        }
    }

    func has(_ name: String) -> Bool { directives[name] != nil }

    /// A delta-seconds directive (`max-age=60`): `nil` when absent or not a number of seconds.
    func seconds(_ name: String) -> Int64? {
        guard let value = directives[name] ?? nil, !value.isEmpty, value.allSatisfy(\.isASCII),
            value.allSatisfy(\.isNumber)
        else { return nil }
        return Int64(value) ?? Int64.max  // a value too large to represent is as good as forever
    }
}

/// RFC 9111's rules for a private cache, as pure functions of the header fields and the clock: whether a response
/// may be stored, how long it stays fresh, how old it is, and how a `304` updates it.
enum CacheRules {
    /// Whether a response to this request may be stored: not when either says `no-store`, not for `Vary: *`, and
    /// only for a success (the statuses the cache keeps) that is the whole response: never a `206`, which holds part
    /// of it (a `Range` is not part of the key, so the part was served to the next request for the URL as the whole;
    /// RFC 9111, 3.3: a cache that does not complete partial responses does not store them).
    static func isStorable(status: Int, response: HTTPHeaders, request: HTTPHeaders) -> Bool {
        guard (200...299).contains(status), status != 206 else { return false }
        if CacheControl(request["Cache-Control"]).has("no-store") { return false }
        if CacheControl(response["Cache-Control"]).has("no-store") { return false }
        if varyNames(response) == nil { return false }
        return true
    }

    /// The request header names a response varies on, lower-cased and sorted; `nil` for `Vary: *` (never matched).
    ///
    /// A name that is not a header name (not an RFC 9110 token) counts as `*`: the cache cannot tell which request
    /// field it means, so the response is never matched rather than served to a request it may not fit.
    static func varyNames(_ response: HTTPHeaders) -> [String]? {
        guard let vary = response["Vary"] else { return [] }
        var names: [String] = []
        for part in vary.unicodeScalars.split(separator: ",") {
            let name = String(part).trimmingCharacters(in: .whitespaces).lowercased()
            if name.isEmpty { continue }
            if name == "*" || !name.utf8.allSatisfy(HTTPMethod.isTokenByte) { return nil }
            if !names.contains(name) { names.append(name) }
        }
        return names.sorted()
    }

    /// The part of a cache key a response's `Vary` adds: each varied request header with its value (or its absence).
    static func variant(_ names: [String], of request: HTTPHeaders) -> String {
        names.map { name in
            // Values compared as sent, with runs of spaces after commas folded (RFC 9111, 4.1).
            let value = request[name].map {
                $0.unicodeScalars.split(separator: ",")
                    .map { String($0).trimmingCharacters(in: .whitespaces) }.joined(separator: ",")
            }
            // Digested: a value may be a credential (`Vary: Authorization`), and keys are written to disk.
            return "\(name):\(value.map { "=" + SHA256Hasher.hex(Data($0.utf8)).prefix(32) } ?? "-")"
        }.joined(separator: "\n")
    }

    /// How long a response stays fresh (section 4.2.1): `max-age`, else `Expires` minus `Date`, else, when
    /// `heuristic` is set and it has `Last-Modified`, a tenth of the time since then (at most a day); else zero.
    static func freshnessLifetime(
        _ response: HTTPHeaders, status: Int, responseTime: Date, heuristic: Bool
    ) -> TimeInterval {
        let control = CacheControl(response["Cache-Control"])
        if let maxAge = control.seconds("max-age") { return TimeInterval(maxAge) }
        let date = response["Date"].flatMap(RetryPolicy.httpDate) ?? responseTime
        if let expires = response["Expires"] {
            // An Expires that is not a valid date means "already expired".
            guard let expiry = RetryPolicy.httpDate(expires) else { return 0 }
            return max(0, expiry.timeIntervalSince(date))
        }
        let heuristicStatuses: Set<Int> = [200, 203, 204, 206, 300, 301, 308, 404, 405, 410, 414, 501]
        if heuristic, heuristicStatuses.contains(status),
            let modified = response["Last-Modified"].flatMap(RetryPolicy.httpDate)
        {
            return min(max(0, date.timeIntervalSince(modified)) / 10, 86_400)
        }
        return 0
    }

    /// How old a stored response is now (section 4.2.3), from its `Date` and `Age` and when it was requested and
    /// received.
    static func currentAge(_ response: HTTPHeaders, requestTime: Date, responseTime: Date, now: Date) -> TimeInterval {
        let ageValue = CacheControl.ageValue(response["Age"])
        let date = response["Date"].flatMap(RetryPolicy.httpDate) ?? responseTime
        let apparentAge = max(0, responseTime.timeIntervalSince(date))
        let responseDelay = max(0, responseTime.timeIntervalSince(requestTime))
        let correctedInitialAge = max(apparentAge, ageValue + responseDelay)
        return correctedInitialAge + max(0, now.timeIntervalSince(responseTime))
    }

    /// The header fields of a stored response after a `304` (section 3.2): the new fields replace the stored ones
    /// of the same name, except the ones that describe the stored body.
    static func updated(_ stored: HTTPHeaders, with notModified: HTTPHeaders) -> HTTPHeaders {
        var headers = stored
        let kept: Set<String> = ["content-length", "content-encoding", "transfer-encoding", "content-range"]
        for field in notModified where !kept.contains(field.name.lowercased()) {
            headers[field.name] = field.value
        }
        return headers
    }
}

extension CacheControl {
    /// An `Age` field's seconds; 0 when absent or not a number.
    static func ageValue(_ field: String?) -> TimeInterval {
        guard let field = field?.trimmingCharacters(in: .whitespaces), !field.isEmpty,
            field.allSatisfy({ $0.isASCII && $0.isNumber })
        else { return 0 }
        return TimeInterval(field) ?? .greatestFiniteMagnitude
    }
}
