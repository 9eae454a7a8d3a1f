import Foundation
import Switchboard

/// Many requests through the Center on each engine: open file descriptors and resident memory before and after, to
/// show that nothing leaks per request (handles, buffers, registry entries).
enum StabilityBenchmarks {
    struct Result {
        var engine: String
        var requests: Int
        var descriptorsBefore: Int
        var descriptorsAfter: Int
        var residentBefore: Int
        var residentAfter: Int
    }

    static func run(baseURL: String, requests: Int) async throws -> [Result] {
        var engines: [(String, any Engine)] = [("URLSessionEngine", URLSessionEngine())]
        if let curl = try? CurlEngine() { engines.append(("CurlEngine", curl)) }
        var results: [Result] = []
        for (name, engine) in engines {
            let center = Center { config in
                config.engine = engine
                config.server = baseURL + "/"
            }
            let warmUp = min(2_000, requests / 10)
            _ = try await measure(count: warmUp, concurrency: 16) { _ in _ = try await center.send { $0.api = "small" } }
            let descriptors = openDescriptors()
            let resident = Memory.resident()
            _ = try await measure(count: requests, concurrency: 16) { _ in _ = try await center.send { $0.api = "small" } }
            results.append(Result(
                engine: name, requests: requests, descriptorsBefore: descriptors, descriptorsAfter: openDescriptors(),
                residentBefore: resident, residentAfter: Memory.resident()))
        }
        return results
    }

    static func openDescriptors() -> Int {
        (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd").count) ?? -1
    }

    static func report(_ results: [Result]) -> String {
        var lines = ["Stability: requests through the Center, 16 in flight, after a warm-up", ""]
        for result in results {
            lines.append(String(
                format: "%@: %d requests, open descriptors %d -> %d, resident memory %.1f -> %.1f MiB",
                result.engine, result.requests, result.descriptorsBefore, result.descriptorsAfter,
                Double(result.residentBefore) / 1_048_576, Double(result.residentAfter) / 1_048_576))
        }
        return lines.joined(separator: "\n")
    }
}
