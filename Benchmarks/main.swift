import Foundation

// `swift run -c release Benchmarks [--quick] [--json]`
//
// Everything runs in one process against an embedded loopback server. Each comparison interleaves its rounds
// (raw, Center, raw, Center, ...) and reports the median round, so that a noisy neighbour hurts both sides alike.

let arguments = Set(CommandLine.arguments.dropFirst())
let quick = arguments.contains("--quick")
let json = arguments.contains("--json")
if arguments.contains("--help") || arguments.contains("-h") {
    print("usage: Benchmarks [--quick] [--json]")
    exit(0)
}

#if DEBUG
if !json {
    print("note: a debug build; run `swift run -c release Benchmarks` for figures worth comparing\n")
}
#endif

let requestCount = quick ? 1_000 : 5_000
let overheadCount = quick ? 5_000 : 50_000
let rounds = quick ? 3 : 5

do {
    let server = try RequestBenchmarks.makeServer()
    var rows = try await RequestBenchmarks(server: server, count: requestCount, rounds: rounds).run()
    rows += try await OverheadBenchmarks(count: overheadCount, rounds: rounds).run()
    server.stop()
    if json {
        print(Report.json(rows, quick: quick))
    } else {
        print(Report.table(rows, requests: requestCount, rounds: rounds))
    }
} catch {
    FileHandle.standardError.write(Data("benchmark failed: \(error)\n".utf8))
    exit(1)
}
