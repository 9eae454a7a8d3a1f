import Foundation

enum Report {
    /// The line that says how a run measures, before its first table.
    static func preamble(requests: Int, rounds: Int) -> String {
        "Switchboard benchmarks: \(requests) requests a contender (1 MiB: a quarter) in each of \(rounds) interleaved "
            + "rounds (the request rows: \(rounds * RequestBenchmarks.roundSplit) rounds of a third), median, "
            + "loopback server in a child process, \(ProcessInfo.processInfo.activeProcessorCount) cores"
    }

    /// The preamble and one table of every row, with the notes: what a run of one part prints.
    static func table(_ rows: [Row], requests: Int, rounds: Int) -> String {
        preamble(requests: requests, rounds: rounds) + "\n\n" + table(rows, notes: true)
    }

    /// A table of rows, with the notes on its columns when `notes` is set.
    static func table(_ rows: [Row], notes: Bool) -> String {
        var lines: [String] = []
        let header = ["benchmark", "req/s", "p50 ms", "p99 ms", "CPU µs/req", "ratio", "requests per CPU-second"]
        var cells = [header]
        for row in rows {
            cells.append([
                "\(row.family): \(row.name)",
                String(format: "%.0f", row.sample.requestsPerSecond),
                row.sample.latencies.isEmpty ? "-" : String(format: "%.3f", row.sample.percentile(0.5).milliseconds),
                row.sample.latencies.isEmpty ? "-" : String(format: "%.3f", row.sample.percentile(0.99).milliseconds),
                String(format: "%.0f", row.sample.cpuPerRequest.microseconds),
                row.ratio.map { String(format: "%.2f×", $0) } ?? "",
                row.note,
            ])
        }
        let widths = header.indices.map { column in cells.map { $0[column].count }.max() ?? 0 }
        for (index, row) in cells.enumerated() {
            let padded = row.enumerated().map { column, text in
                column == 0 || column == row.count - 1
                    ? text.padding(toLength: widths[column], withPad: " ", startingAt: 0)
                    : String(repeating: " ", count: widths[column] - text.count) + text
            }
            lines.append(padded.joined(separator: "  "))
            if index == 0 { lines.append(widths.map { String(repeating: "-", count: $0) }.joined(separator: "  ")) }
        }
        guard notes else { return lines.joined(separator: "\n") }
        lines.append("")
        lines.append(
            "ratio: throughput against raw URLSession in the same run. CPU: the client process alone "
                + "(user + system) per request; requests per CPU-second against raw URLSession's (and, for the Center on "
                + "CurlEngine, against the Center on URLSessionEngine).")
        return lines.joined(separator: "\n")
    }

    static func transfers(_ results: [TransferBenchmarks.Result]) -> String {
        guard let bytes = results.first?.bytes else { return "" }
        var lines = [
            "Transfers of \(bytes >> 20) MiB on the loopback server, each case in a process of its own, \(TransferBenchmarks.rounds) times in alternating order, medians",
            "",
            "case                                        MB/s   ratio   peak memory above baseline",
            "------------------------------------------  -----  ------  --------------------------",
        ]
        let names = [
            "download-raw": "download: raw URLSession download(from:)",
            "download-center": "download: Center, URLSessionEngine",
            "download-curl": "download: Center, CurlEngine",
            "upload-raw": "upload: raw URLSession upload(fromFile:)",
            "upload-center": "upload: Center, URLSessionEngine",
            "upload-curl": "upload: Center, CurlEngine",
            "upload-multipart-center": "multipart upload: Center, URLSessionEngine",
            "upload-multipart-curl": "multipart upload: Center, CurlEngine",
            "stream-slow-curl": "stream, reader at 256 MiB/s: Center, Curl",
        ]
        for result in results {
            let kind = result.name.split(separator: "-").first.map(String.init) ?? ""
            let raw = results.first { $0.name == "\(kind)-raw" }
            let ratio =
                raw.map { String(format: "%5.2f×", result.megabytesPerSecond / $0.megabytesPerSecond) } ?? "     -"
            lines.append(
                (names[result.name] ?? result.name).padding(toLength: 42, withPad: " ", startingAt: 0)
                    + String(format: "  %5.0f  ", result.megabytesPerSecond) + ratio
                    + String(format: "  %6.1f MiB", Double(result.peakAboveBaseline) / 1_048_576))
        }
        return lines.joined(separator: "\n")
    }

    static func json(_ rows: [Row], transfers: [TransferBenchmarks.Result], quick: Bool) -> String {
        let objects: [[String: Any]] = rows.map { row in
            var object: [String: Any] = [
                "family": row.family,
                "name": row.name,
                "requests": row.sample.requests,
                "requests_per_second": row.sample.requestsPerSecond,
                "cpu_us_per_request": row.sample.cpuPerRequest.microseconds,
            ]
            if !row.sample.latencies.isEmpty {
                object["p50_ms"] = row.sample.percentile(0.5).milliseconds
                object["p99_ms"] = row.sample.percentile(0.99).milliseconds
            }
            if let ratio = row.ratio { object["ratio"] = ratio }
            if !row.note.isEmpty { object["note"] = row.note }
            return object
        }
        let transferObjects: [[String: Any]] = transfers.map { result in
            [
                "name": result.name, "bytes": result.bytes, "seconds": result.seconds,
                "megabytes_per_second": result.megabytesPerSecond,
                "peak_above_baseline_bytes": result.peakAboveBaseline,
            ]
        }
        let data = try? JSONSerialization.data(
            withJSONObject: ["quick": quick, "results": objects, "transfers": transferObjects],
            options: [.prettyPrinted, .sortedKeys])
        return data.map { String(decoding: $0, as: UTF8.self) } ?? "{}"
    }
}
