import Foundation
import SwitchboardTestSupport

// `swift run -c release Benchmarks [--quick] [--json] [--requests-only] [--stability-only] [--overhead-only] [--streams-only] [--only TEXT [--bare]] [--in-flight N] [--server URL] [--rounds N] [--requests N]`
//
// Everything runs in one process against an embedded loopback server. Each comparison interleaves its rounds
// (raw, Center, raw, Center, ...) and reports the median round, so that a noisy neighbour hurts both sides alike.

if CommandLine.arguments.count == 5, CommandLine.arguments[1] == "--transfer-case" {
    // A child process running one transfer case (see TransferBenchmarks).
    do {
        try await TransferBenchmarks.runCase(
            CommandLine.arguments[2], bytes: Int(CommandLine.arguments[3])!,
            directory: URL(fileURLWithPath: CommandLine.arguments[4]))
        exit(0)
    } catch {
        FileHandle.standardError.write(Data("transfer case failed: \(error)\n".utf8))
        exit(1)
    }
}

if CommandLine.arguments.count >= 4, CommandLine.arguments[1] == "--stability-case" {
    // A child process running one stability contender (see StabilityBenchmarks).
    do {
        try await StabilityBenchmarks.runCase(
            Int(CommandLine.arguments[2])!, baseURL: CommandLine.arguments[3],
            checkpoints: CommandLine.arguments.dropFirst(4).compactMap { Int($0) })
        exit(0)
    } catch {
        FileHandle.standardError.write(Data("stability case failed: \(error)\n".utf8))
        exit(1)
    }
}

if CommandLine.arguments.count == 5, CommandLine.arguments[1] == "--cancel-case" {
    // A child process running one cancellation contender (see CancellationStability).
    do {
        try await CancellationStability.runCase(
            Int(CommandLine.arguments[2])!, baseURL: CommandLine.arguments[3], rounds: Int(CommandLine.arguments[4])!)
        exit(0)
    } catch {
        FileHandle.standardError.write(Data("cancellation case failed: \(error)\n".utf8))
        exit(1)
    }
}

if CommandLine.arguments.count == 2, CommandLine.arguments[1] == "--serve" {
    // The loopback server on its own, for measuring other clients against it by hand.
    let server = try LoopbackServer(handler: RequestBenchmarks.route)
    FileHandle.standardOutput.write(Data((server.baseURL + "\n").utf8))
    while true { sleep(3600) }
}

let usage = """
    usage: Benchmarks [--quick] [--json] [--requests-only] [--stability-only] [--overhead-only] [--transfers-only]
                      [--streams-only] [--only TEXT [--bare]] [--in-flight N] [--server URL] [--rounds N]
                      [--requests N]
      --quick           fewer requests and rounds, 256 MiB transfers (CI)
      --json            the results as JSON
      --requests-only   only the request comparisons (raw URLSession, each engine, the Center on each)
      --stability-only  only the stability runs (memory and descriptors over 100,000 and 300,000 requests, and
                        over 20 rounds of 2,000 requests at once with 500 cancelled; 5 rounds with --quick)
      --overhead-only   only the Center's own cost, through an engine that answers at once, opening a full disk
                    cache, and parsing JSON bodies
      --transfers-only  only the large downloads and uploads (1 GiB; 256 MiB with --quick)
      --streams-only    only server-sent events through the Center on each engine (events/s, CPU per event)
      --only TEXT       only the request contenders whose "family: name" contains TEXT, beside raw URLSession
                        (e.g. --only "small GET: Center + CurlEngine"; a final $ asks for the whole name); implies
                        --requests-only (with --overhead-only: only the overhead rows whose name contains TEXT)
      --in-flight N     only the request comparisons with N requests in flight (1: sequential)
      --bare            with --only: leave out the raw rows as well (for a profiler; ratios against the first row)
      --server URL      measure against a server already running (`Benchmarks --serve` prints its URL), so that
                        a profiler attached to this process sees the client alone
      --rounds N        interleaved rounds per comparison (5 unless set; 3 with --quick); each figure is the median
      --requests N      requests per contender per round of 5 (3,000 unless set; 500 with --quick); the request
                        comparisons run each round as 3 of a third
    """
var options: [String: String] = [:]
var flags = Set<String>()
do {
    var remaining = CommandLine.arguments.dropFirst()[...]
    while let argument = remaining.popFirst() {
        if ["--only", "--server", "--in-flight", "--rounds", "--requests"].contains(argument) {
            guard let value = remaining.popFirst() else {
                print(usage)
                exit(2)
            }
            options[argument] = value
        } else if [
            "--quick", "--json", "--requests-only", "--stability-only", "--overhead-only", "--transfers-only",
            "--streams-only", "--bare",
        ].contains(argument) {
            flags.insert(argument)
        } else {
            print(usage)
            exit(argument == "--help" || argument == "-h" ? 0 : 2)
        }
    }
}
let quick = flags.contains("--quick")
let json = flags.contains("--json")
let onlyContenders = options["--only"]
let onlyOverhead = flags.contains("--overhead-only")
let onlyRequests =
    flags.contains("--requests-only") || (onlyContenders != nil && !onlyOverhead) || options["--in-flight"] != nil
