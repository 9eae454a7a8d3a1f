import Foundation
import Testing
@testable import Switchboard
import SwitchboardTestSupport

/// A resumable download keeps its partial file beside its destination (named after it, or into a directory after the
/// URL), so that a later download continues from it; two running at once would share it. A second download of another
/// URL to the same file removed the first's partial file, and the first failed with "the download has 1062912 of
/// 4000000 bytes" (finishing just after the second had written all of its own, it took the second's file for its
/// own); two of one URL whose content changed between them wrote both versions into one file. The second is refused
/// before anything is sent, the same way on both engines, and the partial file is free again once the first ends.
@Suite struct SharedPartialFileTests {
    static let length = 4_000_000

    /// A resumable download of `api` into `target`.
    static func download(_ center: Center, _ api: String, into target: URL) async throws(HTTPError) -> Response {
        try await center.send { request in
            request.kind = .download
            request.api = api
            request.resumable = true
            request.destination = .file(target)
        }
    }

    /// Sends a resumable download of `api` into `target` and expects it refused as a file-system fault whose message
    /// holds `words`.
    static func expectRefused(
        _ center: Center, _ api: String = "files/100000", into target: URL, saying words: String,
        _ context: String = "",
        sourceLocation: SourceLocation = #_sourceLocation
    ) async {
        do {
            _ = try await download(center, api, into: target)
            Issue.record("\(context): the download was not refused", sourceLocation: sourceLocation)
        } catch {
            #expect(error.code == .fileSystem, "\(context): \(error)", sourceLocation: sourceLocation)
            #expect(error.message.contains(words), "\(context): \(error.message)", sourceLocation: sourceLocation)
        }
    }

    @Test(arguments: bothEngines, ["file", "file spelled otherwise", "directory"])
    func aSecondResumableDownloadIntoTheSamePartialFileIsRefused(engineName: String, into: String) async throws {
        let paths = Locked<[String]>([])
        let server = try LoopbackServer { request in
            paths.withLock { $0.append(request.path) }
            return Httpbin.route(request)
        }
        defer { server.stop() }
        let center = try loopbackCenter(engineName, server: server)
        let scratch = Scratch()
        let directory = scratch.file("downloads")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let target = directory.appendingPathComponent("out.bin")
        // The same file by another path: `downloads/../downloads/out.bin`.
        let otherSpelling = directory.appendingPathComponent("..").appendingPathComponent("downloads")
            .appendingPathComponent("out.bin")
        // Into one file, two URLs; into a directory, one URL (its partial file is named after the URL).
        let intoFile = into != "directory"
        let first = "files/\(Self.length)?pause_at=1000000&pause=0.5"
        let second = intoFile ? "files/\(Self.length)?seed=2" : first
        @Sendable func download(_ api: String, to file: URL) async -> Result<Response, HTTPError> {
            do {
                return .success(
                    try await center.send { request in
                        request.kind = .download
                        request.api = api
                        request.resumable = true
                        request.destination = intoFile ? .file(file) : .directory(directory)
                    })
            } catch {
                return .failure(error)
            }
        }
        async let running = download(first, to: target)
        // The first has its partial file once the server has its request.
        await waitUntil { paths.snapshot.count == 1 }
        let refused = await download(second, to: into == "file" ? target : otherSpelling)
        guard case .failure(let error) = refused else {
            Issue.record("\(engineName), \(into): the second download was not refused")
            return
        }
        #expect(error.code == .fileSystem)
        #expect(error.message.contains("another resumable download into"), "\(error.message)")
        #expect(paths.snapshot.count == 1, "the refused download sent nothing")
        let finished = try await running.get()
        let expected = GeneratedContent(seed: 1).bytes(offset: 0, count: Self.length)
        #expect(try Data(contentsOf: try #require(finished.fileURL)) == expected)
        // Free again once the first ended: the same download now runs, to its own bytes.
        let again = try await download(second, to: target).get()
        let secondSeed: UInt64 = intoFile ? 2 : 1
        let secondBytes = GeneratedContent(seed: secondSeed).bytes(offset: 0, count: Self.length)
        #expect(try Data(contentsOf: try #require(again.fileURL)) == secondBytes)
    }

