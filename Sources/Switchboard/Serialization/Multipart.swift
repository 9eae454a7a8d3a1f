import Foundation

/// A `multipart/form-data` body: text fields, then the parts, each file streamed from disk.
///
/// The boundary is fixed when the body is made, so a body re-opened for a retry or a redirect is byte for byte the
/// same.
struct Multipart {
    let boundary = "Switchboard-" + UUID().uuidString
    var fields: [(name: String, value: String)]
    var parts: [Request.FormPart]

    /// Bodies up to this size with no file parts are built in memory; others are streamed from their pieces.
    static let memoryLimit = 10 << 20

    var contentType: String { "multipart/form-data; boundary=\(boundary)" }

    /// The body for an engine: in memory when small and file-free, else a stream read from the pieces (file parts
    /// straight from disk, never copied), with its length known from them.
    ///
    /// - Throws: `.fileSystem` when a file part is missing, unreadable or not a regular file.
    func body(for request: Request) throws(HTTPError) -> EngineRequest.Body {
        // A part's MIME type goes into its head as it is: a line break would end the field there and start another
        // (`text/plain\r\nX-Admin: 1`), as in a request's own head.
        if let part = parts.first(where: { !HTTPHeaders.isSendable(name: "Content-Type", value: $0.mimeType ?? "") }) {
            throw HTTPError(
                .encoding,
                "the form part \"\(Multipart.quote(part.name))\" has a MIME type with a line break or NUL, which "
                    + "cannot be sent", request: request)
        }
        let pieces = try pieces(for: request)
        var length: Int64 = 0
        var hasFiles = false
        for piece in pieces {
            switch piece {
            case .data(let data):
                length += Int64(data.count)
            case .file(_, let size):
                hasFiles = true
                length += size
            }
        }
        if !hasFiles && length <= Int64(Multipart.memoryLimit) {
            var data = Data(capacity: Int(length))
            for case .data(let piece) in pieces { data.append(piece) }
            return .data(data)
        }
        var stream = Request.BodyStream(length: length) { MultipartStream(pieces) }
        stream.needsLength = true
        return .stream(stream)
    }

    /// The body in order: part heads, field values and part contents, files by reference with the length each has
    /// now, which the stream holds it to. A file part is refused as a raw file body is: one that is missing, cannot
    /// be read or is not a regular file, and one that measures 0 bytes but has some (a file in `/proc`).
    private func pieces(for request: Request) throws(HTTPError) -> [MultipartStream.Piece] {
        var pieces: [MultipartStream.Piece] = []
        for field in fields {
            pieces.append(
                .data(
                    Data(
                        "--\(boundary)\r\nContent-Disposition: form-data; name=\"\(Multipart.quote(field.name))\"\r\n\r\n\(field.value)\r\n"
                            .utf8)))
        }
        for part in parts {
            var fileName = part.fileName
            if fileName == nil, case .file(let url) = part.content { fileName = url.lastPathComponent }
            var head = "--\(boundary)\r\nContent-Disposition: form-data; name=\"\(Multipart.quote(part.name))\""
            if let fileName { head += "; filename=\"\(Multipart.quote(fileName))\"" }
            let type = part.mimeType ?? fileName.map(Multipart.mimeType(forFileName:)) ?? "application/octet-stream"
            head += "\r\nContent-Type: \(type)\r\n\r\n"
            pieces.append(.data(Data(head.utf8)))
            switch part.content {
            case .data(let data): pieces.append(.data(data))
            case .file(let url):
                pieces.append(.file(url, length: try UploadFile.length(url, for: request)))
            }
            pieces.append(.data(Data("\r\n".utf8)))
        }
        pieces.append(.data(Data("--\(boundary)--\r\n".utf8)))
        return pieces
    }

    /// Escapes a name for a quoted header parameter as browsers do (WHATWG): `"` and line breaks percent-encoded,
    /// each scalar of them, a combining mark after it or not (see `replacingScalars`).
    static func quote(_ text: String) -> String {
        text.replacingScalars { scalar in
            switch scalar {
            case "\"": "%22"
            case "\r": "%0D"
            case "\n": "%0A"
            default: nil
            }
        }
    }

    /// The MIME type for a file name's extension; `application/octet-stream` when unknown.
    static func mimeType(forFileName name: String) -> String {
        let ext = (name as NSString).pathExtension.lowercased()
        return mimeTypes[ext] ?? "application/octet-stream"
    }

    private static let mimeTypes: [String: String] = [
        "txt": "text/plain", "html": "text/html", "htm": "text/html", "css": "text/css", "csv": "text/csv",
        "js": "text/javascript", "json": "application/json", "xml": "application/xml", "pdf": "application/pdf",
        "zip": "application/zip", "gz": "application/gzip", "tar": "application/x-tar",
        "7z": "application/x-7z-compressed",
        "png": "image/png", "jpg": "image/jpeg", "jpeg": "image/jpeg", "gif": "image/gif", "webp": "image/webp",
        "heic": "image/heic", "heif": "image/heif", "svg": "image/svg+xml", "bmp": "image/bmp", "tif": "image/tiff",
        "tiff": "image/tiff", "ico": "image/vnd.microsoft.icon", "mp3": "audio/mpeg", "m4a": "audio/mp4",
        "aac": "audio/aac", "wav": "audio/wav", "ogg": "audio/ogg", "flac": "audio/flac", "mp4": "video/mp4",
        "m4v": "video/mp4", "mov": "video/quicktime", "webm": "video/webm", "avi": "video/x-msvideo",
        "plist": "application/x-plist", "md": "text/markdown", "yaml": "application/yaml", "yml": "application/yaml",
        "doc": "application/msword", "docx": "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
        "xls": "application/vnd.ms-excel", "xlsx": "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
        "ppt": "application/vnd.ms-powerpoint",
        "pptx": "application/vnd.openxmlformats-officedocument.presentationml.presentation",
        "bin": "application/octet-stream",
    ]
}
