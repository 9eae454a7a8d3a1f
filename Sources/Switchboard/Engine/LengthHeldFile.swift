import Foundation

/// An upload file read to the length it had when its body was made: the `Content-Length` it goes out with.
///
/// A file that grew or shrank meanwhile fails the read with `UploadFile.changed`'s error, and its end
/// is found before its last byte is handed over, so that a body never goes out with more or fewer bytes than it
/// announced (libcurl sent no more than the length of a file that grew, and waited until the idle timeout for the
/// rest of one that shrank; in a form, one file that grew and another that shrank by as much made a body of the
/// announced length with the parts' bytes shifted). A raw file body (CurlEngine's read callback) and a form's file
/// parts (`MultipartStream`, which URLSessionEngine reads a raw file body through as well) are read with it.
struct LengthHeldFile {
    let url: URL
    let length: Int64
    private let handle: FileHandle
    /// How much of the file has been handed over.
    private(set) var read: Int64 = 0

    /// Opens the file; throws what `FileHandle` throws when it cannot be read.
    init(_ url: URL, length: Int64) throws {
        self.url = url
        self.length = length
        handle = try FileHandle(forReadingFrom: url)
    }

    /// Whether the whole length has been handed over.
    var isAtEnd: Bool { read == length }

    /// Up to `count` more bytes, none once the length has been handed over.
    ///
    /// - Throws: `changedUploadFile`'s error when the file ends before its length, or has more after it (looked for
    ///   as the last bytes are read); a read error as `FileHandle` throws it.
    mutating func next(upTo count: Int) throws -> Data {
        let remaining = length - read
        let chunk = remaining > 0 ? try handle.read(upToCount: Int(min(Int64(count), remaining))) ?? Data() : Data()
        read += Int64(chunk.count)
        if chunk.isEmpty && remaining > 0 {
            throw UploadFile.changed(url, read: read, of: length)
        }
        if read == length, try !(handle.read(upToCount: 1) ?? Data()).isEmpty {
            throw UploadFile.changed(url, read: length + 1, of: length)
        }
        return chunk
    }

    /// Goes back to `offset`, for a body sent again.
    mutating func seek(to offset: Int64) throws {
        try handle.seek(toOffset: UInt64(offset))
        read = offset
    }

    func close() {
        try? handle.close()
    }
}
