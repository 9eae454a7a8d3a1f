import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import HeapStats
import Switchboard
import SwitchboardTestSupport

/// Large downloads and uploads, raw URLSession beside the Center, each in a child process of its own so that each
/// one's peak memory is its own: throughput, and peak resident memory above the child's baseline. Uploads go to
/// `/discard`, which counts the bytes and drops them (hashing them, as `/sink` does, capped the fastest client).
enum TransferBenchmarks {
    struct Result: Codable {
        var name: String
        var bytes: Int
        var seconds: Double
        var peakAboveBaseline: Int
        var megabytesPerSecond: Double { Double(bytes) / seconds / 1_048_576 }
    }

    static let cases = [
        "download-raw", "download-center", "download-curl", "upload-raw", "upload-center", "upload-curl",
        "upload-multipart-center", "upload-multipart-curl", "stream-slow-curl",
    ]

    /// How fast the slow stream reader reads: slower than the loopback network, so the transfer must wait for it.
    static let slowReaderBytesPerSecond = 256.0 * 1_048_576

    /// How many times each case runs. A peak of resident memory moves by several MiB from one run of a case to the
    /// next (a 1 GiB URLSessionEngine download measured 11-21 MiB for the same code), so each figure is its own
    /// median over the rounds.
    static let rounds = 3

    /// Runs every case in a child process, `rounds` times in alternating order, and returns each case's medians.
    static func run(bytes: Int) throws -> [Result] {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("switchboard-bench-\(getpid())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let upload = directory.appendingPathComponent("upload.bin")
        try writeFile(upload, bytes: bytes)
        var results: [String: [Result]] = [:]
        for round in 0..<rounds {
            for name in round % 2 == 0 ? cases : cases.reversed() {
                results[name, default: []].append(
                    try runChildCase(
                        ["--transfer-case", name, String(bytes), directory.path], as: Result.self,
                        what: "transfer case \(name)"))
            }
        }
        return cases.map { name in
            let runs = results[name]!
            let seconds = runs.map(\.seconds).sorted()
            let peaks = runs.map(\.peakAboveBaseline).sorted()
            return Result(
                name: name, bytes: bytes, seconds: seconds[seconds.count / 2], peakAboveBaseline: peaks[peaks.count / 2]
            )
        }
    }

    /// The body of a child process: one case, measured, printed as JSON.
    static func runCase(_ name: String, bytes: Int, directory: URL) async throws {
        let server = try LoopbackServer()
        defer { server.stop() }
        let upload = directory.appendingPathComponent("upload.bin")
        let download = directory.appendingPathComponent("download-\(name).bin")
        let configuration = URLSessionConfiguration.default
        configuration.urlCache = nil
        let session = URLSession(configuration: configuration)
        let center = Center { config in
            config.server = server.baseURL + "/"
            config.engine = URLSessionEngine(configuration: configuration)
        }
        let curlCenter = Center { config in
            config.server = server.baseURL + "/"
            config.engine = (try? CurlEngine()) ?? URLSessionEngine(configuration: configuration)
        }
        let url = URL(string: server.baseURL + "/files/\(bytes)")!
        let baseline = Memory.resident()
        let clock = ContinuousClock()
        let start = clock.now
        switch name {
        case "download-raw":
            let (temporary, response) = try await session.download(from: url)
            guard (response as? HTTPURLResponse)?.statusCode == 200 else { throw URLError(.badServerResponse) }
            _ = try? FileManager.default.removeItem(at: download)
            try FileManager.default.moveItem(at: temporary, to: download)
        case "download-center", "download-curl":
            _ = try await (name == "download-curl" ? curlCenter : center).send { request in
                request.kind = .download
                request.url = url.absoluteString
                request.destination = .file(download)
            }
        case "upload-raw":
            var request = URLRequest(url: URL(string: server.baseURL + "/discard")!)
            request.httpMethod = "PUT"
            let (_, response) = try await session.upload(for: request, fromFile: upload)
            guard (response as? HTTPURLResponse)?.statusCode == 200 else { throw URLError(.badServerResponse) }
        case "upload-center", "upload-curl":
            _ = try await (name == "upload-curl" ? curlCenter : center).send { request in
                request.kind = .upload
                request.api = "discard"
                request.method = .put
                request.body = .file(upload)
            }
        case "upload-multipart-center", "upload-multipart-curl":
            // A form with the file as its one part: streamed from the file on CurlEngine; URLSessionEngine copies
            // it into a temporary file first (URLSession gives a length only to a file).
            let response = try await (name == "upload-multipart-curl" ? curlCenter : center).send { request in
                request.kind = .upload
                request.api = "discard"
                request.addFormData(name: "file", fileURL: upload)
            }
            guard let length = response.json?["length"]?.int, length > bytes else { throw URLError(.badServerResponse) }
        case "stream-slow-curl":
            // The body read as a stream by a reader that keeps to `slowReaderBytesPerSecond`: CurlEngine pauses the
            // transfer while the reader is behind, so memory stays at the stream's buffer, whatever the length.
            // (URLSessionEngine cannot pause: it ends such a stream with `.streamOverflow`, which the tests show.)
            let stream = try await curlCenter.stream { $0.url = url.absoluteString }
            var received = 0
            for try await chunk in stream {
                received += chunk.count
                let due = start + .seconds(Double(received) / slowReaderBytesPerSecond)
                if clock.now < due { try await clock.sleep(until: due) }
            }
            guard received == bytes else { throw URLError(.badServerResponse) }
        default:
            throw URLError(.unsupportedURL)
        }
        let seconds = (clock.now - start).seconds
        if name.hasPrefix("download") {
            let size = (try FileManager.default.attributesOfItem(atPath: download.path)[.size] as? NSNumber)?.intValue
            guard size == bytes else { throw URLError(.cannotWriteToFile) }
            try? FileManager.default.removeItem(at: download)
        }
        let result = Result(name: name, bytes: bytes, seconds: seconds, peakAboveBaseline: Memory.peak() - baseline)
        FileHandle.standardOutput.write(try JSONEncoder().encode(result))
    }

    private static func writeFile(_ url: URL, bytes: Int) throws {
        _ = FileManager.default.createFile(atPath: url.path, contents: nil)
        let handle = try FileHandle(forWritingTo: url)
        defer { try? handle.close() }
        let content = GeneratedContent(seed: 42)
        var offset = 0
        while offset < bytes {
            let count = min(4 << 20, bytes - offset)
            try handle.write(contentsOf: content.bytes(offset: offset, count: count))
            offset += count
        }
    }
}

/// Resident memory of this process, from /proc on Linux (getrusage's peak elsewhere).
enum Memory {
    static func resident() -> Int { field("VmRSS:") ?? peakMemory() }
    static func peak() -> Int { field("VmHWM:") ?? peakMemory() }

    /// Bytes allocated and not freed, from glibc; -1 elsewhere.
    static func heapInUse() -> Int {
        Int(heap_stats_in_use())
    }

    /// Gives the freed pages the allocator keeps back to the system.
    static func trim() {
        heap_stats_trim()
    }

    private static func field(_ name: String) -> Int? {
        guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return nil }
        for line in status.split(separator: "\n") where line.hasPrefix(name) {
            let kilobytes = line.split(separator: " ").compactMap { Int($0) }.first
            return kilobytes.map { $0 * 1024 }
        }
        return nil
    }
}
