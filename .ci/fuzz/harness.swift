// A libFuzzer target over what Switchboard reads from servers and from disk, compiled into the Switchboard module
// itself (so that it reaches internal types) by `.ci/fuzz/run`; not part of the package. The first byte of an input
// picks the target, the rest is the input. Each target must never stop the process, and some check properties:
// - 0, 1: server-sent events and lines give the same elements however the bytes are cut (whole, three pieces, byte
//   by byte);
// - 2: a parsed JSON value written out and parsed again is the same value, directly and through the parameter path;
// - 3, 12: cookies (`CookieRules`, `CookieMaxAge`, `HTTPCookie` beneath), header fields (their bytes read as text
//   lose nothing; a `Content-Range` read is one a file can hold; a download's file name from one is always a single
//   path component);
// - 4: cache rules (a `no-store` directive is always seen); 5: `XML(data:)`; 6: text in a charset; 7: redirect
//   targets; 8: log redaction of a body (and a secret's value never printed, whatever it holds);
// - 9: URLs (composition, validation, redaction; an IPv4 address in an older form is read as `inet_aton` reads
//   it); 10: property lists;
// - 11: typed decoding from the parsed body gives what `JSONDecoder` gives from the bytes.
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

// Fuzz entry: the first byte picks a target, the rest is the input.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOne(_ start: UnsafeRawPointer?, _ count: Int) -> CInt {
    guard let start, count > 0 else { return 0 }
    let all = UnsafeRawBufferPointer(start: start, count: count)
    let target = all[0] % 13
    let data = Data(all.dropFirst())
    let text = String(decoding: data, as: UTF8.self)
    switch target {
    case 0: sseChunking(data)
    case 1: lineChunking(data)
    case 2: jsonRoundTrip(data)
    case 3: cookies(text)
    case 4: cache(text)
    case 5: _ = try? XML(data: data)
    case 6: _ = try? ResponseDecoding.text(of: data, contentType: String(text.prefix(40)))
    case 7: redirects(text)
    case 8: redaction(data, text, limit: Int(all.count % 97))
    case 9: urls(text)
    case 10: plist(data)
    case 11: typed(data)
    default: headers(data, text)
    }
    return 0
}

func cuts(_ data: Data) -> [Data] {
    // Three pieces, at points read off the data itself.
    guard data.count > 2 else { return [data] }
    let a = Int(data[data.startIndex]) % data.count
    let b = Int(data[data.index(before: data.endIndex)]) % data.count
    let (x, y) = (min(a, b), max(a, b))
    let base = data.startIndex
    return [data[base..<base + x], data[base + x..<base + y], data[base + y..<data.endIndex]].map { Data($0) }
}

func sseChunking(_ data: Data) {
    for limit in [Int.max, 16] {
        var whole = ServerSentEventParser(limit: limit)
        var one: [ServerSentEvent] = []
        var oneFailed = false
        do { try whole.push(data) { one.append($0) } } catch { oneFailed = true }
        var split = ServerSentEventParser(limit: limit)
        var many: [ServerSentEvent] = []
        var manyFailed = false
        for piece in cuts(data) where !manyFailed {
            do { try split.push(piece) { many.append($0) } } catch { manyFailed = true }
        }
        // One byte at a time.
        var bytewise = ServerSentEventParser(limit: limit)
        var each: [ServerSentEvent] = []
        var eachFailed = false
        for byte in data where !eachFailed {
            do { try bytewise.push(Data([byte])) { each.append($0) } } catch { eachFailed = true }
        }
        precondition(one == many && oneFailed == manyFailed, "SSE differs by chunking (limit \(limit))")
        precondition(one == each && oneFailed == eachFailed, "SSE differs byte by byte (limit \(limit))")
        if !oneFailed {
            precondition(whole.lastEventID == split.lastEventID && whole.lastEventID == bytewise.lastEventID)
            precondition(whole.reconnectionTime == bytewise.reconnectionTime)
        }
    }
}

func lineChunking(_ data: Data) {
    func run(_ pieces: [Data]) -> [String] {
        var decoder = LineDecoder()
        var lines: [String] = []
        for piece in pieces { try! decoder.push(piece) { lines.append($0) } }
        decoder.finish { lines.append($0) }
        return lines
    }
    let one = run([data])
    precondition(one == run(cuts(data)), "lines differ by chunking")
    precondition(one == run(data.map { Data([$0]) }), "lines differ byte by byte")
}

func jsonRoundTrip(_ data: Data) {
    guard let (value, _) = try? JSON.parsed(data) else { return }
    // Written out and read again: the same value (no number, string or structure changed).
    let text = value.description
    guard let (again, _) = try? JSON.parsed(Data(text.utf8)) else {
        preconditionFailure("JSON's own text does not parse: \(text)")
    }
    precondition(again == value, "JSON changed on a round trip: \(text)")
    precondition(again.description == text, "JSON text not stable")
    // Through the parameter path (envelopes, request bodies).
    var written = ""
    if (try? ParameterValue(value).writeJSON(to: &written, path: "")) != nil {
        guard let (third, _) = try? JSON.parsed(Data(written.utf8)) else {
            preconditionFailure("parameter JSON does not parse: \(written)")
        }
        precondition(third == value, "JSON changed through parameters: \(written) vs \(text)")
    }
}

