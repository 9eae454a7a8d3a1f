import Foundation
import Switchboard

/// What reading a JSON body costs: `JSON(data:)` (the parser behind `Response.json` and the envelope) beside
/// Foundation's `JSONSerialization` over the same bytes, in alternating rounds. Two documents of 2,000 records: one
/// with its Chinese text as UTF-8, one with every non-ASCII letter written as a `\uXXXX` escape (as servers that
/// escape all non-ASCII text send it), which is where the parsers differ most.
enum ParsingBenchmarks {
    static let records = 2000
    /// Parses of a document per sample.
    static let parses = 20

    static func document(escaped: Bool) -> Data {
        var text = "["
        for index in 0..<records {
            if index > 0 { text += "," }
            text +=
                escaped
                ? #"{"id":\#(index),"name":"\u5f20\u4e09\u674e\u56db","city":"\u5317\u4eac\u5e02\u671d\u9633\u533a","note":"ok \ud83d\ude00 done","score":12345678901234567}"#
                : #"{"id":\#(index),"name":"张三李四","city":"北京市朝阳区","note":"ok 😀 done","score":12345678901234567}"#
        }
        return Data((text + "]").utf8)
    }

    /// The UTF-8 document's records with snake-case names and a date in seconds since 1970, as many servers send them.
    static func snakeCaseDocument() -> Data {
        datedDocument(names: ["user_id", "display_name", "home_city", "note", "score", "created_at"])
    }

    /// The same records with names in Pascal case, for a decoder with a custom key strategy.
    static func pascalCaseDocument() -> Data {
        datedDocument(names: ["UserId", "DisplayName", "HomeCity", "Note", "Score", "CreatedAt"])
    }

    /// The UTF-8 document's records with a date in seconds since 1970, under the six names given.
    private static func datedDocument(names: [String]) -> Data {
        var text = "["
        for index in 0..<records {
            if index > 0 { text += "," }
            text +=
                #"{"\#(names[0])":\#(index),"\#(names[1])":"张三李四","\#(names[2])":"北京市朝阳区","#
                + #""\#(names[3])":"ok 😀 done","\#(names[4])":12345678901234567,"\#(names[5])":1700000000.5}"#
        }
        return Data((text + "]").utf8)
    }

    static func run(rounds: Int) async throws -> [Row] {
        var rows: [Row] = []
        for escaped in [false, true] {
            let data = document(escaped: escaped)
            // Both read the same document: checked once, outside the timing.
            let own = try JSON(data: data)
            let foundation = try JSONSerialization.jsonObject(with: data) as? [[String: Any]]
            guard own[records - 1]?["name"]?.string == "张三李四",
                foundation?[records - 1]["name"] as? String == "张三李四"
            else { throw URLError(.cannotParseResponse) }
            let parsers: [(String, @Sendable (Int) async throws -> Void)] = [
                ("Switchboard's JSON(data:)", { _ in _ = try JSON(data: data) }),
                ("Foundation's JSONSerialization", { _ in _ = try JSONSerialization.jsonObject(with: data) }),
            ]
            let medians = try await alternatingMedians(of: parsers.map(\.1), count: parses, rounds: rounds)
            let kind = escaped ? "every non-ASCII letter \\u-escaped" : "Chinese text as UTF-8"
            for (index, (name, _)) in parsers.enumerated() {
                let sample = medians[index]
                let megabytesPerSecond = Double(data.count * parses) / sample.wall.seconds / 1e6
                var note = String(format: "%.0f MB/s", megabytesPerSecond)
                if index == 0 {
                    note += String(format: ", %.2f× JSONSerialization's time", sample.wall / medians[1].wall)
                }
                rows.append(
                    Row(
                        family: "JSON parsing",
                        name: "\(data.count / 1000) KB, \(kind): \(name)", sample: sample, ratio: nil, note: note))
            }
        }
        rows += try await typedRows(rounds: rounds)
        return rows
    }

    /// A record of the documents, as an app declares it.
    struct Record: Decodable, Sendable {
        let id: Int
        let name: String
        let city: String
        let note: String
        let score: Int64
    }

    /// A record of the snake-case document, as an app declares it for `.convertFromSnakeCase` (and of the Pascal-case
    /// one, for a key strategy of its own).
    struct SnakeCaseRecord: Decodable, Sendable {
        let userId: Int
        let displayName: String
        let homeCity: String
        let note: String
        let score: Int64
        let createdAt: Date
    }

