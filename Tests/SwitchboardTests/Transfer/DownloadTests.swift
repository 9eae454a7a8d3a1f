import Foundation
import Testing
@testable import Switchboard
import SwitchboardTestSupport

/// Downloads through `URLSessionEngine` from the loopback server's `/files` route, compared by SHA-256.
@Suite struct DownloadTests {
    let server = Server.loopback
    let length = 4 << 20

    func center() -> Center {
        testCenter { $0.server = Server.loopback.baseURL + "/" }
    }

    func expectedSHA(seed: UInt64 = 1, length: Int? = nil) async -> String {
        await GeneratedContent(seed: seed).digest(length: length ?? self.length)
    }

    @Test func downloadsToAFile() async throws {
        let scratch = Scratch()
        let destination = scratch.file("file.bin")
        let response = try await center().send { request in
            request.kind = .download
            request.api = "files/\(length)"
            request.destination = .file(destination)
        }
        #expect(response.fileURL == destination)
        #expect(response.data.isEmpty)
        #expect(await Scratch.sha256(of: destination) == expectedSHA())
        #expect(scratch.contents == ["file.bin"])
    }

    @Test func replacesAnExistingFile() async throws {
        let scratch = Scratch()
        let destination = scratch.write("file.bin", bytes: 100)
        _ = try await center().send { request in
            request.kind = .download
            request.api = "files/\(length)"
            request.destination = .file(destination)
        }
        #expect(await Scratch.sha256(of: destination) == expectedSHA())
    }

