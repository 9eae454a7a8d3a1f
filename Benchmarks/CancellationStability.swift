import Foundation
import Switchboard

/// Rounds of 2,000 requests sent at once through the Center, 500 of them cancelled at random as they run, each engine
/// in a child process of its own: resident memory, the heap in use and open descriptors after each round. Memory that
/// grows in the first rounds (caches, the allocator's arenas, connections kept) must level off, not grow every round.
enum CancellationStability {
    struct Result: Codable {
        var contender: String
        /// After each round, from the first (the baseline).
        var resident: [Int]
        var heapInUse: [Int]
        var descriptors: [Int]
        /// Resident memory after the last round once the allocator gave back the freed pages it kept: what the
        /// growth was made of.
        var residentAfterTrim: Int
        var cancelled: Int
        var seconds: Double
    }

    static let contenders = ["Center + URLSessionEngine", "Center + CurlEngine"]
    static let perRound = 2_000
    static let cancelledPerRound = 500

    static func run(baseURL: String, rounds: Int) throws -> [Result] {
        try contenders.indices.map { index in
            try runChildCase(
                ["--cancel-case", String(index), baseURL, String(rounds)], as: Result.self,
                what: "cancellation case \(index)")
        }
    }

    /// The body of a child process: one contender, measured, printed as JSON.
    static func runCase(_ index: Int, baseURL: String, rounds: Int) async throws {
        let engine: any Engine = index == 0 ? URLSessionEngine() : try CurlEngine()
        let center = Center { config in
            config.engine = engine
            config.server = baseURL + "/"
        }
        let start = ContinuousClock.now
        var result = Result(
            contender: contenders[index], resident: [], heapInUse: [], descriptors: [], residentAfterTrim: 0,
            cancelled: 0, seconds: 0)
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<rounds {
            let tasks = (0..<perRound).map { _ in
                Task { () -> Bool in
                    do {
                        _ = try await center.send { $0.api = "small" }
                        return false
                    } catch {
                        return (error as? HTTPError)?.code == .cancelled
                    }
                }
            }
            // Cancelled as the round runs: some still queued for a connection, some on the wire, some done.
            for (offset, index) in (0..<perRound).shuffled(using: &generator).prefix(cancelledPerRound).enumerated() {
                if offset % 50 == 0 { await Task.yield() }
                tasks[index].cancel()
            }
            for task in tasks {
                if await task.value { result.cancelled += 1 }
            }
            result.resident.append(Memory.resident())
            result.heapInUse.append(Memory.heapInUse())
            result.descriptors.append(StabilityBenchmarks.openDescriptors())
        }
        result.seconds = (ContinuousClock.now - start).seconds
        Memory.trim()
        result.residentAfterTrim = Memory.resident()
        FileHandle.standardOutput.write(try JSONEncoder().encode(result))
    }

    static func report(_ results: [Result]) -> String {
        var lines = [
            "Stability under cancellation: rounds of 2,000 requests at once, 500 cancelled at random; resident memory "
                + "(heap in use) grown since the first round, at every fifth round",
            "",
        ]
        for result in results where !result.resident.isEmpty {
            let marks = Array(stride(from: 4, to: result.resident.count, by: 5)) + [result.resident.count - 1]
            let growth = Set(marks).sorted().map { round in
                String(
                    format: "%+.1f (%+.1f) at %d", Double(result.resident[round] - result.resident[0]) / 1_048_576,
                    Double(result.heapInUse[round] - result.heapInUse[0]) / 1_048_576, round + 1)
            }
            let trimmed = Double(result.residentAfterTrim - result.resident[0]) / 1_048_576
            lines.append(
                String(
                    format: "%@: MiB %@; %+.1f once the allocator gave back what it kept; descriptors %d -> %d; "
                        + "%d cancelled (%.0f s)",
                    result.contender.padding(toLength: 28, withPad: " ", startingAt: 0),
                    growth.joined(separator: ", "), trimmed, result.descriptors.first ?? -1,
                    result.descriptors.last ?? -1, result.cancelled, result.seconds))
        }
        return lines.joined(separator: "\n")
    }
}
