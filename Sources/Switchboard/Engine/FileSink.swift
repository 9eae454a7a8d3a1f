import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Writes a response body into a file from an offset: in large writes on a queue of its own, so that a slow disk never
/// holds up the thread that delivers network data, or in the delivering thread, when waiting is the backpressure.
///
/// The built-in engines write downloads with it, and an engine of your own can too: get one from
/// `EngineRequest.fileSink(for:synchronous:)` when the response head arrives, `write(_:)` each chunk, and at the end
/// `close()` and report the length in `EngineResponse.fileLength`; when the exchange fails, `abandon()`. What
/// arrived before a failure stays in the file, so that a resumable download continues from it.
public final class FileSink: @unchecked Sendable {
    // Safety: `handle` and `failure` are only touched on `queue`, a serial queue, except in the `.direct` mode, where
    // nothing is ever put on the queue and the owner's calls are the only ones; `buffer` and `length` are only
    // touched by the owner, which calls `write`, `close` and `abandon` one at a time (under its own lock).
    private let queue = DispatchQueue(label: "Switchboard.FileSink")
    private let handle: FileHandle
    private var failure: (any Error)?
    private var buffer = Data()
    /// The file's length once everything written so far is on disk: the offset it started at, plus the bytes given.
    public private(set) var length: Int64
    private static let chunkSize = 1 << 20

    /// Where and when bytes reach the file.
    enum Mode {
        /// In 1 MiB writes on the sink's own queue: the caller never waits for the disk.
        case queued
        /// In 1 MiB writes in the caller's thread, which then waits for the disk: what an engine wants when waiting
        /// is its backpressure (libcurl stops reading while its write callback runs).
        case buffered
        /// Each chunk as it comes, in the caller's thread: nothing is held in memory at all. URLSessionEngine's mode:
        /// URLSession hands over chunks allocated on its own thread, and keeping them (or a buffer grown from them)
        /// for another thread to write and free left a gigabyte's download at 40-50 MiB above baseline, against 12.
        /// On Linux the caller is URLSession's work queue itself (`InlineDelegateQueue`), which then waits for the
        /// write before it reads more.
        case direct
    }

    private let mode: Mode
    private var synchronous: Bool { mode != .queued }

    /// Opens (creating if needed) a file and cuts it to `start` bytes; writing continues from there, as `mode` says.
    /// Unless `followingLinks`, a symbolic link at `url` is not followed: the open fails.
    ///
    /// - Throws: `HTTPError` `.fileSystem` when the file cannot be created, opened or cut (a directory, say), on
    ///   every engine alike.
    init(url: URL, start: Int64, mode: Mode, followingLinks: Bool = true) throws(HTTPError) {
        self.mode = mode
        if followingLinks {
            if !FileManager.default.fileExists(atPath: url.path) {
                guard FileManager.default.createFile(atPath: url.path, contents: nil) else {
                    throw HTTPError(.fileSystem, "cannot create \(url.path)")
                }
            }
            do {
                handle = try FileHandle(forWritingTo: url)
            } catch {
                throw HTTPError(
                    .fileSystem, "the download file \(url.path) cannot be opened: \(error)", underlying: error)
            }
        } else {
            let descriptor = open(url.path, O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0o644)
            guard descriptor >= 0 else {
                let error = errno
                throw HTTPError(
                    .fileSystem,
                    "the download file \(url.path) cannot be opened: \(String(cString: strerror(error)))"
                        + (error == ELOOP ? " (it is a symbolic link, which a download's partial file never is)" : ""))
            }
            handle = FileHandle(fileDescriptor: descriptor, closeOnDealloc: true)
        }
        do {
            try handle.truncate(atOffset: UInt64(start))
            try handle.seek(toOffset: UInt64(start))
        } catch {
            try? handle.close()
            throw HTTPError(
                .fileSystem, "the download file \(url.path) cannot be cut to \(start) bytes: \(error)",
                underlying: error)
        }
        length = start
    }

    /// Collects bytes and hands them to the writing queue 1 MiB at a time; a failed write is thrown by `close` (or
    /// here, by a sink that writes each chunk at once).
    public func write(_ data: Data) throws {
        length += Int64(data.count)
        if mode == .direct {
            if let failure { throw failure }
            do {
                try handle.write(contentsOf: data)
            } catch {
                failure = HTTPError(.fileSystem, "the download could not be written: \(error)", underlying: error)
                throw failure!
            }
            return
        }
        buffer.append(data)
        if buffer.count >= FileSink.chunkSize { handOver() }
    }