    @Test func aDroppedDownloadResumesToAByteIdenticalFile() async throws {
        let scratch = Scratch()
        let destination = scratch.file("resumed.bin")
        let center = center()
        let dropAt = length * 4 / 10
        let configure: @Sendable (inout Request) -> Void = { request in
            request.kind = .download
            request.api = "files/\(self.length)"
            request.parameters = ["drop_at": dropAt]
            request.destination = .file(destination)
            request.resumable = true
        }
        let first = await center.sendRecording(configure)
        #expect(first.error?.code == .transport)
        #expect(!FileManager.default.fileExists(atPath: destination.path))
        let partial = URL(fileURLWithPath: destination.path + ".switchboard-partial")
        #expect(FileSink.size(of: partial) == Int64(dropAt))
        #expect(scratch.contents == ["resumed.bin.switchboard-partial", "resumed.bin.switchboard-resume"])

        let (response, reports) = try await center.sendCollectingProgress(configure)
        #expect(response.status == 206)
        #expect(await Scratch.sha256(of: destination) == expectedSHA())
        #expect(scratch.contents == ["resumed.bin"])
        // Progress continues from the offset and ends at the whole length.
        #expect(reports.first.map { $0.completed > Int64(dropAt) } == true)
        #expect(
            reports.last == TransferProgress(direction: .download, completed: Int64(length), expected: Int64(length)))
    }

    @Test func aResumeWorksFromANewCenterAsAfterARestart() async throws {
        let scratch = Scratch()
        let destination = scratch.file("restart.bin")
        let configure: @Sendable (inout Request) -> Void = { request in
            request.kind = .download
            // Inside the first segment: URLSessionEngine fetches at most 2 MiB at first (`Segments`).
            request.url = Server.loopback.baseURL + "/files/\(self.length)?drop_at=\(self.length * 4 / 10)"
            request.destination = .file(destination)
            request.resumable = true
        }
        _ = try? await center().send(configure)
        let response = try await center().send(configure)
        #expect(response.status == 206)
        #expect(await Scratch.sha256(of: destination) == expectedSHA())
    }

    @Test func aServerThatIgnoresRangeStillGivesTheRightFile() async throws {
        let scratch = Scratch()
        let destination = scratch.file("ignored.bin")
        let center = center()
        let key = UUID().uuidString
        _ = try? await center.send { request in
            request.kind = .download
            request.url =
                Server.loopback.baseURL + "/files/\(self.length)?drop_at=1000000&ignore_range=1&drop_once=\(key)"
            request.destination = .file(destination)
            request.resumable = true
        }
        #expect(FileSink.size(of: URL(fileURLWithPath: destination.path + ".switchboard-partial")) == 1_000_000)
        // The same URL (so the partial file is used), and the server answers 200 in full, from zero.
        let response = try await center.send { request in
            request.kind = .download
            request.url =
                Server.loopback.baseURL + "/files/\(self.length)?drop_at=1000000&ignore_range=1&drop_once=\(key)"
            request.destination = .file(destination)
            request.resumable = true
        }
        #expect(response.status == 200)
        #expect(await Scratch.sha256(of: destination) == expectedSHA())
    }

    @Test func aChangedETagRestartsFromZero() async throws {
        let scratch = Scratch()
        let destination = scratch.file("changed.bin")
        let key = UUID().uuidString
        let center = center()
        let configure: @Sendable (inout Request) -> Void = { request in
            request.kind = .download
            request.url =
                Server.loopback.baseURL
                + "/files/\(self.length)?version_key=\(key)&drop_at=2000000&drop_once=\(key)"
            request.destination = .file(destination)
            request.resumable = true
        }
        _ = try? await center.send(configure)
        _ = try await center.send { $0.api = "files-bump/\(key)" }
        let response = try await center.send(configure)
        #expect(response.status == 200)
        #expect(response.headers["ETag"] == "\"seed1001-\(length)\"")
        #expect(await Scratch.sha256(of: destination) == expectedSHA(seed: 1001))
    }

    @Test(arguments: [404, 500, 503])
    func anErrorStatusWritesNothing(status: Int) async throws {
        let scratch = Scratch()
        let destination = scratch.file("never.bin")
        let outcome = await center().sendRecording { request in
            request.kind = .download
            request.api = "files/\(self.length)"
            request.parameters = ["status": status]
            request.destination = .file(destination)
        }
        #expect(outcome.error?.code == .unacceptableStatus)
        #expect(outcome.error?.response?.string?.contains("must never end up in a file") == true)
        #expect(scratch.contents.isEmpty)
    }

    @Test func anErrorStatusLeavesAResumablePartialFileUntouched() async throws {
        let scratch = Scratch()
        let destination = scratch.file("kept.bin")
        let center = center()
        let key = UUID().uuidString
        let configure: @Sendable (inout Request) -> Void = { request in
            request.kind = .download
            request.url = Server.loopback.baseURL + "/files/\(self.length)?drop_at=1500000&fail_key=\(key)"
            request.destination = .file(destination)
            request.resumable = true
        }
        _ = try? await center.send(configure)
        let partial = URL(fileURLWithPath: destination.path + ".switchboard-partial")
        let before = await Scratch.sha256(of: partial)
        // The same URL (so the same partial file), but now the server answers 503 with an error page.
        _ = try await center.send { $0.api = "files-fail/\(key)" }
        let failing = await center.sendRecording(configure)
        #expect(failing.error?.status == 503)
        #expect(await Scratch.sha256(of: partial) == before)
        #expect(FileSink.size(of: partial) == 1_500_000)
        #expect(!FileManager.default.fileExists(atPath: destination.path))
    }

    @Test func a416OnACompletePartialFileFinishesIt() async throws {
        let scratch = Scratch()
        let destination = scratch.file("complete.bin")
        let url = Server.loopback.baseURL + "/files/\(length)"
        // As after a crash between the last byte and the rename: the whole file is there, with its record.
        let partial = URL(fileURLWithPath: destination.path + ".switchboard-partial")
        try GeneratedContent(seed: 1).bytes(offset: 0, count: length).write(to: partial)
        let record = DownloadPlan.Record(url: url, etag: "\"seed1-\(length)\"", lastModified: nil, total: Int64(length))
        try JSONEncoder().encode(record).write(to: URL(fileURLWithPath: destination.path + ".switchboard-resume"))
        let response = try await center().send { request in
            request.kind = .download; request.url = url; request.destination = .file(destination);
            request.resumable = true
        }
        #expect(response.status == 416)
        #expect(response.fileURL == destination)
        #expect(await Scratch.sha256(of: destination) == expectedSHA())
        #expect(scratch.contents == ["complete.bin"])
    }

    @Test func a416OnALongerPartialFileStartsAgain() async throws {
        let scratch = Scratch()
        let destination = scratch.file("shrunk.bin")
        let url = Server.loopback.baseURL + "/files/\(length)"
        let partial = URL(fileURLWithPath: destination.path + ".switchboard-partial")
        try Data(count: length + 10).write(to: partial)
        let record = DownloadPlan.Record(url: url, etag: nil, lastModified: nil, total: nil)
        try JSONEncoder().encode(record).write(to: URL(fileURLWithPath: destination.path + ".switchboard-resume"))
        let response = try await center().send { request in
            request.kind = .download; request.url = url; request.destination = .file(destination);
            request.resumable = true
        }
        #expect(response.status == 200)
        #expect(await Scratch.sha256(of: destination) == expectedSHA())
    }

    @Test(arguments: [
        ("../../etc/passwd", "passwd"),
        ("..", "1000"),
        ("/absolute/evil.sh", "evil.sh"),
        ("a\\..\\b.txt", "b.txt"),
        ("...", "1000"),
        (".hidden", "hidden"),
        ("", "1000"),
    ])
    func aHostileFileNameStaysInsideTheDirectory(_ name: String, _ expected: String) async throws {
        let scratch = Scratch()
        let response = try await center().send { request in
            request.kind = .download
            request.api = "files/1000"
            request.parameters = ["filename": name]
            request.destination = .directory(scratch.url)
        }
        let saved = try #require(response.fileURL)
        #expect(saved.deletingLastPathComponent().standardizedFileURL.path == scratch.url.standardizedFileURL.path)
        #expect(saved.lastPathComponent == expected)
        #expect(scratch.contents == [expected])
        #expect(await Scratch.sha256(of: saved) == expectedSHA(length: 1000))
    }

    /// Into a directory the file's name comes with the response, so the partial file is named after the URL (as the
    /// README says), and a second request for it resumes.
    @Test func aDroppedDownloadIntoADirectoryKeepsAPartialFileNamedAfterTheURL() async throws {
        let scratch = Scratch()
        let center = center()
        // Inside the first segment: URLSessionEngine fetches at most 2 MiB at first (`Segments`).
        let url = Server.loopback.baseURL + "/files/\(length)?drop_at=\(length * 4 / 10)"
        let configure: @Sendable (inout Request) -> Void = { request in
            request.kind = .download
            request.url = url
            request.destination = .directory(scratch.url)
            request.resumable = true
        }
        let first = await center.sendRecording(configure)
        #expect(first.error?.code == .transport)
        let base = ".switchboard-" + String(SHA256Hasher.hex(Data(url.utf8)).prefix(24))
        #expect(scratch.contents == [base + ".switchboard-partial", base + ".switchboard-resume"])
        #expect(
            FileSink.size(of: scratch.url.appendingPathComponent(base + ".switchboard-partial"))
                == Int64(length * 4 / 10))
    }

    @Test func intoADirectoryUnderTheURLsName() async throws {
        let scratch = Scratch()
        let response = try await center().send { request in
            request.kind = .download
            request.url = Server.loopback.baseURL + "/files/1000"
            request.destination = .directory(scratch.url)
        }
        #expect(response.fileURL?.lastPathComponent == "1000")
        #expect(scratch.contents == ["1000"])
    }

    @Test func cancellingLeavesAResumablePartialFileAndNoTemporaryFiles() async throws {
        let scratch = Scratch()
        let destination = scratch.file("cancelled.bin")
        let big = 16 << 20
        let pauseAt = 5 << 20
        let center = center()
        let configure: @Sendable (inout Request) -> Void = { request in
            request.kind = .download
            // The server stalls at 5 MiB, so the cancel lands in the middle of the body.
            request.url = Server.loopback.baseURL + "/files/\(big)?pause_at=\(pauseAt)&pause=10"
            request.destination = .file(destination)
            request.resumable = true
        }
        let outcome = await center.sendCancelling(configure) { $0.completed >= Int64(pauseAt) }
        guard case .failure(let error) = outcome else { Issue.record("expected a cancellation"); return }
        #expect(error.code == .cancelled)
        #expect(scratch.contents == ["cancelled.bin.switchboard-partial", "cancelled.bin.switchboard-resume"])
        #expect(
            FileSink.size(of: URL(fileURLWithPath: destination.path + ".switchboard-partial")) == Int64(pauseAt))
        // The record is the user's alone: its URL may carry credentials in its query.
        let record = try FileManager.default.attributesOfItem(atPath: destination.path + ".switchboard-resume")
        #expect((record[.posixPermissions] as? Int).map { $0 & 0o777 } == 0o600)
        // The resumed request asks for the rest; the server pauses only before 5 MiB, so it flows straight through.
        let response = try await center.send(configure)
        #expect(response.status == 206)
        #expect(await Scratch.sha256(of: destination) == expectedSHA(length: big))
        #expect(scratch.contents == ["cancelled.bin"])
    }

    @Test func aNonResumableFailureLeavesNothing() async throws {
        let scratch = Scratch()
        let outcome = await center().sendRecording { request in
            request.kind = .download
            request.api = "files/\(self.length)"
            request.parameters = ["drop_at": 100_000]
            request.destination = .file(scratch.file("gone.bin"))
        }
        #expect(outcome.error?.code == .transport)
        #expect(scratch.contents.isEmpty)
    }

    @Test func theChecksumIsVerified() async throws {
        let scratch = Scratch()
        let expected = await expectedSHA()
        let good = try await center().send { request in
            request.kind = .download
            request.api = "files/\(self.length)"
            request.destination = .file(scratch.file("good.bin"))
            request.checksum = .sha256(expected.uppercased())
        }
        #expect(good.fileURL != nil)
        let bad = await center().sendRecording { request in
            request.kind = .download
            request.api = "files/\(self.length)"
            request.destination = .file(scratch.file("bad.bin"))
            request.resumable = true
            request.checksum = .sha256(String(repeating: "0", count: 64))
        }
        #expect(bad.error?.code == .fileSystem)
        #expect(bad.error?.message.contains("SHA-256") == true)
        #expect(scratch.contents == ["good.bin"])
        // A checksum that is no SHA-256 is refused before anything is sent: found at the end, it cost the whole
        // download, and a resumable one its partial file.
        for malformed in [
            "zz", String(repeating: "0", count: 63), " " + String(repeating: "a", count: 64),
            String(repeating: "g", count: 64), String(repeating: "\u{663}", count: 64),
        ] {
            let refused = await center().sendRecording { request in
                request.kind = .download
                request.api = "files/\(self.length)"
                request.destination = .file(scratch.file("refused.bin"))
                request.resumable = true
                request.checksum = .sha256(malformed)
            }
            #expect(refused.error?.code == .encoding, "\(malformed)")
            #expect(refused.error?.message.contains("not a SHA-256 (64 hex digits)") == true, "\(malformed)")
            #expect(refused.error?.response == nil, "\(malformed): nothing was sent")
        }
        #expect(scratch.contents == ["good.bin"])
    }

    @Test func asyncProgressStream() async throws {
        let scratch = Scratch()
        let transfer = center().transfer { request in
            request.kind = .download
            request.api = "files/\(self.length)"
            request.destination = .file(scratch.file("streamed.bin"))
        }
        var reports: [TransferProgress] = []
        for await progress in transfer.progress { reports.append(progress) }
        let response = try await transfer.response()
        #expect(response.fileURL != nil)
        #expect(!reports.isEmpty)
        #expect(reports.last?.completed == Int64(length))
        #expect(reports.last?.fraction == 1)
        #expect(zip(reports, reports.dropFirst()).allSatisfy { $0.completed <= $1.completed })
    }

    // MARK: - Bad input

    @Test func aDestinationThatIsADirectory() async {
        let scratch = Scratch()
        let outcome = await center().sendRecording { request in
            request.kind = .download
            request.api = "files/100"
            request.destination = .file(scratch.url)
        }
        #expect(outcome.error?.code == .fileSystem)
        #expect(outcome.error?.message.contains("is a directory") == true)
    }

    @Test func anUnwritableDestination() async {
        let scratch = Scratch()
        let notADirectory = scratch.write("plain", bytes: 10)
        for destination in [URL(fileURLWithPath: "/no/such/dir/file.bin"), notADirectory.appendingPathComponent("x")] {
            let outcome = await center().sendRecording { request in
                request.kind = .download
                request.api = "files/100"
                request.destination = .file(destination)
            }
            #expect(outcome.error?.code == .fileSystem)
        }
        let missingDirectory = await center().sendRecording { request in
            request.kind = .download
            request.api = "files/100"
            request.destination = .directory(URL(fileURLWithPath: "/no/such/dir"))
        }
        #expect(missingDirectory.error?.message.contains("does not exist") == true)
        #expect(scratch.contents == ["plain"])
    }

    @Test func aDownloadWithoutDestination() async {
        let outcome = await center().sendRecording {
            $0.kind = .download; $0.api = "files/100"
        }
        #expect(outcome.error?.code == .fileSystem)
        #expect(outcome.error?.message.contains("destination") == true)
    }
}

