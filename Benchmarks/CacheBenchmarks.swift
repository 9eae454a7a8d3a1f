import Foundation
import Switchboard

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// What opening a full disk cache costs: the time `ResponseCache(directory:)` takes over a directory that holds the
/// default disk capacity (64 MiB, in 640 entries of 100 KB), which an app pays at start when it makes its center.
enum CacheBenchmarks {
    static let entries = 640
    static let body = Data(repeating: UInt8(ascii: "c"), count: 100 * 1024)

    static func run(rounds: Int) async throws -> [Row] {
        let directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("switchboard-benchmark-cache-\(getpid())")
        defer { try? FileManager.default.removeItem(at: directory) }
        try? FileManager.default.removeItem(at: directory)
        let filled = Center { config in
            config.engine = BodyEngine(body: body, contentType: "application/octet-stream")
            config.server = "http://cache.invalid/"
            config.cache = ResponseCache(directory: directory)
        }
        for index in 0..<entries {
            _ = try await filled.send {
                $0.api = "items/\(index)"
                $0.cachePolicy = .cacheElseNetwork(maxAge: .seconds(3600))
                $0.responseSerializer = .raw
            }
        }
        var samples: [Sample] = []
        for _ in 0..<rounds * 3 {
            samples.append(try await measure(count: 1, concurrency: 1) { _ in _ = ResponseCache(directory: directory) })
        }
        // The cache opened holds the entries: the first one is answered from the disk, with its body whole.
        let opened = Center { config in
            config.engine = BodyEngine(body: body, contentType: "application/octet-stream")
            config.server = "http://cache.invalid/"
            config.cache = ResponseCache(directory: directory)
        }
        let first = try await opened.send {
            $0.api = "items/0"
            $0.cachePolicy = .cacheOnly
            $0.responseSerializer = .raw
        }
        guard first.source == .cache, first.data == body else { throw URLError(.cannotLoadFromNetwork) }
        let sample = median(samples)
        return [
            Row(
                family: "Response cache", name: "opening a full disk cache (64 MiB, \(entries) entries)",
                sample: sample, ratio: nil,
                note: String(format: "%.1f ms to open", sample.wall.seconds * 1000))
        ]
    }
}