func cookies(_ text: String) {
    let url = URL(string: "https://a.example.com/account/login")!
    for cookieText in CookieRules.cookieTexts(text) {
        _ = CookieRules.cookie(fromText: cookieText, for: url)
        _ = CookieMaxAge.maxAge(of: cookieText)
        _ = CookieRules.expiry(of: cookieText)
        _ = CookieRules.path(of: cookieText)
    }
    _ = CookieDate.parse(text)
    _ = CookieMaxAge.apply(to: [text], for: url)
    _ = CookieRules.domainMatches(text, "a.example.com")
    _ = CookieRules.pathMatches(text, "/account/x")
}

func cache(_ text: String) {
    let rules = CacheControl(text)
    _ = rules.seconds("max-age")
    _ = rules.seconds("s-maxage")
    var headers = HTTPHeaders()
    headers["Cache-Control"] = text
    headers["Age"] = text
    headers["Expires"] = text
    headers["Date"] = text
    headers["Last-Modified"] = text
    headers["Vary"] = text
    _ = CacheRules.varyNames(headers)
    _ = CacheRules.isStorable(status: 200, response: headers, request: headers)
    _ = CacheRules.currentAge(headers, requestTime: Date(), responseTime: Date(), now: Date())
    if let names = CacheRules.varyNames(headers) { _ = CacheRules.variant(names, of: headers) }
    _ = RetryPolicy.httpDate(text)
    // A `no-store` is seen wherever it stands as a directive of its own: first, or last after text with no quote
    // (a quote may open a quoted value that takes the rest); whatever the text around it holds.
    precondition(CacheControl("no-store," + text).has("no-store"), "no-store first, then \(Array(text.unicodeScalars))")
    if !text.unicodeScalars.contains("\"") {
        precondition(CacheControl(text + ",no-store").has("no-store"), "no-store after \(Array(text.unicodeScalars))")
    }
}

