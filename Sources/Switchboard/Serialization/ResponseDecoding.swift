import Foundation

/// Decodes a response body with the request's response serializer.
enum ResponseDecoding {
    /// The decoded value. An empty body is `.empty` whatever the serializer (a `HEAD`, a `204` are successes).
    ///
    /// - Throws: `.decoding`, saying what was expected and what the body looks like.
    static func decode(_ response: Response) throws(HTTPError) -> Response.Value {
        let data = response.data
        if data.isEmpty { return .empty }
        do throws(HTTPError) {
            switch response.request.responseSerializer {
            case .raw:
                return .data(data)
            case .json:
                return .json(try JSON(data: data))
            case .plist:
                let object: Any
                do {
                    object = try PropertyListSerialization.propertyList(from: data, options: [], format: nil)
                } catch {
                    throw HTTPError(.decoding, "the body is not a property list", underlying: error)
                }
                return .json(try JSON(foundation: object))
            case .xml:
                return .xml(try XML(data: data))
            case .string:
                guard let text = String(data: data, encoding: encoding(of: response.headers["Content-Type"])) else {
                    throw HTTPError(.decoding, "the body is not text in the charset it declares")
                }
                return .string(text)
            }
        } catch {
            var error = error
            error.request = response.request
            error.response = response
            error.message += " (\(describe(response)))"
            throw error
        }
    }

    /// `text/html, 1234 bytes`: enough to see at a glance why a body did not decode.
    private static func describe(_ response: Response) -> String {
        let type = response.headers["Content-Type"].map { $0.split(separator: ";")[0] } ?? "no Content-Type"
        return "\(type), \(response.data.count) bytes"
    }

    /// The string encoding named by a `Content-Type` charset; UTF-8 when none is named or it is unknown.
    static func encoding(of contentType: String?) -> String.Encoding {
        guard let contentType,
            let charset = contentType.lowercased().split(separator: ";").lazy
                .map({ $0.trimmingCharacters(in: .whitespaces) })
                .first(where: { $0.hasPrefix("charset=") })?
                .dropFirst("charset=".count)
                .trimmingCharacters(in: CharacterSet(charactersIn: "\""))
        else { return .utf8 }
        switch charset {
        case "iso-8859-1", "latin1", "latin-1": return .isoLatin1
        case "us-ascii", "ascii": return .ascii
        case "utf-16": return .utf16
        case "utf-16le": return .utf16LittleEndian
        case "utf-16be": return .utf16BigEndian
        case "windows-1252", "cp1252": return .windowsCP1252
        default: return .utf8
        }
    }
}