let onlyStability = flags.contains("--stability-only")
let onlyTransfers = flags.contains("--transfers-only")
let onlyStreams = flags.contains("--streams-only")
let eventCount = quick ? 20_000 : 100_000

#if DEBUG
if !json {
    print("note: a debug build; run `swift run -c release Benchmarks` for figures worth comparing\n")
}
#endif

let requestCount = options["--requests"].flatMap { Int($0) }.map { max(32, $0) } ?? (quick ? 500 : 3_000)
let overheadCount = quick ? 5_000 : 50_000
let rounds = options["--rounds"].flatMap { Int($0) }.map { max(1, $0) } ?? (quick ? 3 : 5)
let transferBytes = quick ? 256 << 20 : 1 << 30

/// Runs the benchmarks (only the request comparisons with `--requests-only`) and prints the report.
func runBenchmarks(baseURL: String) async throws {
    if onlyTransfers {
        print(Report.transfers(try TransferBenchmarks.run(bytes: transferBytes)))
        return
    }
    if onlyStreams {
        print(
            Report.table(
                try await StreamBenchmarks(baseURL: baseURL, count: eventCount, rounds: rounds).run(),
                requests: eventCount,
                rounds: rounds))
        return
    }
    if onlyOverhead {
        let cache = onlyContenders.map { "Response cache: opening".contains($0) } ?? true
        let parsing = onlyContenders.map { "JSON parsing".contains($0) } ?? true
        print(
            Report.table(
                try await OverheadBenchmarks(count: overheadCount, rounds: rounds, only: onlyContenders).run()
                    + (cache ? try await CacheBenchmarks.run(rounds: rounds) : [])
                    + (parsing ? try await ParsingBenchmarks.run(rounds: rounds) : []),
                requests: overheadCount,
                rounds: rounds))
        return
    }
    if onlyStability {
        print(
            StabilityBenchmarks.report(
                try StabilityBenchmarks.run(
                    baseURL: baseURL, checkpoints: quick ? [10_000, 30_000] : [100_000, 300_000])))
        print()
        print(CancellationStability.report(try CancellationStability.run(baseURL: baseURL, rounds: quick ? 5 : 20)))
        return
    }
    var rows = try await RequestBenchmarks(
        baseURL: baseURL, count: requestCount, rounds: rounds, only: onlyContenders, bare: flags.contains("--bare"),
        modes: options["--in-flight"].flatMap { Int($0) }.map { [max(1, $0)] } ?? [1, 32]
    ).run()
    if onlyRequests {
        print(Report.table(rows, requests: requestCount, rounds: rounds))
        return
    }
    rows += try await OverheadBenchmarks(count: overheadCount, rounds: rounds).run()
    rows += try await CacheBenchmarks.run(rounds: rounds)
    rows += try await ParsingBenchmarks.run(rounds: rounds)
    rows += try await StreamBenchmarks(baseURL: baseURL, count: eventCount, rounds: rounds).run()
    let stability = try StabilityBenchmarks.run(
        baseURL: baseURL, checkpoints: quick ? [10_000, 30_000] : [100_000, 300_000])
    let cancellation = try CancellationStability.run(baseURL: baseURL, rounds: quick ? 5 : 20)
    let transfers = try TransferBenchmarks.run(bytes: transferBytes)
    if json {
        print(Report.json(rows, transfers: transfers, quick: quick))
    } else {
        print(Report.table(rows, requests: requestCount, rounds: rounds))
        print()
        print(Report.transfers(transfers))
        print()
        print(StabilityBenchmarks.report(stability))
        print()
        print(CancellationStability.report(cancellation))
    }
}

// Every process the benchmark starts inherits this marker; none may be left when it ends.
let runMarker = (name: "SWITCHBOARD_BENCHMARK_RUN", value: "\(getpid())")
setenv(runMarker.name, runMarker.value, 1)

do {
    if let external = options["--server"] {
        try await runBenchmarks(baseURL: external)
    } else {
        let server = try ServerProcess()
        defer { server.stop() }
        try await runBenchmarks(baseURL: server.baseURL)
    }
} catch {
    FileHandle.standardError.write(Data("benchmark failed: \(error)\n".utf8))
    exit(1)
}

let leftovers = LeftoverProcesses.find(name: runMarker.name, value: runMarker.value)
if !leftovers.isEmpty {
    let lines = ["processes the benchmark started are still running:"] + leftovers.map { "  \($0)" }
    FileHandle.standardError.write(Data((lines.joined(separator: "\n") + "\n").utf8))
    exit(1)
}
