import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Turns a merged, composed request into what an engine sends.
enum RequestEncoding {
    /// Encodes the request: URL with query, method, headers, body. `urlIsPlain` says the request's `url` is in the
    /// plain form by construction (see `URLComposition.compose`): it, and it with the query, are not checked again.
    ///
    /// `defaults` are the center's headers with the fields every request adds, made once (see `SendingHeaders`).
    ///
    /// - Throws: `.invalidURL` or `.encoding`, naming what could not be sent.
    static func encode(
        _ request: Request, urlIsPlain: Bool = false, defaults: SendingHeaders? = nil
    ) throws(HTTPError) -> EngineRequest {
        let text = request.url ?? ""
        if let failure = request.fields.cold?.value.parameterFailure { throw failure.with(request: request) }
        let converted = Result { () throws(HTTPError) in try GeneralParameters.layers(of: request) }
        let parameters = (try? converted.get()) ?? ParameterLayers(own: [])
        let isMultipart = request.kind == .upload && !request.form.isEmpty
        let style = request.formStyle ?? FormStyle()
        // The URL is checked once, with its query when the parameters travel there: as the request places them, else
        // for a method that sends them so, and beside an explicit body, which takes the body's place.
        let placement = request.parameterPlacement
        let inQuery =
            !parameters.isEmpty
            && (placement == .query
                || (placement == nil && !isMultipart
                    && (request.body != nil || request.method.encodesParametersInQuery)))
        if placement == .body, request.body != nil, !parameters.isEmpty { throw bodyBesideParameters(request) }
        let address: URLAddress
        if urlIsPlain {
            // No query or fragment yet; the query's bytes are unreserved characters, `=`, `&` and escapes.
            address = .text(
                inQuery
                    ? FormEncoding.written(parameters, prefix: text, separator: UInt8(ascii: "?"), style: style)
                    : text)
        } else {
            address = try checkedAddress(text, inQuery ? parameters : nil, request: request, style: style)
        }
        if case .failure(let error) = converted { throw error.with(request: request) }
        // A body only when there is one to make: most requests have none, and its code stays apart from theirs.
        var body = EngineRequest.Body.none
        let headers: HTTPHeaders
        if isMultipart || request.body != nil || (!inQuery && !parameters.isEmpty) {
            var withBody = request.headers
            withBody.reserveCapacity(withBody.count + 3)  // Content-Type, User-Agent, Accept
            body = try encodedBody(
                request, inQuery ? [] : parameters.merged, isMultipart: isMultipart, headers: &withBody)
            addDefaultFields(to: &withBody, for: request.responseSerializer ?? .json)
            headers = withBody
        } else {
            headers =
                defaults?.headers(for: request)
                ?? withDefaultFields(request.headers, for: request.responseSerializer ?? .json)
        }
        var engineRequest = EngineRequest(
            method: request.method, address: address, headers: headers, body: body, totalTimeout: request.totalTimeout)
        if let timeout = request.timeout {
            engineRequest.timeout = timeout > .zero ? max(.milliseconds(1), timeout) : timeout
        }
        if request.maxBytesPerSecond != nil || request.maxUploadBytesPerSecond != nil
            || request.maxResponseBytes != nil
        {
            try applyLimits(request, to: &engineRequest)
        }
        engineRequest.id = request.id
        do {
            try engineRequest.checkBeforeSending()
        } catch {
            throw error.with(request: request)
        }
        engineRequest.checked = true
        return engineRequest
    }

    /// `headers` with the fields every request adds, for a request without a body (`addDefaultFields`).
    @inline(never)
    static func withDefaultFields(_ headers: HTTPHeaders, for serializer: ResponseSerializer) -> HTTPHeaders {
        var headers = headers
        headers.reserveCapacity(headers.count + 2)
        addDefaultFields(to: &headers, for: serializer)
        return headers
    }

    /// Adds the fields every request sends unless it set them itself: `User-Agent`, and the `Accept` of the
    /// serializer that reads its response.
    static func addDefaultFields(to headers: inout HTTPHeaders, for serializer: ResponseSerializer) {
        if headers["User-Agent"] == nil {
            headers.appendSendable("User-Agent", EngineRequest.defaultUserAgent)
        }
        if headers["Accept"] == nil, let accept = serializer.accept {
            // A built-in serializer's field is a constant; an app's is checked with the request's own.
            if case .custom = serializer.kind {
                headers["Accept"] = accept
            } else {
                headers.appendSendable("Accept", accept)
            }
        }
    }

