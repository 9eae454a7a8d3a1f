import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Writes a response body into a file from an offset, in large writes on a queue of its own, so that a slow disk
/// never holds up the thread that delivers network data (URLSession's delegate queue is shared by every request of a
/// session).
final class FileSink: @unchecked Sendable {
    // Safety: `handle` and `failure` are only touched on `queue`, a serial queue; `buffer` and `length` are only
    // touched by the owner, which calls `write`, `close` and `abandon` one at a time (under its own lock).
    private let queue = DispatchQueue(label: "Switchboard.FileSink")
    private let handle: FileHandle
    private var failure: (any Error)?
    private var buffer = Data()
    /// The file's length once everything written so far is on disk: the offset it started at, plus the bytes given.
    private(set) var length: Int64
    private static let chunkSize = 1 << 20

    /// Whether writes happen in `write` itself (blocking the caller) instead of on the sink's queue.
    private let synchronous: Bool

    /// Opens (creating if needed) a file and cuts it to `start` bytes; writing continues from there.
    ///
    /// - Parameter synchronous: write in the caller's thread, which then waits for the disk: what an engine wants
    ///   when waiting is its backpressure (libcurl stops reading while its write callback runs).
    init(url: URL, start: Int64, synchronous: Bool = false) throws {
        self.synchronous = synchronous
        if !FileManager.default.fileExists(atPath: url.path) {
            guard FileManager.default.createFile(atPath: url.path, contents: nil) else {
                throw HTTPError(.fileSystem, "cannot create \(url.path)")
            }
        }
        handle = try FileHandle(forWritingTo: url)
        try handle.truncate(atOffset: UInt64(start))
        try handle.seek(toOffset: UInt64(start))
        length = start
    }

    /// Collects bytes and hands them to the writing queue 1 MiB at a time; a failed write is thrown by `close`.
    func write(_ data: Data) throws {
        length += Int64(data.count)
        buffer.append(data)
        if buffer.count >= FileSink.chunkSize { handOver() }
    }

    /// Waits for the queued writes and closes; returns the file's length. It does not sync: that waits for the disk,
    /// and the center syncs a download before moving it into place.
    func close() throws -> Int64 {
        handOver()
        try queue.sync {
            try? handle.close()
            if let failure { throw failure }
        }
        return length
    }

    /// Writes what it can and closes, ignoring errors (the exchange failed anyway).
    func abandon() {
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
    /// Where the body of a response goes under this request's destination: a file sink for a `200` or `206`
    /// (checking that a `206` starts where asked: the destination's offset, or `start` for a later segment), else
    /// memory.
    func sink(for response: some ResponseHeadFields, start expected: Int64? = nil, synchronous: Bool = false) throws -> FileSink? {
        guard case .file(let url, let offset) = destination, response.statusCode == 200 || response.statusCode == 206
        else { return nil }
        var start: Int64 = 0
        if response.statusCode == 206 {
            let header = response.value(forHTTPHeaderField: "Content-Range")
            let wanted = expected ?? offset
            guard let range = ContentRange(header), range.start == wanted else {
                throw HTTPError(
                    .transport, "the server sent 206 with Content-Range \"\(header ?? "")\"; expected bytes from \(wanted)")
            }
            start = wanted
        }
        return try FileSink(url: url, start: start, synchronous: synchronous)
    }
}

/// A `Content-Range: bytes a-b/total` header (`total` may be `*`), or `bytes */total` for a 416.
struct ContentRange: Equatable {
    var start: Int64?
    var end: Int64?
    var total: Int64?

    init?(_ header: String?) {
        guard let header, header.lowercased().hasPrefix("bytes ") else { return nil }
        let spec = header.dropFirst("bytes ".count).split(separator: "/", maxSplits: 1)
        guard spec.count == 2 else { return nil }
        total = Int64(spec[1].trimmingCharacters(in: .whitespaces))
        let range = spec[0].trimmingCharacters(in: .whitespaces)
        if range != "*" {
            let bounds = range.split(separator: "-", maxSplits: 1)
            guard bounds.count == 2, let start = Int64(bounds[0]), let end = Int64(bounds[1]) else { return nil }
            self.start = start
            self.end = end
        }
    }
}

/// Progress of a body being received, counting any offset it resumes from.
struct DownloadCounter {
    var start: Int64 = 0
    var received: Int64 = 0
    var expected: Int64?

    init() {}

    init(response: some ResponseHeadFields) {
        if response.statusCode == 206, let range = ContentRange(response.value(forHTTPHeaderField: "Content-Range")) {
            start = range.start ?? 0
            expected = range.total
        } else if let length = SessionTransfer.expectedLength(response) {
            expected = length
        }
    }

    mutating func add(_ count: Int) -> TransferProgress {
        received += Int64(count)
        return TransferProgress(direction: .download, completed: start + received, expected: expected)
    }
}
