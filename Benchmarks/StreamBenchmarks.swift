import Foundation
import Switchboard

/// Server-sent events through the Center on each engine: one stream of `count` events from the loopback server's
/// `/sse` route (comment, id, type and two data lines each, about 60 bytes), read to the end with `events`. A row's
/// "req/s" is events per second and its CPU is per event; rounds alternate the engines, each figure its own median.
struct StreamBenchmarks {
    let baseURL: String
    let count: Int
    let rounds: Int

    func run() async throws -> [Row] {
        var engines: [(String, any Engine)] = [("URLSessionEngine", URLSessionEngine())]
        if let curl = try? CurlEngine() { engines.append(("CurlEngine", curl)) }
        let centers = engines.map { name, engine in
            (
                name,
                Center { config in
                    config.engine = engine
                    config.server = baseURL + "/"
                }
            )
        }
        let path = "sse?count=\(count)"
        func read(_ center: Center) async throws -> Sample {
            let cpuStart = processCPU()
            let start = ContinuousClock.now
            // A buffer larger than the whole body: this measures reading, not URLSessionEngine's overflow guard.
            let stream = try await center.stream {
                $0.api = path; $0.streamBufferSize = 64 << 20
            }
            var events = 0
            for try await _ in stream.events { events += 1 }
            guard events == count else { throw URLError(.badServerResponse) }
            return Sample(requests: events, wall: .now - start, latencies: [], cpu: processCPU() - cpuStart)
        }
        for (_, center) in centers { _ = try await read(center) }
        var samples = Array(repeating: [Sample](), count: centers.count)
        for round in 0..<rounds {
            let order = round % 2 == 0 ? Array(centers.indices) : centers.indices.reversed()
            for index in order { samples[index].append(try await read(centers[index].1)) }
        }
        return zip(centers, samples.map(median)).map { center, sample in
            Row(
                family: "server-sent events (\(count) a stream)", name: "Center.stream + \(center.0)", sample: sample,
                ratio: nil,
                note: String(
                    format: "%.0f events/s, %.2f µs CPU per event", sample.requestsPerSecond,
                    sample.cpuPerRequest.microseconds))
        }
    }
}
