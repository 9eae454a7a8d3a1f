import Foundation

/// A stream body as `URLSessionEngine` hands it to URLSession on Linux, checked as `CurlEngine` checks the same
/// stream: held to the length it announced (which goes as its `Content-Length`), when it announced one, and failing
/// the upload when its source fails.
///
/// - With a length it yields at most that many bytes, and fails when its source ends before them or has bytes beyond
///   them. It finds out before it hands over the last byte: libcurl sends no more than the length, so the server
///   would otherwise have a whole request, and act on it, before the stream was found too long.
/// - URLSession ends a body when its stream says it has no bytes available, which a stream that failed to open says:
///   the server then got an empty or cut body as a complete one. This stream says it has bytes until a read has
///   found the end, so that a failure reaches URLSession as a failed read.
///
/// A failure is reported to `failed` before the read that meets it answers -1, which makes URLSession abort the
/// upload. Read by URLSession on its work queue, one call at a time; made afresh for every send of the body.
final class LengthHeldStream: InputStream {
    private let source: InputStream
    private let length: Int64?
    private let failed: @Sendable (HTTPError) -> Void
    private var delivered: Int64 = 0
    private var status: Stream.Status = .notOpen
    private var failure: HTTPError?
    /// The source's end was found (and nothing after it) while the last bytes were read: the next read answers 0.
    private var endFound = false

    init(_ source: InputStream, length: Int64?, failed: @escaping @Sendable (HTTPError) -> Void) {
        self.source = source
        self.length = length
        self.failed = failed
        super.init(data: Data())
    }

    override func open() {
        source.open()
        status = .open
    }

    override func close() {
        source.close()
        status = .closed
    }

    override var streamStatus: Stream.Status { status }

    override var streamError: (any Error)? { failure }

    /// Whether a read may still yield bytes: URLSession ends the body when this is `false`, so it stays `true` until
    /// a read has found the end (and checked that nothing follows it).
    override var hasBytesAvailable: Bool { status == .open }

    override func read(_ buffer: UnsafeMutablePointer<UInt8>, maxLength: Int) -> Int {
        guard status == .open else { return status == .atEnd ? 0 : -1 }
        if endFound {
            status = .atEnd
            return 0
        }
        guard let length else {
            let count = source.read(buffer, maxLength: maxLength)
            if count < 0 { return fail(Request.BodyStream.readFailure(source.streamError)) }
            if count == 0 { status = .atEnd }
            return count
        }
        let remaining = length - delivered
        if remaining == 0 {
            // Announced as empty: the source must be at its end.
            return checkEnd() ?? 0
        }
        let count = source.read(buffer, maxLength: Int(min(Int64(maxLength), remaining)))
        if count < 0 { return fail(Request.BodyStream.readFailure(source.streamError)) }
        if count == 0 { return fail(Request.BodyStream.mismatch(delivered, announced: length)) }
        delivered += Int64(count)
        if delivered == length, let failed = checkEnd() { return failed }
        return count
    }

    /// Reads past the announced length: `nil` when the source is at its end (which is then noted), else the failed
    /// read's answer.
    private func checkEnd() -> Int? {
        var probe: UInt8 = 0
        let extra = source.read(&probe, maxLength: 1)
        if extra > 0 {
            return fail(Request.BodyStream.mismatch(delivered + Int64(extra), announced: length ?? 0))
        }
        if extra < 0 { return fail(Request.BodyStream.readFailure(source.streamError)) }
        endFound = true
        return nil
    }

    private func fail(_ error: HTTPError) -> Int {
        failure = error
        status = .error
        failed(error)
        return -1
    }
}
