import Foundation

/// Parses `multipart/form-data` request bodies for the httpbin echo (`form` and `files`).
enum Multipart {
    struct Part {
        var name: String
        var fileName: String?
        var contentType: String?
        var body: Data
    }

    static func parse(_ request: ServerRequest) -> [Part]? {
        guard let type = request.header("Content-Type"),
            let boundaryParameter = type.split(separator: ";").map({ $0.trimmingCharacters(in: .whitespaces) })
                .first(where: { $0.lowercased().hasPrefix("boundary=") })
        else { return nil }
        var boundary = String(boundaryParameter.dropFirst("boundary=".count))
        if boundary.hasPrefix("\""), boundary.hasSuffix("\""), boundary.count >= 2 {
            boundary = String(boundary.dropFirst().dropLast())
        }
        let delimiter = Data("--\(boundary)".utf8)
        let body = request.body
        var parts: [Part] = []
        guard var cursor = body.range(of: delimiter)?.upperBound else { return nil }
        while true {
            // After a delimiter: "--" ends the body, "\r\n" starts a part.
            if body[cursor...].starts(with: Data("--".utf8)) { return parts }
            guard body[cursor...].starts(with: Data("\r\n".utf8)) else { return nil }
            cursor += 2
            guard let headEnd = body.range(of: Data("\r\n\r\n".utf8), in: cursor..<body.endIndex),
                let next = body.range(of: Data("\r\n".utf8) + delimiter, in: headEnd.upperBound..<body.endIndex)
            else { return nil }
            let head = String(decoding: body[cursor..<headEnd.lowerBound], as: UTF8.self)
            var part = Part(name: "", body: Data(body[headEnd.upperBound..<next.lowerBound]))
            for line in head.components(separatedBy: "\r\n") {
                let lower = line.lowercased()
                if lower.hasPrefix("content-disposition:") {
                    part.name = parameter("name", in: line) ?? ""
                    part.fileName = parameter("filename", in: line)
                } else if lower.hasPrefix("content-type:") {
                    part.contentType = line.dropFirst("content-type:".count).trimmingCharacters(in: .whitespaces)
                }
            }
            parts.append(part)
            cursor = next.upperBound
        }
    }

    private static func parameter(_ name: String, in header: String) -> String? {
        for piece in header.split(separator: ";").dropFirst() {
            let pair = piece.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
            guard pair.count == 2, pair[0].lowercased() == name else { continue }
            var value = pair[1]
            if value.hasPrefix("\""), value.hasSuffix("\""), value.count >= 2 {
                value = String(value.dropFirst().dropLast())
            }
            return value
        }
        return nil
    }
}
