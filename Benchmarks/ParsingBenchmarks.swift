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
            var samples = Array(repeating: [Sample](), count: parsers.count)
            for round in 0..<rounds {
                for index in round % 2 == 0 ? Array(parsers.indices) : parsers.indices.reversed() {
                    samples[index].append(try await measure(count: parses, concurrency: 1, parsers[index].1))
                }
            }
            let medians = samples.map(median)
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
        return rows
    }
}