    /// The body of a request that has one (form parts, an explicit body, or parameters a method sends in its body),
    /// with its `Content-Type` set in `headers` unless the request's own type wins.
    @inline(never)
    private static func encodedBody(
        _ request: Request, _ parameters: [ParameterValue.Member], isMultipart: Bool,
        headers: inout HTTPHeaders
    ) throws(HTTPError) -> EngineRequest.Body {
        let streamsBody = request.body?.file != nil || request.body?.stream != nil
        var body = EngineRequest.Body.none
        var contentType: String?
        // An explicit body's type that is only the fallback, which a type from the center's headers overrides.
        var typeIsFallback = false

        if isMultipart {
            if request.body != nil {
                throw HTTPError(.encoding, "an upload has either form parts or a body, not both", request: request)
            }
            let multipart = Multipart(
                fields: FormEncoding.pairs(parameters, style: request.formStyle ?? FormStyle()), parts: request.form)
            body = try multipart.body(for: request)
            contentType = multipart.contentType
        } else if streamsBody, let explicit = request.body {
            if request.method == .get || request.method == .head {
                throw HTTPError(.encoding, "a \(request.method) request cannot carry a body", request: request)
            }
            if let file = explicit.file {
                try UploadFile.check(file, for: request)
                body = .file(file)
            } else if let stream = explicit.stream {
                if let length = stream.length, length < 0 {
                    throw HTTPError(.encoding, "a body stream cannot be \(length) bytes long", request: request)
                }
                body = .stream(stream)
            }
            contentType = explicit.contentType
            typeIsFallback = explicit.typeIsFallback
        } else if let explicit = request.body {
            if request.method == .get || request.method == .head {
                throw HTTPError(.encoding, "a \(request.method) request cannot carry a body", request: request)
            }
            do {
                body = .data(try explicit.make())
            } catch {
                throw HTTPError(
                    .encoding, "the body could not be encoded: \(error)", request: request, underlying: error)
            }
            contentType = explicit.contentType
            typeIsFallback = explicit.typeIsFallback
        } else if !parameters.isEmpty {
            // Parameters in the body: the method's place for them, or the request's choice.
            do {
                let encoded = try (request.requestSerializer ?? .form).encode(parameters, of: request)
                (body, contentType) = (.data(encoded.body), encoded.contentType)
            } catch {
                throw error.with(request: request)
            }
        }

        if let contentType, let given = headers["Content-Type"], given != request.fields.centerContentType {
            // The request's own type wins (a vendor JSON type, say), but a multipart form's must carry its
            // boundary: `multipart/form-data` alone gets it, any other type cannot describe the body.
            if isMultipart {
                guard ResponseDecoding.mediaType(of: given) == "multipart/form-data" else {
                    throw HTTPError(
                        .encoding,
                        "a form with parts is sent as multipart/form-data with its boundary; the Content-Type header "
                            + "\"\(given)\" cannot describe it. Nothing was sent", request: request)
                }
                headers["Content-Type"] = contentType
            }
        } else if let contentType, headers["Content-Type"] == nil || !typeIsFallback {
            // No type of the request's own, or the center's general one, which cannot know this body's (unless the
            // body has none of its own).
            headers["Content-Type"] = contentType
        }
        return body
    }

    // The paths most requests do not take, apart from the one they do: its code then spans fewer cache lines.

    @inline(never)
    private static func bodyBesideParameters(_ request: Request) -> HTTPError {
        HTTPError(
            .encoding, "parameters placed in the body cannot go beside an explicit body; nothing was sent",
            request: request)
    }

    /// The URL as `URLComposition.validate` checks it, with the parameters in its query when they go there.
    @inline(never)
    private static func checkedAddress(
        _ text: String, _ query: ParameterLayers?, request: Request, style: FormStyle
    ) throws(HTTPError) -> URLAddress {
        guard let query else { return try URLComposition.validate(text, for: request) }
        return try appendingQuery(query, to: text, request: request, style: style)
    }

