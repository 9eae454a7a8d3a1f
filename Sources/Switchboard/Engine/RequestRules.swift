import Foundation

extension EngineRequest {
    /// Refuses a request whose head would not say what is sent, before anything is: libcurl, under both engines,
    /// writes the method and fields as it gets them.
    ///
    /// - The method must be a token: a space or line break in it wrote a request line of the caller's making (a
    ///   second request, even).
    /// - Every field must be sendable (`HTTPHeaders.isSendable(name:value:)`).
    /// - A `Content-Length` the caller sets must be the body's length: `CurlEngine` sent the field as given, and a
    ///   length short of the body left the rest on the connection, where the server read it as the start of the next
    ///   request (URLSessionEngine replaced it). The engine sets the field itself; leaving it out is always right.
    /// - A `GET` or `HEAD` carries no body: URLSession refuses one, and libcurl sent the request as a `POST`.
    /// - `Transfer-Encoding` is the engine's choice: `chunked` for a stream of unknown length, else a
    ///   `Content-Length`. `CurlEngine` sent a caller's value as it was (`gzip, chunked` over a body it did not
    ///   compress, `chunked` beside a `Content-Length`), and a `chunked` request without a body never ended on either
    ///   engine. A caller may still say `chunked` for a stream of unknown length, which goes chunked anyway.
    /// - A timeout must be longer than zero: each engine took zero for a millisecond, so whether a request on
    ///   loopback beat it depended on the engine; URLSession took a negative idle timeout for none.
    ///
    /// The center checks this when it encodes a request; each built-in engine checks again as it starts an exchange,
    /// for what a plugin's `adapt` or a direct caller set after that.
    ///
    /// Skipped when the request passed it and nothing it reads was set since (`checked`): the center marks a request
    /// it checked as it encoded it.
    func checkBeforeSending() throws(HTTPError) {
        if checked { return }
        // The checks read the request here; the errors are made apart (`refusal`), so that the code every request
        // runs stays small.
        if timeout <= .zero { throw refusal(.timeout) }
        if let totalTimeout, totalTimeout <= .zero { throw refusal(.totalTimeout) }
        guard method.isValidToken else { throw refusal(.method) }
        if method == .get || method == .head, !body.isEmpty { throw refusal(.bodyWithoutOne) }
        let found = headers.sendingCheck
        if let index = found.unsendable { throw HTTPError.unsendable(headers.field(at: index)) }
        if let index = found.contentLength {
            let declared = headers.field(at: index).value
            guard let length = body.count, HTTPHeaders.contentLength(declared) == length else {
                throw refusal(.contentLength(declared))
            }
        }
        if let index = found.transferEncoding {
            let coding = headers.field(at: index).value
            let chunked = HTTPHeaders.trimmingBlanks(coding).lowercased() == "chunked"
            guard chunked, case .stream(let stream) = body, stream.length == nil else {
                throw refusal(.transferEncoding(coding))
            }
        }
    }

    /// What `checkBeforeSending` refuses.
    private enum Refusal {
        case timeout, totalTimeout, method, bodyWithoutOne
        case contentLength(String)
        case transferEncoding(String)
    }

    /// The error for a refusal, naming what is wrong.
    @inline(never)
    private func refusal(_ refusal: Refusal) -> HTTPError {
        switch refusal {
        case .timeout:
            return Self.notLongerThanZero("timeout", timeout)
        case .totalTimeout:
            return Self.notLongerThanZero("totalTimeout", totalTimeout ?? .zero)
        case .method:
            return HTTPError(
                .encoding, "\(String(reflecting: method.rawValue)) is not a valid HTTP method; nothing was sent")
        case .bodyWithoutOne:
            // URLSession refuses it (`-1103`, "resource exceeds maximum size", or no answer for a `HEAD`), and
            // libcurl sent it as a `POST`.
            return HTTPError(.encoding, "a \(method) request cannot carry a body; nothing was sent")
        case .contentLength(let declared):
            let size = body.count.map { "\($0) bytes" } ?? "of unknown length"
            return HTTPError(
                .encoding,
                "the Content-Length field (\(String(reflecting: declared))) does not match the body (\(size)); "
                    + "the engine sets it: leave it out. Nothing was sent")
        case .transferEncoding(let coding):
            return HTTPError(
                .encoding,
                "Transfer-Encoding (\(String(reflecting: coding))) is the engine's to choose: chunked for a "
                    + "stream of unknown length, else a Content-Length; leave it out. Nothing was sent")
        }
    }

    private static func notLongerThanZero(_ name: String, _ limit: Duration) -> HTTPError {
        HTTPError(.encoding, "\(name) is \(limit); a timeout must be longer than zero. Nothing was sent")
    }
}