    /// `center.send([Record].self)` over the UTF-8 document: decoded from the body the center parsed when it
    /// arrived (a `JSONDecoder` at its defaults), beside the same send with a decoder of a `JSONDecoder` subclass,
    /// which decodes the body's bytes itself (as every typed send did before). Then the same over the snake-case
    /// document, with a decoder that converts from snake case and reads dates as seconds since 1970, and over the
    /// Pascal-case document, with a custom key strategy. (A date formatter's strategy is followed too, but its own
    /// parsing takes most of such a send's time: 2,000 dates took about 0.2 s through `DateFormatter` here.)
    static func typedRows(rounds: Int) async throws -> [Row] {
        let plain = try await typedRows(
            Record.self, "records", document(escaped: false), decoder: { JSONDecoder() }, rounds: rounds)
        let snakeCase = try await typedRows(
            SnakeCaseRecord.self, "snake-case records, dates since 1970", snakeCaseDocument(),
            decoder: {
                let decoder = JSONDecoder()
                decoder.keyDecodingStrategy = .convertFromSnakeCase
                decoder.dateDecodingStrategy = .secondsSince1970
                return decoder
            }, rounds: rounds)
        let custom = try await typedRows(
            SnakeCaseRecord.self, "Pascal-case records, custom keys, dates since 1970", pascalCaseDocument(),
            decoder: {
                let decoder = JSONDecoder()
                decoder.keyDecodingStrategy = .custom { path in
                    let name = path.last!.stringValue
                    return CamelKey(stringValue: name.prefix(1).lowercased() + name.dropFirst())
                }
                decoder.dateDecodingStrategy = .secondsSince1970
                return decoder
            }, rounds: rounds)
        return plain + snakeCase + custom
    }

    /// A `JSONDecoder` of a subclass, which a typed send never stands in for: it decodes the body's bytes itself.
    // Safety: it adds nothing to `JSONDecoder`, whose own settings are kept under its lock.
    final class BytesDecoder: JSONDecoder, @unchecked Sendable {}

    /// A name as a key, as a custom key strategy returns it.
    struct CamelKey: CodingKey {
        let stringValue: String
        init(stringValue: String) { self.stringValue = stringValue }
        var intValue: Int? { nil }
        init?(intValue: Int) { nil }
    }

    /// A typed send of `data` with the decoder `decoder` makes, beside the same send with a `BytesDecoder` of the same
    /// strategies (which decodes the bytes itself).
    static func typedRows<Element: Decodable & Sendable>(
        _ type: Element.Type, _ label: String, _ data: Data, decoder: @escaping @Sendable () -> JSONDecoder,
        rounds: Int
    ) async throws -> [Row] {
        let center = Center { config in
            config.engine = BodyEngine(body: data, contentType: "application/json")
            config.server = "http://parsing.invalid/"
        }
        let withSetting: @Sendable () -> JSONDecoder = {
            let settings = decoder()
            let made = BytesDecoder()
            made.keyDecodingStrategy = settings.keyDecodingStrategy
            made.dateDecodingStrategy = settings.dateDecodingStrategy
            return made
        }
        let send: @Sendable (@escaping @Sendable () -> JSONDecoder) -> @Sendable (Int) async throws -> Void = {
            decoder in
            { _ in
                let records = try await center.send([Element].self, decoder: decoder) { $0.api = "records" }
                guard records.count == ParsingBenchmarks.records else { throw URLError(.cannotParseResponse) }
            }
        }
        let sends = [
            ("decoded from the parsed body", send(decoder)),
            ("decoded from the bytes by JSONDecoder", send(withSetting)),
        ]
        let medians = try await alternatingMedians(of: sends.map(\.1), count: parses, rounds: rounds)
        return sends.enumerated().map { index, send in
            let sample = medians[index]
            var note = String(format: "%.2f ms a send", sample.wall.seconds * 1000 / Double(parses))
            if index == 0 { note += String(format: ", %.2f× the time of JSONDecoder's", sample.wall / medians[1].wall) }
            return Row(
                family: "JSON parsing",
                name: "typed send of \(records) \(label) (\(data.count / 1000) KB): \(send.0)", sample: sample,
                ratio: nil, note: note)
        }
    }
}