    /// Waits for the queued writes and closes; returns the file's length. It does not sync: that waits for the disk,
    /// and the center syncs a download before moving it into place.
    public func close() throws -> Int64 {
        handOver()
        try queue.sync {
            try? handle.close()
            if let failure { throw failure }
        }
        return length
    }

    /// Writes what it can and closes, ignoring errors (the exchange failed anyway).
    public func abandon() {
        handOver()
        queue.sync { try? handle.close() }
    }

    private func handOver() {
        guard !buffer.isEmpty else { return }
        let chunk = buffer
        buffer = Data()
        if synchronous {
            queue.sync { [self] in
                guard failure == nil else { return }
                do { try handle.write(contentsOf: chunk) } catch { failure = error }
            }
            return
        }
        queue.async { [self] in
            guard failure == nil else { return }
            do { try handle.write(contentsOf: chunk) } catch { failure = error }
        }
    }
}

extension EngineRequest {
    /// Where the body of `head` goes under this request's `destination`: a sink into the destination file for a `200`
    /// (from the start) or a `206` (from the destination's offset; from the start for the range a request with no
    /// offset asks for in its own `Range` field), else `nil`, and the body belongs in
    /// `EngineResponse.body`. Opening the file also tells the center what a resumable download needs of the head
    /// (`ETag`, `Last-Modified`, length), so an engine that writes through here reports nothing else for it.
    ///
    /// - Parameters:
    ///   - head: the response head whose body is about to arrive.
    ///   - synchronous: write in the calling thread, which then waits for the disk: what an engine wants when
    ///     waiting is its backpressure. Otherwise writes go to a queue of the sink's own.
    /// - Throws: `HTTPError` `.transport` when a `206`'s `Content-Range` does not start at the offset asked for;
    ///   `.fileSystem` when the file cannot be opened.
    public func fileSink(for head: EngineResponse, synchronous: Bool = false) throws(HTTPError) -> FileSink? {
        do {
            return try sink(for: head, mode: synchronous ? .buffered : .queued)
        } catch let error as HTTPError {
            throw error
        } catch {
            throw HTTPError(.fileSystem, "the download file cannot be opened: \(error)", underlying: error)
        }
    }

    /// Where the body of a response goes under this request's destination: a file sink for a `200` or `206`
    /// (checking that a `206` starts where asked: the destination's offset, or `start` for a later segment), else
    /// memory.
    func sink(for response: some ResponseHeadFields, start expected: Int64? = nil, mode: FileSink.Mode = .queued) throws
        -> FileSink?
    {
        guard case .file(let url, let offset) = destination, response.statusCode == 200 || response.statusCode == 206
        else { return nil }
        var start: Int64 = 0
        if response.statusCode == 206 {
            let header = response.value(forHTTPHeaderField: "Content-Range")
            // A range the caller asked for (`Range` on a download that is not resuming) goes from the file's start.
            let asked = expected == nil && offset == 0 ? headers["Range"].flatMap(ContentRange.askedStart) : nil
            let wanted = expected ?? asked ?? offset
            guard let range = ContentRange(header), range.start == wanted else {
                throw HTTPError(
                    .transport,
                    "the server sent 206 with Content-Range \"\(header ?? "")\"; expected bytes from \(wanted)")
            }
            start = asked == nil ? wanted : 0
        }
        let sink = try FileSink(url: url, start: start, mode: mode, followingLinks: !destinationIsPartialFile)
        onFileOpened?(response.statusCode) { response.value(forHTTPHeaderField: $0) }
        return sink
    }
}

/// A `Content-Range: bytes a-b/total` header (`total` may be `*`), or `bytes */total` for a 416.
struct ContentRange: Equatable {
    var start: Int64?
    var end: Int64?
    var total: Int64?