    /// The request's speed and size limits, checked, on the engine request.
    @inline(never)
    private static func applyLimits(_ request: Request, to engineRequest: inout EngineRequest) throws(HTTPError) {
        engineRequest.maxReceiveBytesPerSecond = try checkedLimit(
            request.maxBytesPerSecond, "maxBytesPerSecond", request)
        engineRequest.maxSendBytesPerSecond = try checkedLimit(
            request.maxUploadBytesPerSecond, "maxUploadBytesPerSecond", request)
        if let limit = request.maxResponseBytes {
            guard limit >= 0 else {
                throw HTTPError(
                    .encoding, "maxResponseBytes is \(limit); a limit must not be below zero", request: request)
            }
            engineRequest.maxResponseBytes = limit
        }
    }

    /// A speed limit as set, or `.encoding` when it is below 1 byte a second.
    private static func checkedLimit(_ limit: Int64?, _ name: String, _ request: Request) throws(HTTPError) -> Int64? {
        guard let limit, limit < 1 else { return limit }
        throw HTTPError(.encoding, "\(name) is \(limit); a limit must be at least 1 byte a second", request: request)
    }

    /// The URL, checked as `URLComposition.validate` does, with the parameters added to its query (after any query
    /// it has, before any fragment).
    private static func appendingQuery(
        _ parameters: ParameterLayers, to text: String, request: Request, style: FormStyle
    ) throws(HTTPError) -> URLAddress {
        // One pass over the bytes: where the fragment starts, whether there is a query, and its last byte.
        let (headLength, hasQuery, last) = text.withUTF8Bytes { bytes -> (Int, Bool, UInt8?) in
            var hasQuery = false
            for (offset, byte) in bytes.enumerated() {
                if byte == UInt8(ascii: "#") { return (offset, hasQuery, offset > 0 ? bytes[offset - 1] : nil) }
                if byte == UInt8(ascii: "?") { hasQuery = true }
            }
            return (bytes.count, hasQuery, bytes.last)
        }
        let separator: UInt8? =
            !hasQuery
            ? UInt8(ascii: "?") : last == UInt8(ascii: "?") || last == UInt8(ascii: "&") ? nil : UInt8(ascii: "&")
        // The URL up to any fragment, the separator, the query, then the fragment: one string, written once.
        var (head, fragment) = (text, "")
        if headLength < text.utf8.count {
            let split = text.utf8.index(text.utf8.startIndex, offsetBy: headLength)
            (head, fragment) = (String(text[..<split]), String(text[split...]))
        }
        let combined = FormEncoding.written(
            parameters, prefix: head, separator: separator, suffix: fragment, style: style)
        do {
            return try URLComposition.validate(combined, for: request)
        } catch {
            // Say what is wrong with the URL itself, when something is; else the query is what broke it.
            _ = try URLComposition.validate(text, for: request)
            throw HTTPError(
                .invalidURL, "\"\(Redaction.standard.url(text))\" with its query is not a valid URL", request: request)
        }
    }
}

/// `application/x-www-form-urlencoded` text, with nested values as `key[]` and `key[member]`.
enum FormEncoding {
    /// The members as form text (`a=1&b=2`).
    static func encode(_ members: [ParameterValue.Member], style: FormStyle = FormStyle()) -> String {
        written(ParameterLayers(own: members), style: style)
    }

    /// The most bytes the members take as form text, every byte escaped; `nil` when one of them is nested.
    private static func bound(_ members: [ParameterValue.Member]) -> Int? {
        var bound = 0
        for member in members {
            switch member.value {
            case .array, .object: return nil
            case .string(let text), .literal(let text): bound += 3 * (member.key.utf8.count + text.utf8.count) + 2
            // A number's text is at most 24 bytes (`-2.2250738585072014e-308`), each escaped at most to 3.
            case .int, .uint, .double, .bool, .null: bound += 3 * (member.key.utf8.count + 24) + 2
            }
        }
        return bound
    }

