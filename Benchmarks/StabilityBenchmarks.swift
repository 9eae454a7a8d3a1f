import Foundation
import Synchronization
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Switchboard

/// Many small requests, 16 in flight, each contender in a child process of its own (so that one's memory is not
/// another's): open file descriptors and resident memory after a warm-up and at each checkpoint. Raw URLSession
/// runs beside the Center so that growth inside Foundation is told apart from growth in Switchboard.
enum StabilityBenchmarks {
    struct Result: Codable {
        var contender: String
        /// Requests done at each checkpoint (the first is the warm-up, the baseline).
        var requests: [Int]
        var descriptors: [Int]
        var resident: [Int]
        /// Bytes the allocator has handed out and not had back (glibc's `mallinfo2`), or -1 where unknown: growth here
        /// is memory still referenced or leaked; resident growth without it is the allocator keeping freed pages.
        var heapInUse: [Int]
        var seconds: Double

        /// Resident memory grown from the baseline to each later checkpoint, in MiB.
        var growth: [Double] { resident.dropFirst().map { Double($0 - resident[0]) / 1_048_576 } }
        var heapGrowth: [Double] { heapInUse.dropFirst().map { Double($0 - heapInUse[0]) / 1_048_576 } }
    }

    static let contenders = [
        "raw URLSession", "raw URLSession, new session every 10,000", "Center + URLSessionEngine",
        "Center + CurlEngine",
    ]

    /// Runs every contender in a child process, with checkpoints after `checkpoints` requests (cumulative).
    static func run(baseURL: String, checkpoints: [Int]) throws -> [Result] {
        try contenders.indices.map { index in
            try runChildCase(
                ["--stability-case", String(index), baseURL] + checkpoints.map(String.init), as: Result.self,
                what: "stability case \(index)")
        }
    }

    /// The body of a child process: one contender, measured, printed as JSON.
    static func runCase(_ index: Int, baseURL: String, checkpoints: [Int]) async throws {
        let contender = contenders[index]
        let url = URL(string: baseURL + "/small")!
        let configuration = URLSessionConfiguration.default
        configuration.urlCache = nil
        let send: @Sendable (Int) async throws -> Void
        switch index {
        case 0, 1:
            let sessions = SessionRecycler(configuration: configuration, every: index == 1 ? 10_000 : nil)
            send = { _ in
                let (_, response) = try await sessions.next().data(from: url)
                guard (response as? HTTPURLResponse)?.statusCode == 200 else { throw URLError(.badServerResponse) }
            }
        default:
            let engine: any Engine = index == 2 ? URLSessionEngine(configuration: configuration) : try CurlEngine()
            let center = Center { config in
                config.engine = engine
                config.server = baseURL + "/"
            }
            send = { _ in _ = try await center.send { $0.api = "small" } }
        }
        let clock = ContinuousClock()
        let start = clock.now
        _ = try await measure(count: 2_000, concurrency: 16, send)
        var result = Result(
            contender: contender, requests: [2_000], descriptors: [openDescriptors()], resident: [Memory.resident()],
            heapInUse: [Memory.heapInUse()], seconds: 0)
        var done = 0
        for checkpoint in checkpoints {
            _ = try await measure(count: checkpoint - done, concurrency: 16, send)
            done = checkpoint
            result.requests.append(done)
            result.descriptors.append(openDescriptors())
            result.resident.append(Memory.resident())
            result.heapInUse.append(Memory.heapInUse())
        }
        result.seconds = (clock.now - start).seconds
        FileHandle.standardOutput.write(try JSONEncoder().encode(result))
    }

    static func openDescriptors() -> Int {
        (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd").count) ?? -1
    }

    static func report(_ results: [Result]) -> String {
        guard let checkpoints = results.first?.requests.dropFirst() else { return "" }
        var lines = [
            "Stability: small requests, 16 in flight, each contender in a process of its own; resident memory grown "
                + "since a 2,000-request warm-up, and open descriptors",
            "",
        ]
        for result in results {
            let growth = zip(checkpoints, zip(result.growth, result.heapGrowth)).map { count, grown in
                String(format: "%+.1f MiB (heap %+.1f) at %dk", grown.0, grown.1, count / 1000)
            }
            lines.append(
                String(
                    format: "%@: %@; descriptors %@ (%.0f s)",
                    result.contender.padding(toLength: 42, withPad: " ", startingAt: 0),
                    growth.joined(separator: ", "), result.descriptors.map(String.init).joined(separator: " -> "),
                    result.seconds))
        }
        return lines.joined(separator: "\n")
    }
}

/// Hands out one session, or a new one every `every` requests (the old one finishes its tasks and is invalidated).
final class SessionRecycler: Sendable {
    private struct State {
        var session: URLSession
        var used = 0
    }

    private let configuration: URLSessionConfiguration
    private let every: Int?
    private let state: Mutex<State>

    init(configuration: URLSessionConfiguration, every: Int?) {
        self.configuration = configuration
        self.every = every
        state = Mutex(State(session: URLSession(configuration: configuration)))
    }

    func next() -> URLSession {
        let (session, retired) = state.withLock { state -> (URLSession, URLSession?) in
            state.used += 1
            guard let every, state.used > every else { return (state.session, nil) }
            let retired = state.session
            state.session = URLSession(configuration: configuration)
            state.used = 1
            return (state.session, retired)
        }
        retired?.finishTasksAndInvalidate()
        return session
    }
}
