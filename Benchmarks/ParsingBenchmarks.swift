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

    /// `center.send([Record].self)` over the UTF-8 document: decoded from the body the center parsed when it
    /// arrived (a `JSONDecoder` at its defaults), beside the same send with a decoder that has a `userInfo` entry,
    /// which decodes the body's bytes itself (as every typed send did before).
    static func typedRows(rounds: Int) async throws -> [Row] {
        let data = document(escaped: false)
        let center = Center { config in
            config.engine = BodyEngine(body: data, contentType: "application/json")
            config.server = "http://parsing.invalid/"
        }
        let plain: @Sendable () -> JSONDecoder = { JSONDecoder() }
        let withSetting: @Sendable () -> JSONDecoder = {
            let decoder = JSONDecoder()
            decoder.userInfo[CodingUserInfoKey(rawValue: "benchmark")!] = true
            return decoder
        }
        let sends: [(String, @Sendable (Int) async throws -> Void)] = [
            (
                "decoded from the parsed body",
                { _ in
                    let records = try await center.send([Record].self, decoder: plain) { $0.api = "records" }
                    guard records.count == ParsingBenchmarks.records else { throw URLError(.cannotParseResponse) }
                }
            ),
            (
                "decoded from the bytes by JSONDecoder",
                { _ in
                    let records = try await center.send([Record].self, decoder: withSetting) { $0.api = "records" }
                    guard records.count == ParsingBenchmarks.records else { throw URLError(.cannotParseResponse) }
                }
            ),
        ]
        let medians = try await alternatingMedians(of: sends.map(\.1), count: parses, rounds: rounds)
        return sends.enumerated().map { index, send in
            let sample = medians[index]
            var note = String(format: "%.2f ms a send", sample.wall.seconds * 1000 / Double(parses))
            if index == 0 { note += String(format: ", %.2f× the time of JSONDecoder's", sample.wall / medians[1].wall) }
            return Row(
                family: "JSON parsing",
                name: "typed send of \(records) records (\(data.count / 1000) KB): \(send.0)", sample: sample,
                ratio: nil, note: note)
        }
    }
}