    /// `prefix` and `separator`, then the members as form text, then `suffix`, made as one string: the text of a URL
    /// with its query (the URL up to any fragment, the query's separator, the query, the fragment).
    ///
    /// Written byte by byte into a string allocated once, at most the length of the worst case (every byte
    /// escaped): appending the pieces one by one (a name, `=`, a value, `&`) checked and grew the string at each,
    /// the largest part of encoding a small request.
    static func written(
        _ members: ParameterLayers, prefix: String = "", separator: UInt8? = nil, suffix: String = "",
        style: FormStyle = FormStyle()
    ) -> String {
        let ends = Ends(prefix: prefix, separator: separator, suffix: suffix)
        // Bounded over both lists as they are (a key in both is counted twice), without merging them.
        guard let own = bound(members.own), let general = bound(members.general) else {
            // Nested values become several pairs (`list[]`, `map[key]`): the pairs path, for every member.
            return written(nested: members, style, ends)
        }
        return ends.text(capacity: own + general) { writer in
            var first = true
            for member in members {
                if !first { writer.write(UInt8(ascii: "&")) }
                first = false
                writer.writeEscaped(member.key)
                writer.write(UInt8(ascii: "="))
                switch member.value {
                // Digits and `-` are never escaped: written as they are, without a string made for them.
                case .int(let value): writer.write(value)
                case .uint(let value): writer.write(value)
                default: writer.writeEscaped(member.value.formText(style))
                }
            }
        }
    }

    /// `written` for members that are not all flat: their pairs, apart from the flat path that most requests take.
    @inline(never)
    private static func written(nested members: ParameterLayers, _ style: FormStyle, _ ends: Ends) -> String {
        let pairs = pairs(members.merged, style: style)
        var capacity = 0
        for pair in pairs { capacity += 3 * (pair.name.utf8.count + pair.value.utf8.count) + 2 }
        return ends.text(capacity: capacity) { writer in
            for (index, pair) in pairs.enumerated() {
                if index > 0 { writer.write(UInt8(ascii: "&")) }
                writer.writeEscaped(pair.name)
                writer.write(UInt8(ascii: "="))
                writer.writeEscaped(pair.value)
            }
        }
    }

    /// What comes before and after the form text in `written`.
    private struct Ends {
        let prefix: String
        let separator: UInt8?
        let suffix: String

        /// The prefix, the separator, what `body` writes (at most `capacity` bytes), then the suffix.
        @inline(__always)
        func text(capacity: Int, _ body: (inout Writer) -> Void) -> String {
            String(unsafeUninitializedCapacity: prefix.utf8.count + 1 + capacity + suffix.utf8.count) { buffer in
                var writer = Writer(buffer)
                writer.write(prefix)
                if let separator { writer.write(separator) }
                body(&writer)
                writer.write(suffix)
                return writer.count
            }
        }
    }

    /// Writes bytes into a buffer that has room for them (the caller sized it for the worst case; a write past its
    /// end stops the process rather than overwrite memory, in release builds too).
    private struct Writer {
        let buffer: UnsafeMutableBufferPointer<UInt8>
        var count = 0

        init(_ buffer: UnsafeMutableBufferPointer<UInt8>) {
            self.buffer = buffer
        }

        mutating func write(_ byte: UInt8) {
            precondition(count < buffer.count)
            buffer[count] = byte
            count += 1
        }

        mutating func write(_ string: String) {
            guard !string.isEmpty else { return }
            string.withUTF8Bytes { bytes in
                guard let source = bytes.baseAddress, !bytes.isEmpty else { return }
                precondition(count + bytes.count <= buffer.count)
                (buffer.baseAddress! + count).update(from: source, count: bytes.count)
                count += bytes.count
            }
        }

        /// `string`'s bytes, escaped as `FormEncoding.escape` escapes them.
        mutating func writeEscaped(_ string: String) {
            string.withUTF8Bytes { bytes in
                // Room for every byte escaped, checked once.
                precondition(count + 3 * bytes.count <= buffer.count)
                var out = buffer.baseAddress! + count
                for byte in bytes {
                    if isAllowed(byte) {
                        out.pointee = byte
                        out += 1
                    } else {
                        out[0] = UInt8(ascii: "%")
                        out[1] = UInt8.upperHexDigit(byte >> 4)
                        out[2] = UInt8.upperHexDigit(byte & 0x0F)
                        out += 3
                    }
                }
                count = out - buffer.baseAddress!
            }
        }

        /// The decimal digits of an integer, with `-` before a negative one.
        mutating func write(_ value: Int64) {
            if value < 0 { write(UInt8(ascii: "-")) }
            write(value.magnitude)
        }

