import Foundation
import Switchboard

/// The httpbin-compatible routes of the loopback server, answering as httpbin 0.10 does, so that the same tests run
/// against this server and against a real httpbin.
///
/// `/get /post /put /patch /delete /anything[/…] /headers /user-agent /ip /status/N /delay/N /bytes/N /drip /xml
/// /html /json /stream/N /redirect/N /relative-redirect/N /absolute-redirect/N /redirect-to /basic-auth/U/P /cookies
/// /cookies/set /cache /cache/N /etag/E /response-headers`; anything else
/// is httpbin's HTML 404 page. Routes of the loopback server's own, for tests httpbin cannot serve:
/// `/fail-times/N/KEY`, `/cookie-jar/…?set=FIELD` (sets each `Set-Cookie` field given, echoes the cookies sent),
/// `/files/N` (ranges, ETags, dropped connections), `/sse` (server-sent events), `/long-line` (a line or event longer
/// than a stream holds), `/sink`
/// (hashes uploads as they stream; `pause=S` reads slowly, `gate=KEY` waits at a `SinkGate`),
/// `/discard` (counts uploads and drops them), `/refuse-body` (a `413` as soon as the head is read, answered by the
/// connection itself), `/stall-body?seconds=S` (reads the head, then nothing for S seconds, then drops the connection),
/// `/request-line` (the method, target and version as read: a request sent through a proxy has a whole URL as its
/// target), `/drop-reused` (drops a reused connection without answering) and `/close-reused[?every=1]` (closes a
/// reused connection, or any, as soon as the request's head is read).
public enum Httpbin {
    /// Answers one request.
    public static func route(_ request: ServerRequest) -> ServerResponse {
        let segments = request.path.split(separator: "/").map(String.init)
        guard let first = segments.first else { return notFound() }
        let rest = Array(segments.dropFirst())
        switch (first, rest.count) {
        case ("get", 0): return method(request, "GET") ?? .json(echo(request, body: false))
        case ("post", 0): return method(request, "POST") ?? .json(echo(request, body: true))
        case ("put", 0): return method(request, "PUT") ?? .json(echo(request, body: true))
        case ("patch", 0): return method(request, "PATCH") ?? .json(echo(request, body: true))
        case ("delete", 0): return method(request, "DELETE") ?? .json(echo(request, body: true))
        case ("anything", _):
            var object = echo(request, body: true)
            object["method"] = request.method
            return .json(object)
        case ("headers", 0): return .json(["headers": headers(request)])
        case ("request-line", 0):
            // As the server read it: a proxy gets the whole URL as the target (absolute form), a server the path.
            return .json([
                "method": request.method, "target": request.target, "version": request.version,
                "headers": headers(request),
            ])
        case ("user-agent", 0): return .json(["user-agent": request.header("User-Agent") ?? ""])
        case ("ip", 0): return .json(["origin": "127.0.0.1"])
        case ("status", 1): return status(rest[0])
        case ("delay", 1):
            var response = ServerResponse.json(echo(request, body: true))
            response.delay = min(Double(rest[0]) ?? 0, 10)
            return response
        case ("bytes", 1): return bytes(Int(rest[0]) ?? 0, seed: request.queryValue("seed").flatMap { UInt64($0) })
        case ("drip", 0): return drip(request)
        case ("stream", 1): return stream(request, count: Int(rest[0]) ?? 0)
        case ("sse", 0): return serverSentEvents(request)
        case ("long-line", 0): return longLine(request)
        case ("xml", 0): return .text(sampleXML, type: "application/xml")
        case ("html", 0): return .text(sampleHTML, type: "text/html; charset=utf-8")
        case ("json", 0): return .json(sampleJSON)
        case ("redirect", 1), ("relative-redirect", 1):
            guard let count = Int(rest[0]), count > 0 else { return notFound() }
            return redirect(to: count == 1 ? "/get" : "/\(first)/\(count - 1)")
        case ("absolute-redirect", 1):
            guard let count = Int(rest[0]), count > 0 else { return notFound() }
            let base = "http://\(request.header("Host") ?? "127.0.0.1")"
            return redirect(to: count == 1 ? "\(base)/get" : "\(base)/absolute-redirect/\(count - 1)")
        case ("redirect-to", 0):
            guard let url = request.queryValue("url") else { return .text("missing url", status: 400) }
            return redirect(to: url, status: Int(request.queryValue("status_code") ?? "") ?? 302)
        case ("basic-auth", 2): return basicAuth(request, user: rest[0], password: rest[1])
        case ("cookies", 0): return .json(["cookies": cookies(request)])
        case ("cache", 0):
            // 304 for any conditional request; otherwise the GET echo with a Last-Modified of now and a new ETag.
            guard request.header("If-Modified-Since") == nil, request.header("If-None-Match") == nil else {
                return ServerResponse(status: 304)
            }
            var response = ServerResponse.json(echo(request, body: false))
            response.headers.append(("Last-Modified", httpDate(Date())))
            response.headers.append(("ETag", UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased()))
            return response
        case ("cache", 1):
            guard let seconds = Int(rest[0]) else { return notFound() }
            var response = ServerResponse.json(echo(request, body: false))
            response.headers.append(("Cache-Control", "public, max-age=\(seconds)"))
            return response
        case ("etag", 1): return etag(rest[0], request: request)
        case ("response-headers", 0):
            guard ["GET", "HEAD", "POST"].contains(request.method) else {
                var response = ServerResponse.text(methodNotAllowedPage, status: 405, type: "text/html; charset=utf-8")
                response.headers.append(("Allow", "GET, HEAD, OPTIONS, POST"))
                return response
            }
            return responseHeaders(request)
        case ("cookies", 1) where rest[0] == "set":
            var response = redirect(to: "/cookies")
            for (name, value) in request.queryItems {
                response.headers.append(("Set-Cookie", "\(name)=\(value); Path=/"))
            }
            return response
        case ("cookie-jar", _):
            // Loopback only, at any path under `/cookie-jar/`: each `set` of the query as a `Set-Cookie` field of its
            // own, exactly as given, and the cookies the request carried.
            var response = ServerResponse.json(["cookies": cookies(request)])
            for (name, value) in request.queryItems where name == "set" {
                response.headers.append(("Set-Cookie", value))
            }
            return response
        case ("echo-body", 0):
            // Loopback only: the request's body as the response's, with the request's `Content-Type`.
            return ServerResponse(
                status: 200,
                headers: [("Content-Type", request.header("Content-Type") ?? "application/octet-stream")],
                body: request.body)
        case ("fault", 1): return fault(rest[0], request: request)
        case ("signed", _): return signed(request)
        case ("arrivals", 1): return arrival(key: rest[0], request: request)
        case ("arrivals-peak", 1): return arrivalPeak(key: rest[0], request: request)
        case ("fail-times", 2): return failTimes(Int(rest[0]) ?? 0, key: rest[1], request: request)
        case ("files", 1): return files(request, length: Int(rest[0]) ?? 0)
        case ("bearer-only", 1):
            // Loopback only: 401 unless `Authorization: Bearer TOKEN`.
            guard request.header("Authorization") == "Bearer \(rest[0])" else {
                return ServerResponse(status: 401, headers: [("WWW-Authenticate", "Bearer")])
            }
            return .json(["authenticated": true, "token": rest[0]])
        case ("sink", _): return sink(request)
        case ("discard", _):
            // Loopback only: the body's length, counted and dropped (for benchmarks; `/sink` also hashes it).
            return .json(["length": request.streamed?.length ?? 0, "chunked": request.wasChunked])
        case ("drop-reused", _), ("close-reused", _):
            // Loopback only: drops a reused keep-alive connection without answering (`/close-reused`: closes it
            // before the body is read, in ServerConnection); on a new one, answers the length and SHA-256 of the body.
            guard request.indexOnConnection == 0 else {
                var dropped = ServerResponse(status: 500)
                dropped.dropWithoutAnswer = true
                return dropped
            }
            return .json([
                "length": request.body.count, "sha256": BodyDigest.hex(request.body), "method": request.method,
            ])
        case ("files-bump", 1): return bump(rest[0])
        case ("files-fail", 1): return fail(rest[0])
        default: return notFound()
        }
    }

