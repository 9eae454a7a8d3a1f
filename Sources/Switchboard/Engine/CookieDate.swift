import Foundation

/// A cookie's `Expires` date, read as RFC 6265 section 5.1.1 says a user agent reads it: the first time, day of the
/// month, month and year among the date's tokens, whatever their order and separators, with a two-digit year in
/// 1970-2069. `HTTPCookie` on Linux read the two-digit year of an RFC 850 date (`Thursday, 21-Oct-37`) as the year
/// 37 or so: the cookie was stored already expired, and never sent.
enum CookieDate {
    /// The date, or `nil` when the text is not a cookie date (RFC 6265 then ignores the attribute).
    static func parse(_ text: String) -> Date? {
        var time: (hour: Int, minute: Int, second: Int)?
        var day: Int?
        var month: Int?
        var year: Int?
        for token in text.utf8.split(whereSeparator: isDelimiter) {
            if time == nil, let found = self.time(token) {
                time = found
            } else if day == nil, let found = digits(token, count: 1...2) {
                day = found
            } else if month == nil, let found = self.month(token) {
                month = found
            } else if year == nil, let found = digits(token, count: 2...4) {
                year = found
            }
        }
        guard let time, let day, let month, var year else { return nil }
        if (70...99).contains(year) { year += 1900 } else if (0...69).contains(year) { year += 2000 }
        guard (1...31).contains(day), year >= 1601, time.hour <= 23, time.minute <= 59, time.second <= 59 else {
            return nil
        }
        var components = DateComponents()
        (components.year, components.month, components.day) = (year, month, day)
        (components.hour, components.minute, components.second) = (time.hour, time.minute, time.second)
        // A day the month does not have (`31 Feb`) fails the algorithm, as the RFC says; the calendar would roll it.
        guard let date = utc.date(from: components), utc.component(.day, from: date) == day else {
            return nil
        }
        return date
    }

    /// The Gregorian calendar in UTC, which cookie dates are in.
    private static let utc: Calendar = {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        return calendar
    }()

    /// RFC 6265's delimiters: a tab, and the printable characters that are neither letters, digits nor `:`.
    private static func isDelimiter(_ byte: UInt8) -> Bool {
        switch byte {
        case 0x09, 0x20...0x2F, 0x3B...0x40, 0x5B...0x60, 0x7B...0x7E: true
        default: false
        }
    }

    /// A token that starts with a number of `count` digits (what follows it is ignored, as the RFC's grammar says).
    private static func digits(_ token: Substring.UTF8View.SubSequence, count: ClosedRange<Int>) -> Int? {
        let prefix = token.prefix(while: isDigit)
        guard count.contains(prefix.count), prefix.count == token.count || !isDigit(token[prefix.endIndex]) else {
            return nil
        }
        return prefix.reduce(0) { $0 * 10 + Int($1 - UInt8(ascii: "0")) }
    }

    private static func isDigit(_ byte: UInt8) -> Bool { byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") }

    /// `hh:mm:ss`, each part one or two digits (anything after the seconds' digits is ignored).
    private static func time(_ token: Substring.UTF8View.SubSequence) -> (hour: Int, minute: Int, second: Int)? {
        let parts = token.split(separator: UInt8(ascii: ":"), maxSplits: 2, omittingEmptySubsequences: false)
        guard parts.count == 3, let hour = digits(parts[0], count: 1...2),
            let minute = digits(parts[1], count: 1...2), let second = digits(parts[2], count: 1...2)
        else { return nil }
        // The hour and minute are the whole of their parts; the seconds may be followed by anything but a digit.
        guard parts[0].allSatisfy(isDigit), parts[1].allSatisfy(isDigit) else { return nil }
        return (hour, minute, second)
    }

    /// The month a token's first three letters name (any case), 1-12.
    private static func month(_ token: Substring.UTF8View.SubSequence) -> Int? {
        guard token.count >= 3 else { return nil }
        let name = String(decoding: token.prefix(3), as: UTF8.self).lowercased()
        let months = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"]
        return months.firstIndex(of: name).map { $0 + 1 }
    }
}