        mutating func write(_ value: UInt64) {
            var digits = 1
            var rest = value / 10
            while rest > 0 {
                digits += 1
                rest /= 10
            }
            precondition(count + digits <= buffer.count)
            var value = value
            for offset in stride(from: digits - 1, through: 0, by: -1) {
                buffer[count + offset] = UInt8(ascii: "0") + UInt8(value % 10)
                value /= 10
            }
            count += digits
        }
    }

    /// The parameters as flat name-value pairs (`list[]`, `map[key]`), unescaped: for forms and multipart fields.
    static func pairs(
        _ members: [ParameterValue.Member], style: FormStyle = FormStyle()
    ) -> [(name: String, value: String)] {
        var pairs: [(name: String, value: String)] = []
        pairs.reserveCapacity(members.count)
        for member in members { flatten(member.value, key: member.key, style, into: &pairs) }
        return pairs
    }

    private static func flatten(
        _ value: ParameterValue, key: String, _ style: FormStyle, into pairs: inout [(name: String, value: String)]
    ) {
        switch value {
        case .array(let elements):
            for (index, element) in elements.enumerated() {
                let name =
                    switch style.arrays {
                    case .brackets: key + "[]"
                    case .repeatedKeys: key
                    case .indexed: "\(key)[\(index)]"
                    }
                flatten(element, key: name, style, into: &pairs)
            }
        case .object(let members):
            for member in members { flatten(member.value, key: "\(key)[\(member.key)]", style, into: &pairs) }
        default:
            pairs.append((name: key, value: value.formText(style)))
        }
    }

    /// RFC 3986 query escaping: everything but unreserved characters and `/` `?` is percent-encoded (as UTF-8,
    /// with upper-case hex digits).
    static func escape(_ string: String) -> String {
        String(unsafeUninitializedCapacity: 3 * string.utf8.count) { buffer in
            var writer = Writer(buffer)
            writer.writeEscaped(string)
            return writer.count
        }
    }

    /// Unreserved characters (`A-Z a-z 0-9 - . _ ~`), `/` and `?`.
    @inline(__always)
    private static func isAllowed(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"),
            UInt8(ascii: "~"), UInt8(ascii: "/"), UInt8(ascii: "?"):
            true
        default:
            false
        }
    }
}

extension Duration {
    /// The duration in seconds, as a `TimeInterval`.
    var seconds: TimeInterval {
        let (seconds, attoseconds) = components
        return TimeInterval(seconds) + TimeInterval(attoseconds) / 1e18
    }
}

/// A center's headers with the fields every request adds to them (`RequestEncoding.addDefaultFields`), made and
/// checked once when the headers are set: for the default serializer (JSON's `Accept`) and for those that ask for no
/// type (`.raw`, `.string`). A request that sends the center's headers as they are, with one of those serializers,
/// sends these, without copying, searching or checking them again. A class: a request reads it through one reference.
final class SendingHeaders: Sendable {
    private let general: HTTPHeaders
    private let forJSON: HTTPHeaders
    private let forAnyType: HTTPHeaders
    /// Whether the general headers set `Accept`, which then no serializer changes.
    private let setsAccept: Bool
    /// The general headers' `Content-Type`, which a request that sets none takes (see `Request.merge`).
    let contentType: String?

    /// `general` as the configuration holds them, checked already (`markSendable()`): the two fields added here
    /// extend what is checked.
    init(_ general: HTTPHeaders) {
        self.general = general
        forJSON = RequestEncoding.withDefaultFields(general, for: .json)
        setsAccept = general["Accept"] != nil
        contentType = general["Content-Type"]
        forAnyType = setsAccept ? forJSON : RequestEncoding.withDefaultFields(general, for: .raw)
    }

    /// The headers `request` sends, when they are the general ones as they are and its serializer is one of those
    /// these were made for; `nil` otherwise.
    func headers(for request: Request) -> HTTPHeaders? {
        guard request.headers.isSameStorage(as: general) else { return nil }
        switch request.responseSerializer?.kind {
        case nil, .json: return forJSON
        case .raw, .string: return forAnyType
        case .plist, .xml, .custom: return setsAccept ? forJSON : nil
        }
    }
}
