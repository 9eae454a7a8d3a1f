import Foundation

/// The directives of a `Cache-Control` field (RFC 9111, section 5.2): names in lower case, with their values
/// (unquoted) when they have one. Repeated fields are joined with `,` before parsing.
struct CacheControl: Sendable, Equatable {
    private(set) var directives: [String: String?] = [:]

    init(_ field: String?) {
        guard let field else { return }
        var index = field.startIndex
        while index < field.endIndex {
            // A directive: token [ "=" ( token / quoted-string ) ], separated by commas.
            let nameEnd = field[index...].firstIndex { $0 == "=" || $0 == "," } ?? field.endIndex
            let name = field[index..<nameEnd].trimmingCharacters(in: .whitespaces).lowercased()
            index = nameEnd
            var value: String?
            if index < field.endIndex, field[index] == "=" {
                index = field.index(after: index)
                while index < field.endIndex, field[index] == " " { index = field.index(after: index) }
                if index < field.endIndex, field[index] == "\"" {
                    var text = ""
                    index = field.index(after: index)
                    while index < field.endIndex, field[index] != "\"" {
                        if field[index] == "\\", field.index(after: index) < field.endIndex {
                            index = field.index(after: index)
                        }
                        text.append(field[index])
                        index = field.index(after: index)
                    }
                    if index < field.endIndex { index = field.index(after: index) }
                    value = text
                } else {
                    let end = field[index...].firstIndex(of: ",") ?? field.endIndex
                    value = field[index..<end].trimmingCharacters(in: .whitespaces)
                    index = end
                }
                index = field[index...].firstIndex(of: ",") ?? field.endIndex
            }
            if index < field.endIndex { index = field.index(after: index) }
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
    /// only for a success (the statuses the cache keeps).
    static func isStorable(status: Int, response: HTTPHeaders, request: HTTPHeaders) -> Bool {
        guard (200...299).contains(status) else { return false }
        if CacheControl(request["Cache-Control"]).has("no-store") { return false }
        if CacheControl(response["Cache-Control"]).has("no-store") { return false }
        if varyNames(response) == nil { return false }
        return true
    }

    /// The request header names a response varies on, lower-cased and sorted; `nil` for `Vary: *` (never matched).
    static func varyNames(_ response: HTTPHeaders) -> [String]? {
        guard let vary = response["Vary"] else { return [] }
        var names: [String] = []
        for part in vary.split(separator: ",") {
            let name = part.trimmingCharacters(in: .whitespaces).lowercased()
            if name == "*" { return nil }
            if !name.isEmpty, !names.contains(name) { names.append(name) }
        }
        return names.sorted()
    }

    /// The part of a cache key a response's `Vary` adds: each varied request header with its value (or its absence).
    static func variant(_ names: [String], of request: HTTPHeaders) -> String {
        names.map { name in
            // Values compared as sent, with runs of spaces after commas folded (RFC 9111, 4.1).
            let value = request[name].map {
                $0.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
                    .joined(separator: ",")
            }
            return "\(name):\(value.map { "=" + $0 } ?? "-")"
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
