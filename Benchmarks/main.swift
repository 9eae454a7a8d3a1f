import Foundation
import SwitchboardTestSupport

// `swift run -c release Benchmarks [--quick | --full] [--json] [--requests-only] [--stability-only] [--overhead-only] [--streams-only] [--only TEXT [--bare]] [--in-flight N] [--server URL] [--rounds N] [--requests N]`
//
// Everything runs in one process against an embedded loopback server. Each comparison interleaves its rounds
// (raw, Center, raw, Center, ...) and reports the median round, so that a noisy neighbour hurts both sides alike.

if CommandLine.arguments.count == 5, CommandLine.arguments[1] == "--transfer-case" {
    // A child process running one transfer case (see TransferBenchmarks).
    runToEnd("transfer case") {
        try await TransferBenchmarks.runCase(
            CommandLine.arguments[2], bytes: Int(CommandLine.arguments[3])!,
            directory: URL(fileURLWithPath: CommandLine.arguments[4]))
    }
}

if CommandLine.arguments.count >= 4, CommandLine.arguments[1] == "--stability-case" {
    // A child process running one stability contender (see StabilityBenchmarks).
    runToEnd("stability case") {
        try await StabilityBenchmarks.runCase(
            Int(CommandLine.arguments[2])!, baseURL: CommandLine.arguments[3],
            checkpoints: CommandLine.arguments.dropFirst(4).compactMap { Int($0) })
    }
}

if CommandLine.arguments.count == 5, CommandLine.arguments[1] == "--cancel-case" {
    // A child process running one cancellation contender (see CancellationStability).
    runToEnd("cancellation case") {
        try await CancellationStability.runCase(
            Int(CommandLine.arguments[2])!, baseURL: CommandLine.arguments[3], rounds: Int(CommandLine.arguments[4])!)
    }
}

if CommandLine.arguments.count == 2, CommandLine.arguments[1] == "--serve" {
    // The loopback server on its own, for measuring other clients against it by hand.
    let server = try LoopbackServer(handler: RequestBenchmarks.route)
    FileHandle.standardOutput.write(Data((server.baseURL + "\n").utf8))
    while true { sleep(3600) }
}

let usage = """
    usage: Benchmarks [--quick | --full] [--json] [--requests-only] [--stability-only] [--overhead-only] [--transfers-only]
                      [--streams-only] [--only TEXT [--bare]] [--in-flight N] [--server URL] [--rounds N]
                      [--requests N]
      (default)         every section, smaller than --full: about 3 minutes on 2 cores, each table printed as its
                        section ends and progress on standard error
      --quick           fewer requests and rounds (CI): about 1 minute 20 seconds
      --full            the sizes behind the README's figures: 1 GiB transfers, 300,000-request stability, 5 rounds;
                        about 9 minutes
      --json            the results as JSON
      --requests-only   only the request comparisons (raw URLSession, each engine, the Center on each)
      --stability-only  only the stability runs (memory and descriptors over 30,000 and 100,000 requests, and over
                        10 rounds of 2,000 requests at once with 500 cancelled; 10,000/30,000 and 5 rounds with
                        --quick, 100,000/300,000 and 20 rounds with --full)
      --overhead-only   only the Center's own cost, through an engine that answers at once, opening a full disk
                        cache, and parsing JSON bodies
      --transfers-only  only the large downloads and uploads (256 MiB; 1 GiB with --full)
      --streams-only    only server-sent events through the Center on each engine (events/s, CPU per event)
      --only TEXT       only the request contenders whose "family: name" contains TEXT, beside raw URLSession
                        (e.g. --only "small GET: Center + CurlEngine"; a final $ asks for the whole name); implies
                        --requests-only (with --overhead-only: only the overhead rows whose name contains TEXT)
      --in-flight N     only the request comparisons with N requests in flight (1: sequential)
      --bare            with --only: leave out the raw rows as well (for a profiler; ratios against the first row)
      --server URL      measure against a server already running (`Benchmarks --serve` prints its URL), so that
                        a profiler attached to this process sees the client alone
      --rounds N        interleaved rounds per comparison (3 unless set; 5 with --full); each figure is the median
      --requests N      requests per contender per round (1,500 unless set; 500 with --quick, 3,000 with --full);
                        the request comparisons run each round as 3 of a third; the overhead rows run N (20,000
                        unless set)
    """
/// The options given a value (`--only TEXT`) and the flags given.
let (options, flags) = { () -> ([String: String], Set<String>) in
    var options: [String: String] = [:]
    var flags = Set<String>()
    var remaining = CommandLine.arguments.dropFirst()[...]
    while let argument = remaining.popFirst() {
        if ["--only", "--server", "--in-flight", "--rounds", "--requests"].contains(argument) {
            guard let value = remaining.popFirst() else {
                print(usage)
                exit(2)
            }
            options[argument] = value
        } else if [
            "--quick", "--full", "--json", "--requests-only", "--stability-only", "--overhead-only", "--transfers-only",
            "--streams-only", "--bare",
        ].contains(argument) {
            flags.insert(argument)
        } else {
            print(usage)
            exit(argument == "--help" || argument == "-h" ? 0 : 2)
        }
    }
    return (options, flags)
}()
let json = flags.contains("--json")
let mode: Mode = flags.contains("--quick") ? .quick : flags.contains("--full") ? .full : .standard
let quick = mode == .quick
let onlyContenders = options["--only"]
let onlyOverhead = flags.contains("--overhead-only")
let onlyRequests =
    flags.contains("--requests-only") || (onlyContenders != nil && !onlyOverhead) || options["--in-flight"] != nil
