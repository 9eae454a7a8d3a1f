import Foundation

extension Request {
    /// A request body read from an `InputStream` that is made afresh for every send, so that a retry, or a
    /// `307`/`308` that keeps the body, sends it again from the start.
    ///
    /// ```swift
    /// let stream = Request.BodyStream(length: nil) { InputStream(url: logFile)! }
    /// ```
    ///
    /// Two values are equal only when one is a copy of the other (streams cannot be compared by content).
    public struct BodyStream: Sendable, Equatable {
        private final class Identity: Sendable {}

        /// The number of bytes the stream yields, when known in advance.
        public let length: Int64?
        /// Makes a new, unopened stream positioned at the start of the body.
        public let open: @Sendable () throws -> InputStream
        private let identity = Identity()
        /// Whether the body must go with a `Content-Length`, never chunked: a multipart body, which object stores
        /// (S3's POST uploads, for one) refuse chunked. CurlEngine, and URLSessionEngine on Linux, stream it (as any
        /// stream of known length); URLSessionEngine on Apple platforms, which gives a length only to a file,
        /// copies it into a temporary file first.
        var needsLength = false

        /// Creates a stream body.
        ///
        /// - Parameters:
        ///   - length: how many bytes the stream yields, or `nil` when unknown (the body is then sent chunked).
        ///     A stream that ends early, or yields more, fails the request.
        ///   - open: makes a new stream each time the body is sent; it is called on an engine's thread, and the
        ///     stream it returns is read (and closed) there.
        public init(length: Int64?, open: @escaping @Sendable () throws -> InputStream) {
            self.length = length
            self.open = open
        }

        public static func == (lhs: BodyStream, rhs: BodyStream) -> Bool {
            lhs.identity === rhs.identity
        }

        /// Makes a new stream; a failure of `open` becomes the error the center reports (an `HTTPError` stays as it
        /// is, anything else is `.fileSystem`).
        func makeStream() throws(HTTPError) -> InputStream {
            do {
                return try open()
            } catch let error as HTTPError {
                throw error
            } catch {
                throw HTTPError(.fileSystem, "the body stream could not be opened: \(error)", underlying: error)
            }
        }

        /// The error for a stream that yielded `count` bytes, where it announced `length`: the same on every engine
        /// that holds a stream to its length.
        static func mismatch(_ count: Int64, announced length: Int64) -> HTTPError {
            HTTPError(
                .encoding,
                count > length
                    ? "the body stream yielded more than the \(length) bytes it announced"
                    : "the body stream ended after \(count) of the \(length) bytes it announced")
        }

        /// The error for a stream whose read failed with `error` (its `streamError`, if any): an `HTTPError` as it
        /// is (a multipart body's file part that changed says so, as a raw file body does), anything else as
        /// `.fileSystem`.
        static func readFailure(_ error: (any Error)?) -> HTTPError {
            if let error = error as? HTTPError { return error }
            return HTTPError(
                .fileSystem, "the body stream failed: \(error.map { "\($0)" } ?? "read error")", underlying: error)
        }
    }
}
