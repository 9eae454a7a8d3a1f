import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
@testable import Switchboard
import SwitchboardTestSupport

/// Downloads fetched in `Range` segments (1 MiB here, so a 4 MiB file takes four requests).
@Suite struct SegmentedDownloadTests {
    let length = 4 << 20

    func center() -> Center {
        testCenter { config in
            config.server = Server.loopback.baseURL + "/"
            config.engine = URLSessionEngine(downloadSegmentSize: 1 << 20)
        }
    }

    @Test func aWholeFileInSegmentsLooksLikeOneResponse() async throws {
        let scratch = Scratch()
        let (response, progress) = try await center().sendCollectingProgress { request in
            request.kind = .download
            request.api = "files/\(self.length)"
            request.destination = .file(scratch.file("whole.bin"))
        }
        let reports = progress.map(\.completed)
        #expect(response.status == 200)
        #expect(response.headers["Content-Length"] == String(length))
        #expect(response.headers["Content-Range"] == nil)
        #expect(await Scratch.sha256(of: scratch.file("whole.bin")) == GeneratedContent(seed: 1).digest(length: length))
        #expect(reports.last == Int64(length))
        #expect(zip(reports, reports.dropFirst()).allSatisfy { $0 <= $1 })
    }

    @Test func aResumeInSegments() async throws {
        let scratch = Scratch()
        let destination = scratch.file("resume.bin")
        let configure: @Sendable (inout Request) -> Void = { request in
            request.kind = .download
            request.url = Server.loopback.baseURL + "/files/\(self.length)?drop_at=1500000"
            request.destination = .file(destination)
            request.resumable = true
        }
        let center = center()
        _ = try? await center.send(configure)
        #expect(FileSink.size(of: URL(fileURLWithPath: destination.path + ".switchboard-partial")) == 1_500_000)
        let response = try await center.send(configure)
        #expect(response.status == 206)
        #expect(response.headers["Content-Range"] == "bytes 1500000-\(length - 1)/\(length)")
        #expect(await Scratch.sha256(of: destination) == GeneratedContent(seed: 1).digest(length: length))
    }

    @Test func aFileThatChangesBetweenSegmentsRestartsFromZero() async throws {
        let scratch = Scratch()
        let destination = scratch.file("changing.bin")
        let key = UUID().uuidString
        let center = center()
        // The file changes on the server just after the second segment was served, so the third segment's
        // If-Range no longer matches and the server sends the new file whole.
        let response = try await center.send { request in
            request.kind = .download
            request.url = Server.loopback.baseURL + "/files/\(self.length)?version_key=\(key)&change_at=1500000"
            request.destination = .file(destination)
        }
        #expect(response.status == 200)
        #expect(response.headers["ETag"] == "\"seed1001-\(length)\"")
        #expect(await Scratch.sha256(of: destination) == GeneratedContent(seed: 1001).digest(length: length))
    }

    // MARK: - Planning

    func engineRequest(
        method: HTTPMethod = .get, range: String? = nil, offset: Int64 = 0, body: EngineRequest.Body = .none
    ) -> EngineRequest {
        var urlRequest = URLRequest(url: URL(string: "http://x.com/f")!)
        urlRequest.httpMethod = method.rawValue
        urlRequest.setValue(range, forHTTPHeaderField: "Range")
        return EngineRequest(
            urlRequest: urlRequest, body: body, destination: .file(URL(fileURLWithPath: "/tmp/x"), offset: offset))
    }

    func partial(_ range: String, etag: String? = "\"v1\"") -> HTTPURLResponse {
        var headers = ["Content-Range": range, "Content-Length": "1"]
        headers["ETag"] = etag
        return HTTPURLResponse(
            url: URL(string: "http://x.com/f")!, statusCode: 206, httpVersion: nil, headerFields: headers)!
    }

    @Test func onlyPlainGetsIntoFilesAreSplit() {
        #expect(Segments(for: engineRequest(), size: 10) != nil)
        #expect(Segments(for: engineRequest(range: "bytes=5-", offset: 5), size: 10)?.resumed == true)
        #expect(Segments(for: engineRequest(), size: nil) == nil)
        #expect(Segments(for: engineRequest(method: .post, body: .data(Data([1]))), size: 10) == nil)
        #expect(Segments(for: engineRequest(range: "bytes=0-99"), size: 10) == nil)
        var memory = engineRequest()
        memory.destination = .memory
        #expect(Segments(for: memory, size: 10) == nil)
    }

