import Foundation

/// A multipart body read straight from its pieces: part heads and fields from memory, file parts from disk, in
/// order, without first copying them into a temporary file. `Multipart` knows the length from the pieces.
///
/// Each file part is held to the length it had when the body was made, as a raw file body is: a file that grew or
/// shrank meanwhile fails the read with `UploadFile.changed`'s error (read to its end, one file that
/// grew and another that shrank by as much made a body of the announced length, with the parts' bytes shifted).
///
/// An `InputStream`, because that is what both engines read a streamed body from. Made afresh (by the body's
/// `open`) for every send, and read by one thread at a time, as the engines do with any stream body.
final class MultipartStream: InputStream {
    enum Piece: Sendable {
        case data(Data)
        /// A file, and the length it is held to.
        case file(URL, length: Int64)
    }

    private let pieces: [Piece]
    private var index = 0
    /// Where the current data piece has been read to.
    private var offset = 0
    /// The current file piece, once it is opened.
    private var file: LengthHeldFile?
    private var status: Stream.Status = .notOpen
    private var failure: (any Error)?

    init(_ pieces: [Piece]) {
        self.pieces = pieces
        super.init(data: Data())
    }

    override func open() {
        status = .open
    }

    override func close() {
        file?.close()
        file = nil
        status = .closed
    }

    override var streamStatus: Stream.Status { status }

    override var streamError: (any Error)? { failure }

    override var hasBytesAvailable: Bool {
        status == .open && index < pieces.count
    }

    override func read(_ buffer: UnsafeMutablePointer<UInt8>, maxLength length: Int) -> Int {
        guard status == .open || status == .atEnd else { return -1 }
        var written = 0
        while written < length, index < pieces.count {
            switch pieces[index] {
            case .data(let data):
                let count = min(length - written, data.count - offset)
                // An empty part has nothing to copy (and its bytes may have no address at all).
                if count > 0 {
                    data.withUnsafeBytes { bytes in
                        (buffer + written).update(
                            from: bytes.bindMemory(to: UInt8.self).baseAddress! + offset, count: count)
                    }
                }
                written += count
                offset += count
                if offset == data.count { next() }
            case .file(let url, let expected):
                do {
                    if file == nil { file = try LengthHeldFile(url, length: expected) }
                    let chunk = try file!.next(upTo: length - written)
                    if !chunk.isEmpty {
                        chunk.withUnsafeBytes { bytes in
                            (buffer + written).update(
                                from: bytes.bindMemory(to: UInt8.self).baseAddress!, count: chunk.count)
                        }
                        written += chunk.count
                    }
                    if file!.isAtEnd { next() }
                } catch {
                    failure = error
                    status = .error
                    return -1
                }
            }
        }
        if index == pieces.count { status = .atEnd }
        return written
    }

    override func getBuffer(
        _ buffer: UnsafeMutablePointer<UnsafeMutablePointer<UInt8>?>, length len: UnsafeMutablePointer<Int>
    ) -> Bool {
        false
    }

    /// On to the next piece, closing the file just read.
    private func next() {
        file?.close()
        file = nil
        index += 1
        offset = 0
    }
}