    // MARK: - Echo

    /// httpbin's echo object: args, headers, origin, url, and for body routes data, files, form, json.
    static func echo(_ request: ServerRequest, body: Bool) -> [String: Any] {
        var object: [String: Any] = [
            "args": multiDictionary(request.queryItems),
            "headers": headers(request),
            "origin": "127.0.0.1",
            "url": "http://\(request.header("Host") ?? "127.0.0.1")\(request.target)",
        ]
        guard body else { return object }
        let type = request.header("Content-Type")?.lowercased() ?? ""
        var form: [String: Any] = [:]
        var files: [String: Any] = [:]
        var data = ""
        if type.hasPrefix("application/x-www-form-urlencoded") {
            form = multiDictionary(FormDecoding.pairs(String(decoding: request.body, as: UTF8.self)))
        } else if type.hasPrefix("multipart/form-data"), let parts = Multipart.parse(request) {
            form = multiDictionary(
                parts.filter { $0.fileName == nil }.map { ($0.name, String(decoding: $0.body, as: UTF8.self)) })
            files = multiDictionary(
                parts.filter { $0.fileName != nil }.map { part in
                    let text =
                        String(data: part.body, encoding: .utf8)
                        ?? "data:\(part.contentType ?? "application/octet-stream");base64,\(part.body.base64EncodedString())"
                    return (part.name, text)
                })
        } else {
            data =
                String(data: request.body, encoding: .utf8)
                ?? "data:application/octet-stream;base64," + request.body.base64EncodedString()
        }
        object["data"] = data
        object["files"] = files
        object["form"] = form
        object["json"] =
            (try? JSONSerialization.jsonObject(with: request.body, options: [.fragmentsAllowed]))
            ?? NSNull()
        return object
    }

    /// Header names title-cased as werkzeug prints them (`x-custom-id` becomes `X-Custom-Id`).
    static func headers(_ request: ServerRequest) -> [String: String] {
        var result: [String: String] = [:]
        for (name, value) in request.headers {
            let titled = titleCase(name)
            result[titled] = result[titled].map { $0 + "," + value } ?? value
        }
        return result
    }

