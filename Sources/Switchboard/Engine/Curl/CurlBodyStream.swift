import Foundation

/// Reads a stream body for `CurlEngine` on a thread of its own, into a small buffer, so that a slow stream never
/// holds up the engine's thread (and every other transfer on it).
///
/// The engine takes bytes without waiting: when the buffer is empty it pauses the transfer, and the pump calls
/// `ready` once bytes (or the end) arrive. When the buffer is full the pump stops reading, so a fast stream feeding a
/// slow server never piles up in memory. The stream is opened, read and closed on the pump's thread only.
final class CurlBodyStream: @unchecked Sendable {
    // Safety: every stored `var` is read and written with `condition` locked; `stream` and `ready` are `let`s.
    enum Read {
        /// This many bytes were copied.
        case bytes(Int)
        /// Nothing yet: pause the transfer until `ready` is called.
        case pause
        /// The body is complete.
        case end
        /// The stream failed, or yielded a different length than it announced.
        case failed(any Error)
    }

    /// The most bytes read ahead of the engine.
    static let bufferLimit = 256 * 1024
    private static let chunkSize = 64 * 1024

    private let stream: Request.BodyStream
    private let ready: @Sendable () -> Void
    private let condition = NSCondition()
    private var chunks: [Data] = []
    private var offset = 0
    private var buffered = 0
    private var ended = false
    private var failure: (any Error)?
    private var closed = false
    private var waiting = false
    private var delivered: Int64 = 0

    /// Starts reading on a new thread.
    ///
    /// - Parameter ready: called from the pump's thread when bytes arrive after `read` answered `.pause`.
    init(_ stream: Request.BodyStream, ready: @escaping @Sendable () -> Void) {
        self.stream = stream
        self.ready = ready
        let thread = Thread { [self] in pump() }
        thread.name = "Switchboard.CurlEngine.body"
        thread.start()
    }

    /// Copies buffered bytes into `buffer`, without waiting (the engine's thread calls it).
    ///
    /// A stream of known length never hands over its last byte before the pump has found its end: libcurl sends no
    /// more than the length, so a stream with bytes beyond it must fail before the server has the whole body (it
    /// would take the request as complete, and act on it).
    func read(into buffer: UnsafeMutableRawBufferPointer) -> Read {
        condition.lock()
        defer { condition.unlock() }
        if let failure { return .failed(failure) }
        var limit = buffer.count
        if let length = stream.length {
            let read = delivered + Int64(buffered)
            if read > length { return .failed(mismatch(read)) }
            if !ended { limit = Int(min(Int64(limit), max(0, length - delivered - 1))) }
        }
        var copied = 0
        while copied < limit, let first = chunks.first {
            let count = min(limit - copied, first.count - offset)
            first.withUnsafeBytes { bytes in
                buffer.baseAddress!.advanced(by: copied).copyMemory(
                    from: bytes.baseAddress!.advanced(by: offset), byteCount: count)
            }
            copied += count
            offset += count
            if offset == first.count {
                chunks.removeFirst()
                offset = 0
            }
        }
        if copied > 0 {
            buffered -= copied
            delivered += Int64(copied)
            condition.broadcast()
            if let length = stream.length, delivered > length {
                return .failed(mismatch(delivered))
            }
            return .bytes(copied)
        }
        if ended {
            if let length = stream.length, delivered != length { return .failed(mismatch(delivered)) }
            return .end
        }
        waiting = true
        return .pause
    }

    /// Stops reading (the transfer ended or was cancelled); the pump closes the stream.
    func close() {
        condition.lock()
        closed = true
        condition.broadcast()
        condition.unlock()
    }

    private func mismatch(_ count: Int64) -> HTTPError {
        Request.BodyStream.mismatch(count, announced: stream.length ?? 0)
    }

    private func pump() {
        let input: InputStream
        do {
            input = try stream.makeStream()
        } catch {
            finish(failure: error)
            return
        }
        input.open()
        defer { input.close() }
        var scratch = [UInt8](repeating: 0, count: Self.chunkSize)
        while true {
            condition.lock()
            while buffered >= Self.bufferLimit && !closed { condition.wait() }
            let stop = closed
            condition.unlock()
            if stop { return }

            let count = input.read(&scratch, maxLength: scratch.count)
            if count < 0 {
                finish(failure: Request.BodyStream.readFailure(input.streamError))
                return
            }
            condition.lock()
            if count == 0 {
                ended = true
            } else {
                chunks.append(Data(scratch[0..<count]))
                buffered += count
            }
            let wake = waiting
            waiting = false
            condition.unlock()
            if wake { ready() }
            if count == 0 { return }
        }
    }

    private func finish(failure error: any Error) {
        condition.lock()
        failure = error
        let wake = waiting
        waiting = false
        condition.unlock()
        if wake { ready() }
    }
}