    /// A resumable download whose lock file another process holds is refused before anything is sent, and runs once
    /// the lock is let go; the file a killed process leaves behind (locked by nobody) is taken and removed.
    ///
    /// The other process is stood in for by another open of the lock file in this one: `flock` locks belong to an
    /// open of the file, so this one's own lock conflicts with it exactly as another process's does (the test below
    /// uses a real one).
    @Test(arguments: bothEngines)
    func aResumableDownloadIsRefusedWhileAnotherProcessHoldsItsPartialFile(engineName: String) async throws {
        let (server, requests) = try countingHttpbin()
        defer { server.stop() }
        let center = try loopbackCenter(engineName, server: server)
        let scratch = Scratch()
        let target = scratch.file("out.bin")
        let lockFile = target.path + DownloadPlan.lockSuffix
        let other = open(lockFile, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        try #require(other >= 0)
        try #require(flock(other, LOCK_EX | LOCK_NB) == 0)
        await Self.expectRefused(
            center, into: target, saying: "another process is downloading into \(target.path)", engineName)
        #expect(requests.snapshot == 0, "a refused download sent nothing")
        #expect(scratch.contents == ["out.bin.switchboard-lock"], "a refused download left no file of its own")
        // Let go, as a killed process would: its file stays, locked by nobody. A process started meanwhile by another
        // test holds a copy of the descriptor until it runs its program (flock locks go with every copy), so the lock
        // is free only once a new open of the file can take it.
        close(other)
        await waitUntil {
            guard case .taken(let descriptor) = DownloadPlan.lockAcrossProcesses(lockFile) else { return false }
            close(descriptor)
            return true
        }
        let response = try await Self.download(center, "files/100000", into: target)
        #expect(
            try Data(contentsOf: try #require(response.fileURL))
                == GeneratedContent(seed: 1).bytes(offset: 0, count: 100_000))
        #expect(scratch.contents == ["out.bin"], "the lock file went with the download")
    }

    #if os(Linux)
    /// The same with a real second process (util-linux's `flock`, holding the lock file while it sleeps): the lock
    /// is one other processes see.
    @Test func aLockHeldByAnotherProcessRefusesAResumableDownload() async throws {
        let flockTool = "/usr/bin/flock"
        try #require(FileManager.default.isExecutableFile(atPath: flockTool), "util-linux's flock is needed")
        let (center, _) = stubCenter(StubEngine())
        let scratch = Scratch()
        let target = scratch.file("out.bin")
        let ready = scratch.file("ready")
        let child = try ProcessLaunch.spawn(
            flockTool,
            ["-x", target.path + DownloadPlan.lockSuffix, "/bin/sh", "-c", "echo > \(ready.path); exec sleep 60"])
        defer {
            kill(child, SIGTERM)
            _ = ProcessLaunch.exitStatus(of: child)
        }
        await waitUntil { FileManager.default.fileExists(atPath: ready.path) }
        await Self.expectRefused(center, "file", into: target, saying: "another process is downloading into")
    }
    #endif

    /// A symbolic link in the lock file's or the partial file's place is not followed: the download is refused before
    /// anything is sent, and no file is made where the link points. Both names are known in advance, so a link could
    /// be put there in a shared directory (`/tmp`), and the body would have been written through it.
    @Test(arguments: [DownloadPlan.lockSuffix, DownloadPlan.partialSuffix])
    func aLinkInTheLockOrPartialFilesPlaceIsNotFollowed(suffix: String) async throws {
        let (center, stub) = stubCenter(StubEngine())
        let scratch = Scratch()
        let target = scratch.file("out.bin")
        let elsewhere = scratch.file("elsewhere.txt")
        try FileManager.default.createSymbolicLink(atPath: target.path + suffix, withDestinationPath: elsewhere.path)
        await Self.expectRefused(center, "file", into: target, saying: target.path + suffix)
        #expect(stub.requests.isEmpty, "nothing was sent")
        #expect(!FileManager.default.fileExists(atPath: elsewhere.path), "no file was made where the link points")
    }

    /// A link put in the partial file's place after the download checked it, while its request is on the way (the
    /// server makes it here, before it answers), is not followed either: the engine opens the partial file without
    /// following links, and the download fails as a file-system fault, on both engines, with nothing written where
    /// the link points.
    @Test(arguments: bothEngines)
    func aLinkMadeWhileTheRequestIsOnTheWayIsNotFollowed(engineName: String) async throws {
        let scratch = Scratch()
        let target = scratch.file("out.bin")
        let elsewhere = scratch.file("elsewhere.txt")
        let server = try LoopbackServer { request in
            try? FileManager.default.createSymbolicLink(
                atPath: target.path + DownloadPlan.partialSuffix, withDestinationPath: elsewhere.path)
            return Httpbin.route(request)
        }
        defer { server.stop() }
        let center = try loopbackCenter(engineName, server: server)
        await Self.expectRefused(center, into: target, saying: "symbolic link", engineName)
        #expect(!FileManager.default.fileExists(atPath: elsewhere.path), "\(engineName): nothing where the link points")
    }

    /// A download that is not resumable writes into a partial file of its own. It was named after the request's
    /// number, which every process counts from 1: two processes downloading to one destination wrote into one file,
    /// each cutting it back under the other, and the first to finish renamed the mixture into place (and the other's
    /// file with it).
    @Test(arguments: bothEngines)
    func aDownloadLeavesAlonePartialFilesOfOtherProcessesWithItsNumber(engineName: String) async throws {
        let server = try LoopbackServer { Httpbin.route($0) }
        defer { server.stop() }
        let center = try loopbackCenter(engineName, server: server)
        let scratch = Scratch()
        let target = scratch.file("out.bin")
        let number: UInt64 = 987_654_321
        // Another process's download of its request with this number, into the same destination.
        let others = scratch.file("out.bin.\(number).switchboard-partial")
        let theirs = Data("another process's bytes".utf8)
        try theirs.write(to: others)
        // A send numbers its request itself; this one is given the colliding number and run as `send` runs it.
        var request = Request {
            $0.kind = .download
            $0.api = "files/100000"
            $0.destination = .file(target)
        }
        request.id = RequestID(rawValue: number)
        let configuration = center.configuration
        let response = try await center.launcher.run(.single(request), bySignal: false) { [request] _ in
            await center.pipeline.run(request, configuration, progress: nil)
        }.get()
        #expect(response.request.id == RequestID(rawValue: number))
        #expect(
            try Data(contentsOf: try #require(response.fileURL))
                == GeneratedContent(seed: 1).bytes(offset: 0, count: 100_000))
        #expect(try Data(contentsOf: others) == theirs)
        #expect(scratch.contents == ["out.bin", "out.bin.\(number).switchboard-partial"])
    }
}
