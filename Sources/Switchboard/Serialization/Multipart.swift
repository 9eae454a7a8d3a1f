import Foundation

/// A `multipart/form-data` body: text fields, then the parts, each file streamed from disk.
struct Multipart {
    let boundary = "Switchboard-" + UUID().uuidString
    var fields: [(name: String, value: String)]
    var parts: [Request.FormPart]

    /// Bodies up to this size with no file parts are built in memory; others are written to a temporary file.
    static let memoryLimit = 10 << 20

    var contentType: String { "multipart/form-data; boundary=\(boundary)" }

    /// Builds the body for an engine: in memory when small and file-free, else in a temporary file that the
    /// center deletes when the exchange ends.
    ///
    /// - Throws: `.fileSystem` when a file part is missing or unreadable.
    func body(for request: Request) throws(HTTPError) -> (EngineRequest.Body, temporary: URL?) {
        for case .file(let url) in parts.map(\.content) {
            guard FileManager.default.isReadableFile(atPath: url.path) else {
                throw HTTPError(.fileSystem, "the upload file \(url.path) does not exist or cannot be read",
                                request: request)
            }
        }
        var bytesInMemory = 0
        var hasFiles = false
        for part in parts {
            switch part.content {
            case .data(let data): bytesInMemory += data.count
            case .file: hasFiles = true
            }
        }
        let inMemory = !hasFiles && bytesInMemory <= Multipart.memoryLimit
        do {
            if inMemory {
                var data = Data()
                try write { data.append($0) }
                return (.data(data), nil)
            }
            let file = FileManager.default.temporaryDirectory
                .appendingPathComponent("switchboard-multipart-\(UUID().uuidString)")
            guard FileManager.default.createFile(atPath: file.path, contents: nil) else {
                throw HTTPError(.fileSystem, "cannot create a temporary file in \(file.deletingLastPathComponent().path)")
            }
            do {
                let handle = try FileHandle(forWritingTo: file)
                defer { try? handle.close() }
                try write { try handle.write(contentsOf: $0) }
            } catch {
                try? FileManager.default.removeItem(at: file)
                throw error
            }
            return (.file(file), file)
        } catch let error as HTTPError {
            throw error.with(request: request)
        } catch {
            throw HTTPError(.fileSystem, "the multipart body could not be written: \(error)", request: request,
                            underlying: error)
        }
    }

    /// Produces the body in pieces: part headers, field values, and file contents 1 MiB at a time.
    private func write(_ emit: (Data) throws -> Void) throws {
        for field in fields {
            try emit(Data("--\(boundary)\r\nContent-Disposition: form-data; name=\"\(Multipart.quote(field.name))\"\r\n\r\n".utf8))
            try emit(Data(field.value.utf8))
            try emit(Data("\r\n".utf8))
        }
        for part in parts {
            var fileName = part.fileName
            if fileName == nil, case .file(let url) = part.content { fileName = url.lastPathComponent }
            var head = "--\(boundary)\r\nContent-Disposition: form-data; name=\"\(Multipart.quote(part.name))\""
            if let fileName { head += "; filename=\"\(Multipart.quote(fileName))\"" }
            let type = part.mimeType ?? fileName.map(Multipart.mimeType(forFileName:)) ?? "application/octet-stream"
            head += "\r\nContent-Type: \(type)\r\n\r\n"
            try emit(Data(head.utf8))
            switch part.content {
            case .data(let data):
                try emit(data)
            case .file(let url):
                let handle = try FileHandle(forReadingFrom: url)
                defer { try? handle.close() }
                while let chunk = try handle.read(upToCount: 1 << 20), !chunk.isEmpty { try emit(chunk) }
            }
            try emit(Data("\r\n".utf8))
        }
        try emit(Data("--\(boundary)--\r\n".utf8))
    }

    /// Escapes a name for a quoted header parameter as browsers do (WHATWG): `"` and line breaks percent-encoded.
    static func quote(_ text: String) -> String {
        text.replacingOccurrences(of: "\"", with: "%22")
            .replacingOccurrences(of: "\r", with: "%0D")
            .replacingOccurrences(of: "\n", with: "%0A")
    }

    /// The MIME type for a file name's extension; `application/octet-stream` when unknown.
    static func mimeType(forFileName name: String) -> String {
        let ext = (name as NSString).pathExtension.lowercased()
        return mimeTypes[ext] ?? "application/octet-stream"
    }

    private static let mimeTypes: [String: String] = [
        "txt": "text/plain", "html": "text/html", "htm": "text/html", "css": "text/css", "csv": "text/csv",
        "js": "text/javascript", "json": "application/json", "xml": "application/xml", "pdf": "application/pdf",
        "zip": "application/zip", "gz": "application/gzip", "tar": "application/x-tar", "7z": "application/x-7z-compressed",
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