    static func titleCase(_ name: String) -> String {
        var result = ""
        var upper = true
        for character in name {
            result += upper ? character.uppercased() : character.lowercased()
            upper = !character.isLetter
        }
        return result
    }

    private static func multiDictionary(_ pairs: [(name: String, value: String)]) -> [String: Any] {
        var result: [String: Any] = [:]
        for (name, value) in pairs {
            switch result[name] {
            case nil: result[name] = value
            case let existing as String: result[name] = [existing, value]
            case let existing as [String]: result[name] = existing + [value]
            default: break
            }
        }
        return result
    }

    // MARK: - Other routes

    /// The `Cookie` header as name-value pairs.
    private static func cookies(_ request: ServerRequest) -> [String: String] {
        var result: [String: String] = [:]
        for pair in (request.header("Cookie") ?? "").split(separator: ";") {
            let parts = pair.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
            if parts.count == 2 { result[parts[0]] = parts[1] }
        }
        return result
    }

    private static func method(_ request: ServerRequest, _ allowed: String) -> ServerResponse? {
        guard request.method != allowed, !(allowed == "GET" && request.method == "HEAD") else { return nil }
        var response = ServerResponse.text(methodNotAllowedPage, status: 405, type: "text/html; charset=utf-8")
        response.headers.append(("Allow", allowed == "GET" ? "GET, HEAD, OPTIONS" : "\(allowed), OPTIONS"))
        return response
    }

    private static func status(_ code: String) -> ServerResponse {
        guard let status = Int(code), (100...599).contains(status) else {
            return .text("Invalid status code", status: 400)
        }
        var response = ServerResponse(status: status)
        switch status {
        case 301, 302, 303, 305, 307: response.headers.append(("Location", "/redirect/1"))
        case 401: response.headers.append(("WWW-Authenticate", "Basic realm=\"Fake Realm\""))
        case 418: response.body = Data("\n    -=[ teapot ]=-\n".utf8)
        default: break
        }
        return response
    }

    private static func bytes(_ count: Int, seed: UInt64?) -> ServerResponse {
        var generator = SplitMix(seed: seed ?? UInt64.random(in: 0...UInt64.max))
        var body = Data(count: max(0, count))
        body.withUnsafeMutableBytes { buffer in
            for index in buffer.indices { buffer[index] = UInt8(truncatingIfNeeded: generator.next()) }
        }
        return ServerResponse(status: 200, headers: [("Content-Type", "application/octet-stream")], body: body)
    }