let onlyStability = flags.contains("--stability-only")
let onlyTransfers = flags.contains("--transfers-only")
let onlyStreams = flags.contains("--streams-only")

/// The sizes of each mode: (quick, default, full).
func sized<T>(_ quick: T, _ standard: T, _ full: T) -> T {
    mode.pick(quick, standard, full)
}
let eventCount = sized(20_000, 50_000, 100_000)

#if DEBUG
if !json {
    print("note: a debug build; run `swift run -c release Benchmarks` for figures worth comparing\n")
}
#endif

let requestCount = options["--requests"].flatMap { Int($0) }.map { max(32, $0) } ?? sized(500, 1_500, 3_000)
let overheadCount = options["--requests"].flatMap { Int($0) } ?? sized(5_000, 20_000, 50_000)
let rounds = options["--rounds"].flatMap { Int($0) }.map { max(1, $0) } ?? sized(3, 3, 5)
let transferBytes = sized(256 << 20, 256 << 20, 1 << 30)
let stabilityCheckpoints = sized([10_000, 30_000], [30_000, 100_000], [100_000, 300_000])
let cancellationRounds = sized(5, 10, 20)

/// The sections of a whole run, in order, with what each took here (2 cores, 2026-12-06) in each mode, in seconds.
let sections = [
    Progress.Section(name: "request comparisons", seconds: (16, 38, 142)),
    Progress.Section(name: "Center overhead", seconds: (3, 6, 24)),
    Progress.Section(name: "response cache", seconds: (1, 1, 1)),
    Progress.Section(name: "JSON parsing", seconds: (5, 4, 8)),
    Progress.Section(name: "server-sent events", seconds: (1, 1, 2)),
    Progress.Section(name: "transfers", seconds: (20, 19, 76)),
    Progress.Section(name: "stability", seconds: (31, 94, 285)),
    Progress.Section(name: "cancellation stability", seconds: (4, 9, 15)),
]

/// Runs one section, with its progress on standard error.
func section<T>(_ name: String, _ work: () async throws -> T) async rethrows -> T {
    Progress.shared.begin(name)
    defer { Progress.shared.end() }
    return try await work()
}

/// Prints a section's table as soon as it is made (unless the run prints JSON at its end).
func show(_ text: String) {
    guard !json else { return }
    print(text)
    print()
    fflush(nil)
}

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
        let stability = try StabilityBenchmarks.run(baseURL: baseURL, checkpoints: stabilityCheckpoints)
        print(StabilityBenchmarks.report(stability))
        print()
        print(CancellationStability.report(try CancellationStability.run(baseURL: baseURL, rounds: cancellationRounds)))
        return
    }
    let requests = RequestBenchmarks(
        baseURL: baseURL, count: requestCount, rounds: rounds, only: onlyContenders, bare: flags.contains("--bare"),
        modes: options["--in-flight"].flatMap { Int($0) }.map { [max(1, $0)] } ?? [1, 32])
    if onlyRequests {
        print(Report.table(try await requests.run(), requests: requestCount, rounds: rounds))
        return
    }
    Progress.shared.plan(sections, mode: mode)
    if !json {
        print(Report.preamble(requests: requestCount, rounds: rounds))
        print()
    }
    var rows = try await section("request comparisons") { try await requests.run() }
    show(Report.table(rows, notes: true))
    let events = StreamBenchmarks(baseURL: baseURL, count: eventCount, rounds: rounds)
    for (name, run) in [
        ("Center overhead", { try await OverheadBenchmarks(count: overheadCount, rounds: rounds).run() }),
        ("response cache", { try await CacheBenchmarks.run(rounds: rounds) }),
        ("JSON parsing", { try await ParsingBenchmarks.run(rounds: rounds) }),
        ("server-sent events", { try await events.run() }),
    ] as [(String, () async throws -> [Row])] {
        let part = try await section(name, run)
        show(Report.table(part, notes: false))
        rows += part
    }
    let transfers = try await section("transfers") { try TransferBenchmarks.run(bytes: transferBytes) }
    show(Report.transfers(transfers))
    let stability = try await section("stability") {
        try StabilityBenchmarks.run(baseURL: baseURL, checkpoints: stabilityCheckpoints)
    }
    show(StabilityBenchmarks.report(stability))
    let cancellation = try await section("cancellation stability") {
        try CancellationStability.run(baseURL: baseURL, rounds: cancellationRounds)
    }
    show(CancellationStability.report(cancellation))
    Progress.shared.finish()
    if json { print(Report.json(rows, transfers: transfers, quick: quick)) }
}

// Every process the benchmark starts inherits this marker; none may be left when it ends.
let runMarker = (name: "SWITCHBOARD_BENCHMARK_RUN", value: "\(getpid())")
setenv(runMarker.name, runMarker.value, 1)

runToEnd("benchmark") {
    if let external = options["--server"] {
        try await runBenchmarks(baseURL: external)
    } else {
        let server = try ServerProcess()
        defer { server.stop() }
        try await runBenchmarks(baseURL: server.baseURL)
    }
    let leftovers = LeftoverProcesses.find(name: runMarker.name, value: runMarker.value)
    if !leftovers.isEmpty {
        let lines = ["processes the benchmark started are still running:"] + leftovers.map { "  \($0)" }
        FileHandle.standardError.write(Data((lines.joined(separator: "\n") + "\n").utf8))
        exit(1)
    }
}
