import Foundation

/// A stream body held to the length it announced, for `URLSessionEngine`, which sends it with that length as its
/// `Content-Length` (on Linux, where URLSession would otherwise send any stream chunked): it yields at most that many
/// bytes, and fails when its source ends before them or has bytes beyond them, as `CurlEngine` does with the same
/// stream. A failure is reported to `failed` before the read that meets it answers -1, which makes URLSession abort
/// the upload.
///
/// Read by URLSession on its work queue, one call at a time; made afresh for every send of the body.
final class LengthHeldStream: InputStream {
    private let source: InputStream
    private let length: Int64
    private let failed: @Sendable (HTTPError) -> Void
    private var delivered: Int64 = 0
    private var status: Stream.Status = .notOpen
    private var failure: HTTPError?

    init(_ source: InputStream, length: Int64, failed: @escaping @Sendable (HTTPError) -> Void) {
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
        let remaining = length - delivered
        guard remaining > 0 else {
            // Everything announced is out: the source must be at its end too.
            var probe: UInt8 = 0
            let extra = source.read(&probe, maxLength: 1)
            if extra > 0 { return fail(EngineRequest.BodyStream.mismatch(length + Int64(extra), announced: length)) }
            if extra < 0 { return fail(EngineRequest.BodyStream.readFailure(source.streamError)) }
            status = .atEnd
            return 0
        }
        let count = source.read(buffer, maxLength: Int(min(Int64(maxLength), remaining)))
        if count < 0 { return fail(EngineRequest.BodyStream.readFailure(source.streamError)) }
        if count == 0 { return fail(EngineRequest.BodyStream.mismatch(delivered, announced: length)) }
        delivered += Int64(count)
        return count
    }

    private func fail(_ error: HTTPError) -> Int {
        failure = error
        status = .error
        failed(error)
        return -1
    }
}