    /// `/stream/N`: N JSON objects (at most 100), one per line, each the request's echo with an `id` from 0, sent
    /// close-delimited a line at a time (httpbin sends them chunked).
    private static func stream(_ request: ServerRequest, count: Int) -> ServerResponse {
        let count = max(0, min(count, 100))
        var body = Data()
        for id in 0..<count {
            var object = echo(request, body: false)
            object["id"] = id
            body += (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data()
            body += Data("\n".utf8)
        }
        var response = ServerResponse(headers: [("Content-Type", "application/json")], body: body)
        response.closeDelimited = true
        if count > 1 { response.drip = (count, 0.001) }
        return response
    }

    /// `/sse?count=N&interval=S&drop=K&retry=MS&crlf=1` (loopback only): server-sent events 1 to N, each with a
    /// comment, `id: i`, `event: tick` and two `data:` lines (`tick i` and `of N`), one every S seconds, sent
    /// close-delimited. With `Last-Event-ID: j` it goes on after event j, and answers `204` when nothing is left;
    /// with `drop=K` the connection ends after K events (`torn=1`: in the middle of the next one, after its `id`);
    /// `retry` sends a reconnection time first; `crlf=1` ends lines
    /// with CRLF; `token=T` answers `401` unless the request has `Authorization: Bearer T`.
    private static func serverSentEvents(_ request: ServerRequest) -> ServerResponse {
        if let token = request.queryValue("token"), request.header("Authorization") != "Bearer \(token)" {
            return .json(["error": "the token is not \(token)"], status: 401)
        }
        let count = Int(request.queryValue("count") ?? "") ?? 3
        let after = Int(request.header("Last-Event-ID") ?? "") ?? 0
        guard after < count else { return ServerResponse(status: 204) }
        let drop = Int(request.queryValue("drop") ?? "") ?? count
        let newline = request.queryValue("crlf") == "1" ? "\r\n" : "\n"
        var text = request.queryValue("retry").map { "retry: \($0)\(newline)\(newline)" } ?? ""
        let last = min(count, after + drop)
        for index in (after + 1)...last {
            text += ": event \(index) follows\(newline)id: \(index)\(newline)event: tick\(newline)"
            text += "data: tick \(index)\(newline)data: of \(count)\(newline)\(newline)"
        }
        if request.queryValue("torn") == "1", last < count {
            // An event the connection cuts off before its blank line: its id must not count.
            text += "id: \(last + 1)\(newline)data: cut off"
        }
        var response = ServerResponse(
            headers: [("Content-Type", "text/event-stream"), ("Cache-Control", "no-cache")] + setCookie(request),
            body: Data(text.utf8))
        response.closeDelimited = true
        let pieces = last - after
        if let interval = Double(request.queryValue("interval") ?? ""), pieces > 1 {
            response.drip = (pieces, interval)
        }
        return response
    }

    /// `/long-line?length=N&pieces=P&interval=S[&sse=1]`: a line of N bytes (`a`) and its line break, sent in P
    /// pieces S seconds apart; with `sse=1`, as the data of one server-sent event, after a short event before it
    /// (`data: before`); with `sse=lines`, as N bytes of data in lines of 100 that no blank line closes.
    private static func longLine(_ request: ServerRequest) -> ServerResponse {
        let length = max(0, Int(request.queryValue("length") ?? "") ?? 0)
        let line = String(repeating: "a", count: length)
        let text: String
        switch request.queryValue("sse") {
        case "1": text = "data: before\n\ndata: \(line)\n\n"
        case "lines":
            let lines = stride(from: 0, to: length, by: 100).map { start in
                "data: " + String(line.prefix(min(100, length - start)))
            }
            text = "data: before\n\n" + lines.joined(separator: "\n") + "\n"
        default: text = "before\n\(line)\nafter\n"
        }
        let sse = request.queryValue("sse") != nil
        var response = ServerResponse(
            headers: [("Content-Type", sse ? "text/event-stream" : "text/plain")], body: Data(text.utf8))
        let pieces = Int(request.queryValue("pieces") ?? "") ?? 1
        if pieces > 1 { response.drip = (pieces, Double(request.queryValue("interval") ?? "") ?? 0.01) }
        return response
    }

    /// `/drip?numbytes=N&duration=S&delay=D&code=C`: N bytes of `*` spread over S seconds, after D seconds.
    private static func drip(_ request: ServerRequest) -> ServerResponse {
        let count = Int(request.queryValue("numbytes") ?? "") ?? 10
        let duration = Double(request.queryValue("duration") ?? "") ?? 2
        var response = ServerResponse(
            status: Int(request.queryValue("code") ?? "") ?? 200,
            headers: [("Content-Type", "application/octet-stream")],
            body: Data(repeating: UInt8(ascii: "*"), count: max(0, count)))
        response.delay = Double(request.queryValue("delay") ?? "") ?? 0
        if count > 1 { response.drip = (count, duration / Double(count)) }
        return response
    }

    /// `/etag/E`: a resource whose ETag is E (sent unquoted, as httpbin does): `If-None-Match` with E (or `*`) is a
    /// 304; `If-Match` without it a 412; otherwise the GET echo.
    private static func etag(_ etag: String, request: ServerRequest) -> ServerResponse {
        func tags(_ field: String?) -> [String] {
            (field ?? "").split(separator: ",").map { part in
                var tag = part.trimmingCharacters(in: .whitespaces)
                if tag.hasPrefix("W/") { tag.removeFirst(2) }
                return tag.trimmingCharacters(in: CharacterSet(charactersIn: "\""))
            }.filter { !$0.isEmpty }
        }
        let noneMatch = tags(request.header("If-None-Match"))
        let match = tags(request.header("If-Match"))
        if !noneMatch.isEmpty {
            if noneMatch.contains(etag) || noneMatch.contains("*") {
                return ServerResponse(status: 304, headers: [("ETag", etag)])
            }
        } else if !match.isEmpty, !match.contains(etag), !match.contains("*") {
            return ServerResponse(status: 412)
        }
        var response = ServerResponse.json(echo(request, body: false))
        response.headers.append(("ETag", etag))
        return response
    }

    /// `/response-headers?K=V&…`: each query item as a response header, and a JSON object of the response's headers
    /// (those and `Content-Type`, `Content-Length`) as the body.
    private static func responseHeaders(_ request: ServerRequest) -> ServerResponse {
        let items = request.queryItems
        var length = 0
        var body = Data()
        // The body names its own length: settle it as httpbin does, until it stops changing.
        for _ in 0..<4 {
            var object: [String: Any] = ["Content-Type": "application/json", "Content-Length": String(length)]
            for (name, value) in items {
                if let existing = object[name] {
                    object[name] = ((existing as? [String]) ?? [existing as? String ?? ""]) + [value]
                } else {
                    object[name] = value
                }
            }
            body = ServerResponse.json(object).body
            if body.count == length { break }
            length = body.count
        }
        var headers: [(name: String, value: String)] = [("Content-Type", "application/json")]
        headers += items.map { ($0.name, $0.value) }
        return ServerResponse(status: 200, headers: headers, body: body)
    }

    /// An IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`), as servers write `Date`, `Expires` and `Last-Modified`.
    public static func httpDate(_ date: Date) -> String {
        dateFormatter.withLock { $0.string(from: date) }
    }

    /// One formatter for every response's `Date` (the benchmark's server writes thousands a second); a formatter is
    /// not safe to share unlocked.
    private static let dateFormatter: ServerLock<DateFormatter> = {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        return ServerLock(formatter)
    }()

    private static func redirect(to location: String, status: Int = 302) -> ServerResponse {
        ServerResponse(status: status, headers: [("Location", location), ("Content-Type", "text/html; charset=utf-8")])
    }

    private static func basicAuth(_ request: ServerRequest, user: String, password: String) -> ServerResponse {
        let expected = "Basic " + Data("\(user):\(password)".utf8).base64EncodedString()
        guard request.header("Authorization") == expected else {
            // Unlike httpbin, the loopback 401 has a body, so a test can see that an engine keeps it.
            var response = ServerResponse.json(["authenticated": false, "reason": "no credentials"])
            response.status = 401
            response.headers.append(("WWW-Authenticate", "Basic realm=\"Fake Realm\""))
            return response
        }
        return .json(["authenticated": true, "user": user])
    }

    /// `/fault/NAME` (loopback only): a server misbehaving in one way, for the fault suite.
    /// - `garbage-status`: a status line that is not HTTP.
    /// - `drip?interval=S&bytes=N`: N body bytes, one every S seconds.
    /// - `stall-after-head?seconds=S`: the head, then nothing for S seconds, then the body.
    /// - `header-flood?count=N&size=B`: N extra header fields of B bytes each.
    /// - `reset`: a TCP reset as soon as the request is read; `reset?after=N`: after the head and N body bytes.
    /// - `truncated?length=L&after=N`: announces L body bytes, sends N, closes.
    /// - `empty-reply`: closes without a byte.
    /// - `http09`: an HTTP/0.9 answer, the body alone without a status line, then closes.
    /// - `bad-chunk`: a chunked body whose chunk size is not hexadecimal.
    /// - `folded-header`, `utf8-header`, `latin1-header`, `lf-header`: a `200` whose `X-Name` field is folded onto a
    ///   second line (obs-fold; `first second`), in UTF-8 (`café ☕`), in ISO-8859-1 (`café`, the `é` one byte), or
    ///   whose head's lines end in a bare LF (`lf`).
    /// - `repeated-header`, `padded-header`, `space-before-colon`, `no-reason-phrase`: a `200` with `X-Name` three
    ///   times (`a`, `b`, then as `x-name`, `c`), with blanks around its value (`v w`) and an empty `X-Empty`, with a
    ///   space before its colon (`v`), or a status line without a reason phrase (`HTTP/1.1 200`).
    /// - `cookie-fields`: a `Set-Cookie` field for `plain`, one for `guarded` marked `Secure`, then a malformed one.
    /// - `unreadable-cookies`: cookies `HTTPCookie` on Linux could not read (a flag in a name, a name with a combining
    ///   accent, an attribute named with a flag, a control character, a value whose `=` a combining accent joins,
    ///   with another `=` after it), among four it can (`kept` with `Path=/`, `plain`, `held` with `Path=/`, whose
    ///   `Max-Age` has such a `=`, and `dated`, whose `Expires` date ends with a combining mark, U+07F2).
    /// - `lowercase-cookies`: cookies set by `set-cookie` fields, as HTTP/2 spells every name (`lower`, `other`), and
    ///   one that deletes `gone` (`Max-Age=0`); `lowercase-cookies?redirect=1`: the same fields on a `302` to
    ///   `/cookies`.
    /// - `lowercase-status`: the same with its status line's protocol in lower case (`http/1.1 200 OK`).
    /// - `unasked-upgrade`: a `101 Switching Protocols` no request asked for, then bytes of another protocol.
    /// - `trailer`: a chunked body `hello` followed by a trailer field (`X-Checksum`).
    /// - `unknown-encoding`: a body in a `Content-Encoding` no client knows (`x-unknown`).
    /// - `header-without-colon`, `nul-in-header`: a head with a field line that has no colon, or a NUL byte.
    /// - `field-line?line=TEXT`: a head with TEXT as one of its field lines, exactly as given.
    /// - `bytes?hex=HEX[&encoding=CODING]`: a `200` whose body is the bytes HEX spells, with that `Content-Encoding`.
    /// - `redirect-answer?status=S[&to=LOCATION][&length=N]`: a redirect status with a body of N bytes (4 unless
    ///   given), and a `Location` only when given.
    /// - `downgrade?to=URL&status=S`: a redirect to URL (an `http://` one, served over TLS by a test's own server).
    /// - `lengths?fields=A|B[&status=S]`: a response (`200` unless given; a `401` asks for Basic credentials, a `3xx`
    ///   points to `/get`) with a `Content-Length` field for each of A, B, ..., written as given, and as many bytes
    ///   of body as the largest value's leading digits say, after any `+` (none when they pass `Int.max`).
    /// - `location?to=REFERENCE&status=S[&also=REFERENCE]`: the same redirect, for a `Location` that is a relative
    ///   reference; with `also`, a second `Location` field after the first.
    ///
    /// `truncated`, `lengths` and `location` (and `/sse`) also take `cookie=NAME=VALUE`: a `Set-Cookie` field for that
    /// cookie, with `Path=/`.
    private static func fault(_ name: String, request: ServerRequest) -> ServerResponse {
        let number = { (key: String, fallback: Double) in Double(request.queryValue(key) ?? "") ?? fallback }
        let body = Data((0..<64).map { UInt8(ascii: "a") + UInt8($0 % 26) })
        switch name {
        case "garbage-status":
            var response = ServerResponse.text("ok")
            response.rawHead = Data("HTJP/1.1 2OO SURE\r\nContent-Length: 2\r\n\r\n".utf8)
            return response
        case "drip":
            let count = Int(number("bytes", 4))
            var response = ServerResponse(
                headers: [("Content-Type", "application/octet-stream")],
                body: Data(repeating: UInt8(ascii: "*"), count: count))
            response.drip = (count, number("interval", 1))
            return response
        case "stall-after-head":
            var response = ServerResponse(headers: [("Content-Type", "application/octet-stream")])
            response.generated = (body.count, { offset, count in body.subdata(in: offset..<offset + count) })
            response.pause = (0, min(number("seconds", 5), 30))
            return response
        case "header-flood":
            var response = ServerResponse.text("flood")
            let size = max(1, Int(number("size", 100)))
            for index in 0..<Int(number("count", 1000)) {
                response.headers.append(("X-Flood-\(index)", String(repeating: "f", count: size)))
            }
            return response
        case "reset":
            var response = ServerResponse(headers: [("Content-Type", "application/octet-stream")], body: body)
            response.reset = request.queryValue("after").flatMap { Int($0) }.map { .afterBody($0) } ?? .beforeAnswer
            return response
        case "truncated":
            let length = Int(number("length", 1000))
            var response = ServerResponse(
                headers: [("Content-Type", "application/octet-stream")] + setCookie(request),
                body: Data(repeating: UInt8(ascii: "t"), count: length))
            response.truncateAfter = Int(number("after", 500))
            return response
        case "cookie-fields":
            // A `Secure` cookie, then a malformed field: joined with `, `, the second reads as the first's attribute.
            return raw(
                "HTTP/1.1 200 OK\r\nSet-Cookie: plain=1; Path=/\r\nSet-Cookie: guarded=2; Path=/; Secure\r\n"
                    + "Set-Cookie: =novalue\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok")
        case "unreadable-cookies":
            return raw(
                "HTTP/1.1 200 OK\r\nSet-Cookie: \u{1F1EB}\u{1F1F7}x=1\r\nSet-Cookie: kept=1; \u{1F1EB}\u{1F1F7}=x; Path=/\r\n"
                    + "Set-Cookie: e\u{301}=3\r\nSet-Cookie: ctl=a\u{1}b\r\nSet-Cookie: plain=2\r\n"
                    + "Set-Cookie: fused=\u{301}=x\r\nSet-Cookie: held=4; Max-Age=\u{301}5=; Path=/\r\n"
                    + "Set-Cookie: dated=5; Expires=Wed, 21 Oct 2037 07:28:00 GMT\u{7F2}; Path=/\r\n"
                    + "Content-Length: 2\r\nConnection: close\r\n\r\nok")
        case "lowercase-cookies":
            let redirects = request.queryValue("redirect") != nil
            return raw(
                (redirects ? "HTTP/1.1 302 Found\r\nLocation: /cookies\r\n" : "HTTP/1.1 200 OK\r\n")
                    + "set-cookie: lower=1; Path=/\r\nset-cookie: other=2; Path=/\r\n"
                    + "set-cookie: gone=; Max-Age=0; Path=/\r\nContent-Length: 2\r\n\r\nok")
        case "unasked-upgrade":
            // A `101` no request asked for (no `Upgrade` field), then bytes of another protocol.
            return raw(
                "HTTP/1.1 101 Switching Protocols\r\nUpgrade: other\r\nConnection: Upgrade\r\n\r\nxx")
        case "lowercase-status":
            return rawAnswer("X-Name: v", statusLine: "http/1.1 200 OK")
        case "empty-reply":
            return raw("")
        case "http09":
            // An HTTP/0.9 answer: the body alone, no status line or fields, then the connection closes.
            return raw("<html>hello from an old server</html>\n")
        case "bad-chunk":
            return raw(
                "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\nZZ\r\nhello\r\n0\r\n\r\n")
        case "folded-header":
            return rawAnswer("X-Name: first\r\n  second")
        case "utf8-header":
            return rawAnswer("X-Name: caf\u{E9} \u{2615}")
        case "latin1-header":
            return rawAnswer("X-Name: caf\u{E9}", latin1: true)
        case "lf-header":
            return rawAnswer("X-Name: lf", lineEnd: "\n")
        case "repeated-header":
            return rawAnswer("X-Name: a\r\nX-Name: b\r\nx-name: c")
        case "padded-header":
            return rawAnswer("X-Name: \t v w \t\r\nX-Empty:")
        case "space-before-colon":
            return rawAnswer("X-Name : v")
        case "no-space-after-colon":
            return rawAnswer("X-Name:v")
        case "no-reason-phrase":
            return rawAnswer("X-Name: v", statusLine: "HTTP/1.1 200")
        case "trailer":
            // A chunked body followed by a trailer field, as a server that adds one after the body sends it.
            return raw(
                "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTrailer: X-Checksum\r\nConnection: close\r\n\r\n"
                    + "5\r\nhello\r\n0\r\nX-Checksum: 5d41402a\r\n\r\n")
        case "unknown-encoding":
            return rawAnswer("Content-Encoding: x-unknown")
        case "header-without-colon":
            return rawAnswer("X-No-Colon")
        case "field-line":
            return rawAnswer(request.queryValue("line") ?? "")
        case "bytes":
            // The body as the hex digits given, with the `Content-Encoding` given: a compressed body made ahead, or
            // one cut short.
            let hex = Array((request.queryValue("hex") ?? "").utf8)
            let bytes = stride(from: 0, to: hex.count - 1, by: 2).compactMap {
                UInt8(String(decoding: hex[$0...$0 + 1], as: UTF8.self), radix: 16)
            }
            var headers = [("Content-Type", "application/octet-stream")]
            if let encoding = request.queryValue("encoding") { headers.append(("Content-Encoding", encoding)) }
            return ServerResponse(status: 200, headers: headers, body: Data(bytes))
        case "nul-in-header":
            return rawAnswer("X-Name: a\u{0}b")
        case "redirect-answer":
            let length = Int(number("length", 4))
            var head = "HTTP/1.1 \(Int(number("status", 302))) Redirect\r\n"
            if let target = request.queryValue("to") { head += "Location: \(target)\r\n" }
            head += "Content-Length: \(length)\r\nConnection: close\r\n\r\n"
            return raw(head + String(repeating: "b", count: length))
        case "lengths":
            // `Content-Length` fields as given (`|` between fields), then as many bytes as the largest says.
            let fields = (request.queryValue("fields") ?? "5").split(separator: "|").map(String.init)
            let length =
                fields.flatMap { $0.split(separator: ",") }.compactMap {
                    Int($0.trimmingCharacters(in: .whitespaces).drop { $0 == "+" }.prefix { $0.isNumber })
                }.max() ?? 0
            let status = Int(number("status", 200))
            var head = "HTTP/1.1 \(status) Reason\r\n"
            if status == 401 { head += "WWW-Authenticate: Basic realm=\"switchboard\"\r\n" }
            if (300..<400).contains(status) { head += "Location: /get\r\n" }
            for field in fields { head += "Content-Length: \(field)\r\n" }
            for (name, value) in setCookie(request) { head += "\(name): \(value)\r\n" }
            return raw(head + "Connection: close\r\n\r\n" + String(repeating: "x", count: length))
        case "downgrade", "location":
            var response = ServerResponse(status: Int(number("status", 302)))
            response.headers.append(("Location", request.queryValue("to") ?? "http://127.0.0.1:1/"))
            if let second = request.queryValue("also") { response.headers.append(("Location", second)) }
            response.headers += setCookie(request)
            return response
        default:
            return notFound()
        }
    }

    /// The `Set-Cookie` field a fault route adds for its `cookie` query value, if it has one.
    private static func setCookie(_ request: ServerRequest) -> [(name: String, value: String)] {
        request.queryValue("cookie").map { [(name: "Set-Cookie", value: $0 + "; Path=/")] } ?? []
    }

    /// A response written as is, head and body: `text` in UTF-8.
    private static func raw(_ text: String) -> ServerResponse {
        var response = ServerResponse()
        response.rawHead = Data(text.utf8)
        return response
    }

    /// A `200` with body `ok` and this field (or fields), written as is: its text in UTF-8, or in ISO-8859-1 with
    /// `latin1`, every line ending in `lineEnd`.
    private static func rawAnswer(
        _ field: String, latin1: Bool = false, lineEnd: String = "\r\n", statusLine: String = "HTTP/1.1 200 OK"
    ) -> ServerResponse {
        let lines = [statusLine, "Content-Length: 2", field, "Connection: close", "", "ok"]
        let text = lines.joined(separator: lineEnd)
        var response = ServerResponse()
        response.rawHead = latin1 ? text.data(using: .isoLatin1)! : Data(text.utf8)
        return response
    }

    /// The key `/signed` checks signatures with.
    public static let signingKey = Data("switchboard-loopback-signing-key".utf8)

    /// `/signed/...` (loopback only, any method): checks an HMAC-SHA256 request signature as a server would, from the
    /// request as it arrived: the method, the request target, `X-Signature-Time`, and the SHA-256 of the body read
    /// (or, for `/signed/sink`-style streamed bodies, as hashed on arrival). 200 with `{"valid": true}`, else 401
    /// with what was expected.
    private static func signed(_ request: ServerRequest) -> ServerResponse {
        let bodyHash = request.streamed?.sha256 ?? BodyDigest.hex(request.body)
        let lines = [request.method, request.target, request.header("X-Signature-Time") ?? "", bodyHash]
        let code = SHA256Hasher.hmac(key: signingKey, message: Data(lines.joined(separator: "\n").utf8))
            .map { String(format: "%02x", $0) }.joined()
        let presented = request.header("X-Signature")?.split(separator: ",")
            .first { $0.hasPrefix("signature=") }.map { String($0.dropFirst("signature=".count)) }
        let keyID = request.header("X-Signature")?.split(separator: ",")
            .first { $0.hasPrefix("keyId=") }.map { String($0.dropFirst("keyId=".count)) }
        guard presented == code else {
            return .json(["valid": false, "signed": lines], status: 401)
        }
        return .json([
            "valid": true, "keyId": keyID ?? "", "bodyLength": request.streamed?.length ?? request.body.count,
        ])
    }

    /// Arrival times per key seen by `/arrivals/KEY`, in seconds of the server's monotonic clock.
    private static let arrivals = ServerLock<[String: [Double]]>([:])

    /// `/arrivals/KEY?delay=S` (loopback only): notes when the request arrived, then answers after S seconds (at most
    /// 120).
    private static func arrival(key: String, request: ServerRequest) -> ServerResponse {
        let now = Double(DispatchTime.now().uptimeNanoseconds) / 1e9
        arrivals.withLock { $0[key, default: []].append(now) }
        var response = ServerResponse.json(["key": key])
        response.delay = min(Double(request.queryValue("delay") ?? "") ?? 0, 120)
        return response
    }

    /// `/arrivals-peak/KEY?window=S`: how many `/arrivals/KEY` requests arrived, and the most that arrived within
    /// any S seconds (with requests that each take longer than S, the most that were in progress at once).
    private static func arrivalPeak(key: String, request: ServerRequest) -> ServerResponse {
        let window = Double(request.queryValue("window") ?? "") ?? 0.5
        let times = arrivals.withLock { $0[key] ?? [] }.sorted()
        var peak = 0
        var start = 0
        for end in times.indices {
            while times[end] - times[start] > window { start += 1 }
            peak = max(peak, end - start + 1)
        }
        return .json(["count": times.count, "peak": peak])
    }

    /// Calls seen per key by `/fail-times/N/KEY`.
    private static let failureCounts = ServerLock<[String: Int]>([:])

    /// `/fail-times/N/KEY` (loopback only): answers 503 to the first N calls for KEY, then 200 with the call count.
    /// `?status=S` picks the failing status, `?retry_after=T` adds a `Retry-After` header.
    private static func failTimes(_ failures: Int, key: String, request: ServerRequest) -> ServerResponse {
        let call = failureCounts.withLock { counts -> Int in
            counts[key, default: 0] += 1
            return counts[key]!
        }
        guard call > failures else {
            var response = ServerResponse.json(["call": call], status: Int(request.queryValue("status") ?? "") ?? 503)
            if let retryAfter = request.queryValue("retry_after") {
                response.headers.append(("Retry-After", retryAfter))
            }
            return response
        }
        return .json(["call": call, "key": key])
    }

    public static func notFound() -> ServerResponse {
        .text(notFoundPage, status: 404, type: "text/html; charset=utf-8")
    }

    // MARK: - Samples (httpbin's)

    static let notFoundPage = """
        <!doctype html>
        <html lang=en>
        <title>404 Not Found</title>
        <h1>Not Found</h1>
        <p>The requested URL was not found on the server. If you entered the URL manually please check your \
        spelling and try again.</p>

        """

    static let methodNotAllowedPage = """
        <!doctype html>
        <html lang=en>
        <title>405 Method Not Allowed</title>
        <h1>Method Not Allowed</h1>
        <p>The method is not allowed for the requested URL.</p>

        """

    static let sampleXML = """
        <?xml version='1.0' encoding='us-ascii'?>

        <!--  A SAMPLE set of slides  -->

        <slideshow
            title="Sample Slide Show"
            date="Date of publication"
            author="Yours Truly"
            >

            <!-- TITLE SLIDE -->
            <slide type="all">
              <title>Wake up to WonderWidgets!</title>
            </slide>

            <!-- OVERVIEW -->
            <slide type="all">
                <title>Overview</title>
                <item>Why <em>WonderWidgets</em> are great</item>
                <item/>
                <item>Who <em>buys</em> WonderWidgets</item>
            </slide>

        </slideshow>
        """

    static let sampleHTML = """
        <!DOCTYPE html>
        <html>
          <head>
          </head>
          <body>
              <h1>Herman Melville - Moby-Dick</h1>

              <div>
                <p>
                  Availing himself of the mild, summer-cool weather that now reigned in these latitudes, and in \
        preparation for the peculiarly active pursuits shortly to be anticipated, Perth, the begrimed, blistered old \
        blacksmith, had not removed his portable forge to the hold again.
                </p>
              </div>
          </body>
        </html>
        """

    static var sampleJSON: [String: Any] {
        [
            "slideshow": [
                "author": "Yours Truly",
                "date": "date of publication",
                "slides": [
                    ["title": "Wake up to WonderWidgets!", "type": "all"],
                    [
                        "items": ["Why <em>WonderWidgets</em> are great", "Who <em>buys</em> WonderWidgets"],
                        "title": "Overview", "type": "all",
                    ],
                ],
                "title": "Sample Slide Show",
            ] as [String: Any]
        ]
    }
}

/// A small deterministic generator (SplitMix64), for `/bytes/N?seed=S` and for tests whose generated cases must be the
/// same on every run.
public struct SplitMix: RandomNumberGenerator {
    private var state: UInt64

    public init(seed: UInt64) {
        state = seed
    }

    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
