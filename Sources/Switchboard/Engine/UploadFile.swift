import Foundation

/// A file sent as a body or a form part: the checks made before anything is sent, and the errors an engine reports
/// when it cannot read one.
enum UploadFile {
    /// Refuses an upload file that is missing, unreadable or not a regular file (see `isReadable`), before
    /// anything is sent.
    static func check(_ file: URL, for request: Request) throws(HTTPError) {
        guard isReadable(file) else { throw unreadable(file, for: request) }
    }

    /// Whether a file exists, is a regular file (after symbolic links), and can be read.
    ///
    /// Not a directory, and not a FIFO, a device or a socket either: those have no length to send as the body's
    /// `Content-Length`, and opening a FIFO no process writes to waits forever (it held up the request, and on
    /// `CurlEngine` every other request, with it); `/dev/zero` never ends.
    static func isReadable(_ file: URL) -> Bool {
        readableSize(file) != nil
    }

    /// The size of a file that `isReadableFile` accepts, from the same `stat`; `nil` for any other.
    static func readableSize(_ file: URL) -> Int64? {
        var status = stat()
        guard stat(file.path, &status) == 0, status.st_mode & S_IFMT == S_IFREG,
            FileManager.default.isReadableFile(atPath: file.path)
        else { return nil }
        return Int64(status.st_size)
    }

    static func unreadable(_ file: URL, for request: Request? = nil) -> HTTPError {
        HTTPError(
            .fileSystem,
            "the upload file \(file.path) does not exist or cannot be read (or is not a regular file: a directory, a "
                + "FIFO, a device or a socket)", request: request)
    }

    /// The length an upload file goes with (its `Content-Length`), checked before anything is sent: refused when it
    /// is missing, unreadable or not a regular file (see `isReadable`), and when it measures 0 bytes but has some
    /// (a file in `/proc`, say): its `Content-Length` would be 0, and the server would take the empty request whole
    /// (URLSessionEngine sent it, then failed; CurlEngine sent it and succeeded). For a raw file body and a form's
    /// file part alike.
    static func length(_ file: URL, for request: Request? = nil) throws(HTTPError) -> Int64 {
        guard let size = readableSize(file) else { throw unreadable(file, for: request) }
        guard size == 0, let handle = try? FileHandle(forReadingFrom: file) else { return size }
        defer { try? handle.close() }
        guard (try? handle.read(upToCount: 1))?.isEmpty == false else { return size }
        throw HTTPError(
            .fileSystem,
            "the upload file \(file.path) measures 0 bytes but has more to read (a file in /proc, or one being "
                + "written): it has no length to send; copy it to a file first", request: request)
    }

    /// An upload file that grew or shrank while it was sent: the server would have had a body that is neither the
    /// file as it was nor as it is. `count` bytes were read of the `length` it had when the send started (more than
    /// `length`: it has bytes beyond it).
    static func changed(_ file: URL, read count: Int64, of length: Int64) -> HTTPError {
        HTTPError(
            .fileSystem,
            "the upload file \(file.path) changed while it was sent: it had \(length) bytes when the send started, "
                + (count > length ? "and has more now" : "and ended after \(count)"))
    }
}

extension EngineRequest {
    /// The version in the default `User-Agent`.
    static let libraryVersion = "0.1.0"

    static let defaultUserAgent: String = {
        #if os(Linux)
        let system = "Linux"
        #elseif os(iOS)
        let system = "iOS"
        #elseif os(macOS)
        let system = "macOS"
        #elseif os(tvOS)
        let system = "tvOS"
        #elseif os(watchOS)
        let system = "watchOS"
        #else
        let system = "unknown"
        #endif
        return "Switchboard/\(libraryVersion) (\(system))"
    }()
}
