import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
@testable import Switchboard

/// The speed-limit decisions as values: CurlEngine's chunk pacer and URLSessionEngine's segment pacing.
@Suite struct PacingTests {
    private let t0 = ContinuousClock.now

    @Test func theFirstBurstPassesAndLaterChunksWaitTheirTurn() {
        var pacer = ReceivePacer(rate: 10_000)  // burst: a tenth of a second, 1,000 bytes
        #expect(pacer.burst == 1_000)
        let first = pacer.admit(1_000, at: t0)
        #expect(first == nil, "the burst passes at once")
        let due = pacer.admit(1_000, at: t0 + .milliseconds(10))
        #expect(due == t0 + .milliseconds(100), "bytes 1,001 to 2,000 are due 0.1 s after the start")
        #expect(pacer.taken == 1_000, "a held chunk is not counted")
        let again = pacer.admit(1_000, at: t0 + .milliseconds(100))
        #expect(again == nil, "offered again when due, it passes")
        #expect(pacer.taken == 2_000)
        let later = pacer.admit(5_000, at: t0 + .milliseconds(150))
        #expect(later == t0 + .milliseconds(600))
    }

    @Test func theAverageHoldsWhateverTheChunkSizes() {
        var pacer = ReceivePacer(rate: 64 << 10)
        var now = t0
        var delivered: Int64 = 0
        let chunks = [16_384, 1, 7_000, 16_384, 300, 16_384, 16_384, 9_999, 16_384, 16_384]
        for chunk in chunks {
            while let due = pacer.admit(chunk, at: now) {
                #expect(due > now)
                now = due
            }
            delivered += Int64(chunk)
        }
        let seconds = (now - t0).seconds
        let floor = Double(delivered - pacer.burst) / Double(pacer.rate)
        #expect(abs(seconds - floor) < 0.000_001, "\(delivered) bytes took \(seconds) s, the limit sets \(floor) s")
    }

    @Test func aLargeBurstIsCappedAtSixteenKibibytes() {
        #expect(ReceivePacer(rate: 100 << 20).burst == 16 << 10)
        #expect(ReceivePacer(rate: 5).burst == 1)
        #expect(ReceivePacer(rate: 0).rate == 1, "never divides by zero")
    }

    private func segments(rate: Int64?, size: Int? = 16 << 20) -> Segments? {
        var request = EngineRequest(url: URL(string: "http://127.0.0.1/files/1")!)
        request.destination = .file(URL(fileURLWithPath: "/tmp/x"), offset: 0)
        request.maxReceiveBytesPerSecond = rate
        return Segments(for: request, size: size)
    }

    @Test func limitedSegmentsAreAQuarterSecondEach() throws {
        #expect(try #require(segments(rate: 1 << 20)).size == 256 << 10)
        #expect(try #require(segments(rate: 1_000)).size == 4_096, "at least 4 KiB")
        #expect(try #require(segments(rate: 1 << 30)).size == 16 << 20, "never above the configured size")
        #expect(try #require(segments(rate: 1 << 20, size: nil)).size == 256 << 10, "a limit segments anyway")
        #expect(segments(rate: nil, size: nil) == nil)
    }

    @Test func theNextSegmentWaitsUntilTheBytesSoFarAreWithinTheLimit() throws {
        var plan = try #require(segments(rate: 1 << 20))
        #expect(plan.delay(after: .zero) == .zero, "nothing fetched yet")
        let head = try #require(
            HTTPURLResponse(
                url: URL(string: "http://127.0.0.1/files/1")!, statusCode: 206, httpVersion: "HTTP/1.1",
                headerFields: ["Content-Range": "bytes 0-262143/1048576", "ETag": "\"v1\""]))
        let more = plan.advance(after: head)
        #expect(more)
        #expect(plan.delay(after: .milliseconds(50)) == .milliseconds(200), "256 KiB at 1 MiB/s: 0.25 s")
        #expect(plan.delay(after: .milliseconds(400)) == .zero, "already late: at once")
        #expect(try #require(segments(rate: nil)).delay(after: .zero) == .zero)
    }
}