/// Any body is read without stopping the process, and a secret's value never reaches the log, whatever it holds
/// (quotes, backslashes, marks that combine with them, markup): in JSON, in escaped JSON inside a JSON string, in a
/// form body and in a URL's query. The value holds a marker found nowhere else in what is redacted.
func redaction(_ data: Data, _ text: String, limit: Int) {
    _ = Redaction.standard.body(data, limit: limit)
    let marker = "QZXJ"
    // Compared byte for byte: `contains` on a string compares characters, and misses a marker a mark follows.
    guard text.utf8.firstRange(of: marker.utf8) == nil else { return }
    let value = String(text.prefix(200)) + marker + String(text.suffix(20))
    // The secret's name: `password`, then what the text starts with when that is not ASCII (a combining mark that
    // joins the word's last letter, say): the name still holds the word.
    let after = text.unicodeScalars.prefix { !$0.isASCII }.prefix(2)
    let name = "password" + String(String.UnicodeScalarView(after))
    var member = ""
    ParameterValue.writeJSONString(value, to: &member)
    var quotedName = ""
    ParameterValue.writeJSONString(name, to: &quotedName)
    let json = #"{"user":"ada","# + quotedName + ":" + member + #","n":1}"#
    var escaped = ""
    ParameterValue.writeJSONString(json, to: &escaped)
    let encoded = FormEncoding.encode([(key: name, value: .string(value)), (key: "user", value: .string("ada"))])
    let printed = [
        Redaction.standard.body(Data(json.utf8), limit: 100_000),
        Redaction.standard.body(Data((#"{"data":"# + escaped + "}").utf8), limit: 100_000),
        Redaction.standard.body(Data(encoded.utf8), limit: 100_000),
        Redaction.standard.url("https://a.example.com/p?" + encoded),
    ]
    for line in printed {
        precondition(
            line.utf8.firstRange(of: marker.utf8) == nil, "a secret printed: \(line) for \(value.debugDescription)")
    }
}

func redirects(_ text: String) {
    let from = URL(string: "https://a.example.com/x/y?q=1")!
    if let target = Redirects.target(of: text, from: from) {
        _ = Redirects.sameOrigin(from, target)
        _ = Redirects.isFollowable(target)
    }
    _ = Redirects.target(of: text, from: nil)
}

func urls(_ text: String) {
    _ = URLAddress(parsing: text)
    var request = Request()
    request.url = text
    _ = try? URLComposition.validate(text, for: request)
    var composed = Request()
    composed.server = "https://a.example.com/v1/"
    composed.api = text
    _ = try? URLComposition.compose(composed)
    _ = Redaction.standard.url(text)
    _ = Redaction.standard.text(text)
    _ = URLComposition.canonical(text)
    // An IPv4 address in an older form is the address the C library reads in it (`inet_aton`, as libcurl reads it).
    var host = text
    host.withUTF8 { bytes in
        guard let quad = URLComposition.dottedQuad(bytes) else { return }
        var read = in_addr()
        var usual = in_addr()
        precondition(
            inet_aton(text, &read) == 1 && inet_aton(quad, &usual) == 1 && read.s_addr == usual.s_addr,
            "\(text) read as \(quad)")
    }
}

func plist(_ data: Data) {
    if let object = try? PropertyListSerialization.propertyList(from: data, options: [], format: nil) {
        _ = try? JSON(foundation: object)
    }
}

struct Model: Codable, Equatable {
    var i: Int?
    var d: Double?
    var s: String?
    var b: Bool?
    var a: [Int]?
    var m: [String: Int64]?
    var n: Nested?
    var u: UInt64?
    var f: Float?
    var i8: Int8?
    struct Nested: Codable, Equatable {
        var x: [String]?
        var y: Decimal?
    }
}

func typed(_ data: Data) {
    guard let (value, decodable) = try? JSON.parsed(data), decodable else { return }
    let ours = try? JSONValueDecoder.decode(Model.self, from: value)
    let theirs = try? JSONDecoder().decode(Model.self, from: data)
    guard let ours, let theirs else {
        // Documented: a number with a fraction never decodes as an integer here.
        if theirs != nil, ours == nil,
            data.contains(UInt8(ascii: ".")) || data.contains(UInt8(ascii: "e"))
                || data.contains(UInt8(ascii: "E"))
        {
            return
        }
        precondition(
            ours == nil && theirs == nil,
            "typed decode differs: ours \(String(describing: ours)), JSONDecoder \(String(describing: theirs)) for \(String(decoding: data, as: UTF8.self))"
        )
        return
    }
    var a = ours
    var b = theirs
    // Decimal compares by value; NaN never equal: compare descriptions.
    if a != b {
        a.n?.y = nil; b.n?.y = nil
        precondition(
            String(describing: ours) == String(describing: theirs) || a == b,
            "typed values differ: \(ours) vs \(theirs) for \(String(decoding: data, as: UTF8.self))")
    }
}

func headers(_ data: Data, _ text: String) {
    // Header bytes read as text lose nothing: UTF-8 when they are, else one ISO-8859-1 character per byte.
    let received = data.withUnsafeBytes { bytes in HTTPHeaders.receivedText(bytes[...]) }
    let back =
        String(validating: data, as: UTF8.self) != nil
        ? Data(received.utf8) : Data(received.unicodeScalars.map { UInt8(truncatingIfNeeded: $0.value) })
    precondition(back == data, "header bytes changed as text: \(Array(data)) read as \(received.debugDescription)")
    // A range read from `Content-Range` is one a file can hold: it starts before it ends, and ends before the total.
    if let range = ContentRange(text) {
        if let start = range.start, let end = range.end {
            precondition(start >= 0 && start <= end && end < (range.total ?? .max), "\(range) from \(text)")
        } else {
            precondition(range.start == nil && range.end == nil && range.total != nil, "\(range) from \(text)")
        }
    }
    _ = HTTPHeaders.contentLength(text)
    _ = HTTPHeaders.trimmingBlanks(text)
    _ = HTTPHeaders.isEncoding(text)
    var fields = HTTPHeaders()
    for line in text.split(separator: "\n").prefix(40) {
        let parts = line.split(separator: ":", maxSplits: 1)
        if parts.count == 2 { fields.append(receivedName: String(parts[0]), value: String(parts[1])) }
    }
    _ = Redaction.standard.headers(fields)
    _ = CookieRules.cookies(from: [text], for: URL(string: "http://127.0.0.1/a/b")!)
    downloadName(text)
    // Foundation's response, as `Response` makes it when asked, reading the fields it interprets.
    if let foundation = HTTPURLResponse(
        url: URL(string: "http://127.0.0.1/a/b")!, statusCode: 200, httpVersion: "HTTP/1.1",
        headerFields: fields.dictionary)
    {
        _ = foundation.mimeType
        _ = foundation.textEncodingName
        _ = foundation.suggestedFilename
        _ = foundation.expectedContentLength
        _ = foundation.allHeaderFields
    }
}

/// A download's file name from the server (`Content-Disposition`, or a URL's last part) is one path component, in
/// scalars: no slash, no NUL, not hidden (so not `.` or `..`), at most 255 bytes.
func downloadName(_ text: String) {
    for name in [DownloadPlan.fileName(contentDisposition: text), DownloadPlan.sanitize(text)] {
        guard let name else { continue }
        let scalars = name.unicodeScalars
        precondition(!scalars.isEmpty && scalars.first != ".", "a hidden or empty name: \(Array(scalars))")
        precondition(
            !scalars.contains { $0 == "/" || $0 == "\\" || $0 == "\u{0}" }, "not one component: \(Array(scalars))")
        precondition(name.utf8.count <= 255, "a name of \(name.utf8.count) bytes")
    }
}