/// The first request of a download goes without `Range` on both engines, so that a server with a careless `Range`
/// implementation serves it as any other client (URLSessionEngine's first segment asked for a range, and failed
/// there alone).
@Suite struct CarelessRangeTests {
    static let body = Data((0..<300_000).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ 3) })

    /// Downloads `body` into a file through an engine, from a server that reads a range wrong (the first 100 bytes
    /// claimed, the whole file sent); checks the file, and returns the `Range` field of each request the server had.
    static func download(_ engine: any Engine) async throws -> [String?] {
        let ranges = Locked<[String?]>([])
        let server = try LoopbackServer { request in
            ranges.withLock { $0.append(request.header("Range")) }
            guard request.header("Range") != nil else {
                return ServerResponse(status: 200, headers: [("Content-Type", "application/octet-stream")], body: body)
            }
            return ServerResponse(status: 206, headers: [("Content-Range", "bytes 0-99/\(body.count)")], body: body)
        }
        defer { server.stop() }
        let center = Center { config in
            config.engine = engine
            config.server = server.baseURL + "/"
        }
        let scratch = Scratch()
        let destination = scratch.file("file.bin")
        let response = try await center.send { request in
            request.api = "file.bin"
            request.kind = .download
            request.destination = .file(destination)
        }
        #expect(response.status == 200)
        #expect(try Data(contentsOf: destination) == body)
        return ranges.snapshot
    }

    @Test(arguments: bothEngines)
    func aDownloadsFirstRequestAsksForNoRange(engineName: String) async throws {
        #expect(try await Self.download(namedEngine(engineName)) == [nil])
    }

    /// Where URLSessionEngine fetches in segments (Apple platforms; here with a segment size given), a first `206`
    /// that is not the range asked for sends the download once more as one plain request.
    @Test func aSegmentedDownloadFallsBackToOnePlainRequest() async throws {
        #expect(try await Self.download(URLSessionEngine(downloadSegmentSize: 64 << 10)) == ["bytes=0-65535", nil])
    }
}