    @Test func segmentsAdvanceWithTheirValidator() throws {
        var segments = try #require(Segments(for: engineRequest(), size: 10))
        #expect(segments.range == "bytes=0-9")
        let advanced = segments.advance(after: partial("bytes 0-9/25"))
        #expect(advanced)
        let next = segments.nextRequest(from: engineRequest().urlRequest)
        #expect(next.value(forHTTPHeaderField: "Range") == "bytes=10-19")
        #expect(next.value(forHTTPHeaderField: "If-Range") == "\"v1\"")
        let second = segments.advance(after: partial("bytes 10-19/25"))
        let third = segments.advance(after: partial("bytes 20-24/25"))
        #expect(second && !third)
        let overall = segments.overall(partial("bytes 20-24/25"))
        #expect(overall.statusCode == 200)
        #expect(overall.value(forHTTPHeaderField: "Content-Length") == "25")
        #expect(overall.value(forHTTPHeaderField: "Content-Range") == nil)
    }

    @Test func withoutAValidatorTheRestComesInOneRequest() throws {
        var segments = try #require(Segments(for: engineRequest(range: "bytes=5-", offset: 5), size: 10))
        let advanced = segments.advance(after: partial("bytes 5-14/100", etag: nil))
        #expect(advanced)
        let next = segments.nextRequest(from: engineRequest().urlRequest)
        #expect(next.value(forHTTPHeaderField: "Range") == "bytes=15-")
        #expect(next.value(forHTTPHeaderField: "If-Range") == nil)
        let last = segments.advance(after: partial("bytes 15-99/100", etag: nil))
        #expect(!last)
        let overall = segments.overall(partial("bytes 15-99/100", etag: nil))
        #expect(overall.statusCode == 206)
        #expect(overall.value(forHTTPHeaderField: "Content-Range") == "bytes 5-99/100")
    }

    /// Where segments adapt, each is 8 waits' worth of bytes at the speed the last one came, between 2 MiB and the
    /// engine's largest: small on a fast, near server (where URLSession would outrun the delegate and pile up), large
    /// on a distant one (where the wait between segments would cost). On Linux, whose delegate writes in URLSession's
    /// own thread, every segment is the largest.
    @Test func segmentsAreSizedFromHowTheLastOneArrived() throws {
        let largest: Int64 = 16 << 20
        func size(latency: Duration, bytesPerSecond: Double) -> Int64 {
            Segments.size(
                after: Segments.Timing(
                    latency: latency, bytes: Int64(bytesPerSecond / 4), duration: .milliseconds(250)),
                smallest: Segments.smallest, largest: largest)
        }
        #expect(size(latency: .microseconds(200), bytesPerSecond: 400e6) == Segments.smallest, "loopback")
        #expect(size(latency: .milliseconds(200), bytesPerSecond: 12.5e6) == largest, "a distant server")
        #expect((3_999_000...4_001_000).contains(size(latency: .milliseconds(40), bytesPerSecond: 12.5e6)), "between")
        #expect(
            Segments.size(
                after: Segments.Timing(latency: .zero, bytes: 0, duration: .zero), smallest: Segments.smallest,
                largest: largest) == Segments.smallest, "nothing measured")

        var segments = try #require(Segments(for: engineRequest(), size: Int(largest)))
        #if canImport(FoundationNetworking)
        #expect(!Segments.adapts)
        #expect(segments.range == "bytes=0-16777215", "the first segment is the largest")
        let near = Segments.Timing(latency: .microseconds(200), bytes: 16 << 20, duration: .milliseconds(40))
        let advanced = segments.advance(after: partial("bytes 0-16777215/104857600"), timing: near)
        #expect(advanced)
        #expect(segments.range == "bytes=16777216-33554431", "and so is the next, on a near server too")
        #else
        #expect(Segments.adapts)
        #expect(segments.range == "bytes=0-2097151", "the first segment is the smallest")
        let distant = Segments.Timing(latency: .milliseconds(200), bytes: 2 << 20, duration: .milliseconds(160))
        let advanced = segments.advance(after: partial("bytes 0-2097151/104857600"), timing: distant)
        #expect(advanced)
        #expect(segments.range == "bytes=2097152-18874367", "then the largest, for a distant server")
        #endif
    }
}
