import Foundation
import Switchboard
import SwitchboardTestSupport
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

#if canImport(Glibc)
private let rusageSelf = RUSAGE_SELF.rawValue
#else
private let rusageSelf = RUSAGE_SELF
#endif

/// One measured run: wall time, per-request latencies, process CPU time.
struct Sample {
    var requests: Int
    var wall: Duration
    var latencies: [Duration]
    var cpu: Duration
    /// Context switches of the process's threads (a thread that waited, or was put aside) during the run.
    var switches: Int = 0

    var requestsPerSecond: Double { Double(requests) / wall.seconds }
    var cpuPerRequest: Duration { cpu / requests }

    func percentile(_ p: Double) -> Duration {
        guard !latencies.isEmpty else { return .zero }
        let sorted = latencies.sorted()
        let index = min(sorted.count - 1, Int((Double(sorted.count - 1) * p).rounded()))
        return sorted[index]
    }
}

/// Process CPU time (user + system), for all threads: the client's (the loopback server runs in a child process).
func processCPU() -> Duration {
    var usage = rusage()
    getrusage(rusageSelf, &usage)
    func duration(_ time: timeval) -> Duration {
        .seconds(Int64(time.tv_sec)) + .microseconds(Int64(time.tv_usec))
    }
    return duration(usage.ru_utime) + duration(usage.ru_stime)
}

/// Context switches of the process's threads so far, voluntary (a thread that waited) and not.
func processSwitches() -> Int {
    var usage = rusage()
    getrusage(rusageSelf, &usage)
    return Int(usage.ru_nvcsw + usage.ru_nivcsw)
}

/// The peak resident set size of the process, in bytes.
func peakMemory() -> Int {
    var usage = rusage()
    getrusage(rusageSelf, &usage)
    #if os(Linux)
    return Int(usage.ru_maxrss) * 1024
    #else
    return Int(usage.ru_maxrss)
    #endif
}

/// Runs `count` operations `concurrency` at a time and measures each.
func measure(
    count: Int, concurrency: Int, _ operation: @escaping @Sendable (Int) async throws -> Void
) async throws -> Sample {
    let clock = ContinuousClock()
    let cpuStart = processCPU()
    let switchesStart = processSwitches()
    let start = clock.now
    let latencies = try await withThrowingTaskGroup(of: [Duration].self) { group in
        let perWorker = count / concurrency
        for worker in 0..<concurrency {
            group.addTask {
                var latencies: [Duration] = []
                latencies.reserveCapacity(perWorker)
                for index in 0..<perWorker {
                    let begin = clock.now
                    try await operation(worker * perWorker + index)
                    latencies.append(clock.now - begin)
                }
                return latencies
            }
        }
        var all: [Duration] = []
        for try await part in group { all += part }
        return all
    }
    let wall = clock.now - start
    Progress.shared.tick()
    return Sample(
        requests: latencies.count, wall: wall, latencies: latencies, cpu: processCPU() - cpuStart,
        switches: processSwitches() - switchesStart)
}

/// Measures each operation `count` times, one at a time, in `rounds` interleaved rounds whose order alternates (the
/// first operation first in even rounds, last in odd ones), and returns each operation's median sample.
func alternatingMedians(
    of operations: [@Sendable (Int) async throws -> Void], count: Int, rounds: Int
) async throws -> [Sample] {
    var samples = Array(repeating: [Sample](), count: operations.count)
    for round in 0..<rounds {
        for index in round % 2 == 0 ? Array(operations.indices) : operations.indices.reversed() {
            samples[index].append(try await measure(count: count, concurrency: 1, operations[index]))
        }
    }
    return samples.map(median)
}

/// The median of several samples by throughput: the round least disturbed by a noisy machine in either direction.
/// The rounds summed up, each figure its own median: the median round's wall time (so throughput) and, apart, the
/// median round's CPU time; latency percentiles are over every round's requests.
func median(_ samples: [Sample]) -> Sample {
    let walls = samples.map(\.wall).sorted()
    let cpus = samples.map(\.cpu).sorted()
    let switches = samples.map(\.switches).sorted()
    return Sample(
        requests: samples[0].requests, wall: walls[walls.count / 2], latencies: samples.flatMap(\.latencies),
        cpu: cpus[cpus.count / 2], switches: switches[switches.count / 2])
}

extension Duration {
    var seconds: Double {
        let (seconds, attoseconds) = components
        return Double(seconds) + Double(attoseconds) / 1e18
    }

    var microseconds: Double { seconds * 1e6 }
    var milliseconds: Double { seconds * 1e3 }
}

/// Runs this benchmark binary again with `arguments` (one case in a process of its own) and decodes the JSON it
/// prints; `what` names the case in the error when it fails.
func runChildCase<T: Decodable>(_ arguments: [String], as type: T.Type, what: String) throws -> T {
    let (status, data) = try ProcessLaunch.output(
        of: URL(fileURLWithPath: CommandLine.arguments[0]).path, arguments, error: .standardError)
    Progress.shared.tick()
    guard status == 0, let result = try? JSONDecoder().decode(T.self, from: data) else {
        throw URLError(.unknown, userInfo: [NSLocalizedDescriptionKey: "\(what) failed"])
    }
    return result
}

/// An engine that answers every request at once with `body` (status 200, the given `Content-Type`).
struct BodyEngine: Engine {
    let body: Data
    let contentType: String

    func perform(
        _ request: EngineRequest, progress: @escaping @Sendable (TransferProgress) -> Void
    ) async throws -> EngineResponse {
        EngineResponse(status: 200, url: request.url!, headers: ["Content-Type": contentType], body: body)
    }
}