    /// Reads `bytes START-END/TOTAL`, `bytes START-END/*` or `bytes */TOTAL` (RFC 9110 section 14.4): numbers of
    /// digits alone, a range that ends at or after its start and before the total. Anything else is `nil`: a
    /// download must not write a body where a malformed or impossible range puts it.
    init?(_ header: String?) {
        guard let header, header.lowercased().hasPrefix("bytes ") else { return nil }
        let spec = header.dropFirst("bytes ".count).split(
            separator: "/", maxSplits: 1, omittingEmptySubsequences: false)
        guard spec.count == 2 else { return nil }
        let totalText = HTTPHeaders.trimmingBlanks(String(spec[1]))
        if totalText != "*" {
            guard let total = HTTPHeaders.contentLength(totalText), !totalText.isEmpty else { return nil }
            self.total = total
        }
        let range = HTTPHeaders.trimmingBlanks(String(spec[0]))
        if range == "*" {
            guard total != nil else { return nil }
        } else {
            let bounds = range.split(separator: "-", maxSplits: 1, omittingEmptySubsequences: false)
            guard bounds.count == 2, !bounds[0].isEmpty, !bounds[1].isEmpty,
                let start = HTTPHeaders.contentLength(String(bounds[0])),
                let end = HTTPHeaders.contentLength(String(bounds[1])), start <= end, end < total ?? .max
            else { return nil }
            self.start = start
            self.end = end
        }
    }

    /// How many bytes the range holds, when it names them (not for `bytes */total`).
    var count: Int64? {
        guard let start, let end else { return nil }
        return end - start + 1
    }

    /// Why a `206` with this range does not hold the body it announced, `received` bytes of it having arrived;
    /// `nil` when it does.
    func bodyMismatch(received: Int64) -> String? {
        guard let start, let end, let count, received != count else { return nil }
        return "the server's 206 announced bytes \(start)-\(end) of the file (\(count) bytes) and sent \(received)"
    }

    /// The first byte a request's `Range` field asks for when it asks for one range from a known byte (`bytes=S-E`
    /// or `bytes=S-`); `nil` for anything else (several ranges, the last N bytes, another unit).
    static func askedStart(_ field: String) -> Int64? {
        let text = HTTPHeaders.trimmingBlanks(field)
        guard text.lowercased().hasPrefix("bytes=") else { return nil }
        let bounds = text.dropFirst("bytes=".count).split(
            separator: "-", maxSplits: 1, omittingEmptySubsequences: false)
        guard bounds.count == 2, !bounds[0].isEmpty, let start = HTTPHeaders.contentLength(String(bounds[0])) else {
            return nil
        }
        if bounds[1].isEmpty { return start }
        guard let end = HTTPHeaders.contentLength(String(bounds[1])), end >= start else { return nil }
        return start
    }
}

/// Progress of a body being received, counting any offset it resumes from.
struct DownloadCounter {
    var start: Int64 = 0
    var received: Int64 = 0
    var expected: Int64?
    /// The length this response's body is announced to have once decoded (see `SessionTransfer.expectedLength`),
    /// which is `expected` unless the response is a range of a larger whole.
    private(set) var bodyLength: Int64?

    init() {}

    /// Borrowed: an initialiser owns its arguments unless told otherwise, and a caller that reads the head after
    /// this (CurlEngine, for every response) had to copy it first, a count up and down of each of its references.
    init(response: borrowing some ResponseHeadFields) {
        bodyLength = SessionTransfer.expectedLength(response)
        if response.statusCode == 206, let range = ContentRange(response.value(forHTTPHeaderField: "Content-Range")) {
            start = range.start ?? 0
            expected = range.total
        } else {
            expected = bodyLength
        }
    }

    mutating func add(_ count: Int) -> TransferProgress {
        received += Int64(count)
        // A server's `Content-Range` can put the start anywhere up to `Int64.max`, and send more than the range
        // holds: the sum stops at the largest number instead of trapping (a 206 "at" byte 2⁶³ − 2 with a 10-byte
        // body stopped the process, on both engines).
        return TransferProgress(
            direction: .download, completed: Self.end(from: start, after: received), expected: expected)
    }

    /// `start + count`, or `Int64.max` where the sum would not fit.
    static func end(from start: Int64, after count: Int64) -> Int64 {
        let (end, overflow) = start.addingReportingOverflow(count)
        return overflow ? .max : end
    }
}

extension FileSink {
    static func size(of url: URL) -> Int64? {
        // `stat`, which follows symbolic links: FileManager's attributes are the link's own, whose size is the length
        // of the path it holds (an upload through a link announced that as its length, and failed).
        var status = stat()
        guard stat(url.path, &status) == 0 else { return nil }
        return Int64(status.st_size)
    }

    /// Cuts a partial file back to `length` bytes, the end of what can be trusted in it (a `206` whose body was
    /// longer than its range is dropped whole: where in it the range ends cannot be told).
    static func cut(_ url: URL, to length: Int64) {
        guard let handle = try? FileHandle(forWritingTo: url) else { return }
        try? handle.truncate(atOffset: UInt64(length))
        try? handle.close()
    }
}
