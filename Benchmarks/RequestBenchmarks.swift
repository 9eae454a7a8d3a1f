import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Switchboard
import SwitchboardTestSupport

/// A row of the results table.
struct Row {
    var family: String
    var name: String
    var sample: Sample
    var ratio: Double?
    var note: String = ""
}

/// Small GETs on the loopback server: raw URLSession against the Center, same requests, same server, interleaved.
struct RequestBenchmarks {
    let server: LoopbackServer
    let count: Int
    let rounds: Int

    static let body = Data(#"{"ok":true,"message":"hello from the loopback server"}"#.utf8)

    /// A server that answers every request with the same 56-byte body, so the client's cost dominates.
    static func makeServer() throws -> LoopbackServer {
        try LoopbackServer { _ in
            ServerResponse(status: 200, headers: [("Content-Type", "application/json")], body: body)
        }
    }

    func run() async throws -> [Row] {
        let url = URL(string: server.baseURL + "/small")!
        let configuration = URLSessionConfiguration.default
        configuration.urlCache = nil
        configuration.httpMaximumConnectionsPerHost = 32
        let rawSession = URLSession(configuration: configuration)
        let center = Center { config in
            config.engine = URLSessionEngine(configuration: configuration)
            config.server = server.baseURL + "/"
        }
        let raw: @Sendable (Int) async throws -> Void = { _ in
            let (data, response) = try await rawSession.data(for: URLRequest(url: url))
            guard (response as? HTTPURLResponse)?.statusCode == 200, data.count == Self.body.count else {
                throw URLError(.badServerResponse)
            }
        }
        let engine = URLSessionEngine(configuration: configuration)
        let engineRequest = EngineRequest(urlRequest: URLRequest(url: url))
        let viaEngine: @Sendable (Int) async throws -> Void = { _ in
            let response = try await engine.perform(engineRequest) { _ in }
            guard response.response.statusCode == 200, response.body.count == Self.body.count else {
                throw URLError(.badServerResponse)
            }
        }
        let viaCenter: @Sendable (Int) async throws -> Void = { _ in
            let response = try await center.send { $0.api = "small" }
            guard response.status == 200, response.json?["ok"] == true else { throw URLError(.badServerResponse) }
        }

        // Warm up connections and code paths.
        _ = try await measure(count: 200, concurrency: 8, raw)
        _ = try await measure(count: 200, concurrency: 8, viaCenter)

        var rows: [Row] = []
        for concurrency in [1, 32] {
            var rawSamples: [Sample] = []
            var engineSamples: [Sample] = []
            var centerSamples: [Sample] = []
            for _ in 0..<rounds {
                rawSamples.append(try await measure(count: count, concurrency: concurrency, raw))
                engineSamples.append(try await measure(count: count, concurrency: concurrency, viaEngine))
                centerSamples.append(try await measure(count: count, concurrency: concurrency, viaCenter))
            }
            let rawMedian = median(rawSamples)
            let engineMedian = median(engineSamples)
            let centerMedian = median(centerSamples)
            let mode = concurrency == 1 ? "sequential" : "\(concurrency) in flight"
            rows.append(Row(family: "small GET", name: "raw URLSession, \(mode)", sample: rawMedian, ratio: 1))
            rows.append(Row(
                family: "small GET", name: "URLSessionEngine alone, \(mode)", sample: engineMedian,
                ratio: engineMedian.requestsPerSecond / rawMedian.requestsPerSecond))
            rows.append(Row(
                family: "small GET", name: "Center + URLSessionEngine, \(mode)", sample: centerMedian,
                ratio: centerMedian.requestsPerSecond / rawMedian.requestsPerSecond))
        }
        rawSession.finishTasksAndInvalidate()
        return rows
    }
}

/// The Center's own cost per request: everything but the transport, through an engine that answers at once.
struct OverheadBenchmarks {
    let count: Int
    let rounds: Int
    let batchSize = 10_000

    struct NullEngine: Engine {
        let response: HTTPURLResponse

        func perform(
            _ request: EngineRequest, progress: @escaping @Sendable (TransferProgress) -> Void
        ) async throws -> EngineResponse {
            EngineResponse(response: response, body: RequestBenchmarks.body)
        }
    }

    func run() async throws -> [Row] {
        let engine = NullEngine(response: HTTPURLResponse(
            url: URL(string: "http://null.invalid/")!, statusCode: 200, httpVersion: "HTTP/1.1",
            headerFields: ["Content-Type": "application/json"])!)
        let center = Center { config in
            config.engine = engine
            config.server = "http://null.invalid/v1/"
            config.headers["X-Client"] = "benchmark"
            config.parameters["app_version"] = "1.2"
        }
        let asyncSend: @Sendable (Int) async throws -> Void = { index in
            let response = try await center.send { $0.api = "items"; $0.parameters = ["page": index] }
            guard response.json?["ok"] == true else { throw URLError(.badServerResponse) }
        }
        let callbackSend: @Sendable (Int) async throws -> Void = { index in
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                center.send { $0.api = "items"; $0.parameters = ["page": index] } onFinished: { _ in
                    continuation.resume()
                }
            }
        }
        _ = try await measure(count: 1000, concurrency: 1, asyncSend)
        var rows: [Row] = []
        rows.append(try await batchRow(center))
        for (name, operation) in [("async send", asyncSend), ("callback send", callbackSend)] {
            var samples: [Sample] = []
            for _ in 0..<rounds { samples.append(try await measure(count: count, concurrency: 1, operation)) }
            let sample = median(samples)
            rows.append(Row(
                family: "Center overhead", name: "null engine, \(name), sequential", sample: sample, ratio: nil,
                note: String(format: "%.1f µs per request", sample.wall.microseconds / Double(sample.requests))))
        }
        return rows
    }

    /// One batch of `batchSize` members through the null engine: the group machinery's cost per member.
    private func batchRow(_ center: Center) async throws -> Row {
        let size = batchSize
        var samples: [Sample] = []
        for _ in 0..<rounds {
            let sample = try await measure(count: 1, concurrency: 1) { _ in
                let responses = try await center.batch { batch in
                    for index in 0..<size { batch.add { $0.api = "items/\(index)" } }
                }
                guard responses.count == size else { throw URLError(.badServerResponse) }
            }
            samples.append(Sample(requests: size, wall: sample.wall, latencies: [], cpu: sample.cpu))
        }
        let sample = median(samples)
        return Row(
            family: "Center overhead", name: "null engine, batch of \(size) members", sample: sample, ratio: nil,
            note: String(format: "%.1f µs per member", sample.wall.microseconds / Double(size)))
    }
}
