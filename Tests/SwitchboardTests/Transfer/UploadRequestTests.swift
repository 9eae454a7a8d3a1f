import Foundation
import Testing
@testable import Switchboard
import SwitchboardTestSupport

/// Uploads through `URLSessionEngine`. The echo tests run against real httpbin too; the hashing sink is the loopback
/// server's own. A temporary copy of a multipart body (made on Apple platforms only) is recognised by a marker field
/// of the test's own.
@Suite struct UploadRequestTests {
    func center() -> Center {
        Server.center()
    }

    @Test func multipartWithTwoFilesAndTwoFieldsIsEchoed() async throws {
        let scratch = Scratch()
        let text = scratch.file("notes.txt")
        try Data("hello from a file".utf8).write(to: text)
        let binary = scratch.write("photo.png", bytes: 3000)
        let marker = UUID().uuidString
        let (response, reports) = try await center().sendCollectingProgress { request in
            request.kind = .upload
            request.api = "post"
            request.parameters = ["title": "Holiday", "tags": "sea, sun", "marker": marker]
            request.addFormData(name: "notes", fileURL: text)
            request.addFormData(name: "photo", fileURL: binary)
        }
        let json = try #require(response.json)
        #expect(json["form"] == ["title": "Holiday", "tags": "sea, sun", "marker": .string(marker)])
        #expect(json["files"]?["notes"]?.string == "hello from a file")
        let photo = try #require(json["files"]?["photo"]?.string)
        #expect(photo.hasPrefix("data:image/png;base64,"))
        #expect(
            Data(base64Encoded: String(photo.dropFirst("data:image/png;base64,".count)))
                == (try Data(contentsOf: binary)))
        #expect(json["headers"]?["Content-Type"]?.string?.hasPrefix("multipart/form-data; boundary=") == true)
        let upload = reports.filter { $0.direction == .upload }
        #expect(upload.last?.isComplete == true)
        #expect(upload.last?.expected.map { $0 > 3000 } == true)
        #expect(MultipartCopies.holding(marker).isEmpty, "no temporary copy of this test's body remains")
    }

    @Test func multipartFromMemoryWithExplicitNamesAndTypes() async throws {
        let response = try await center().send { request in
            request.kind = .upload
            request.api = "anything"
            request.method = .put
            request.addFormData(name: "report", data: Data("a,b\n1,2\n".utf8), fileName: "report.csv")
            request.addFormData(name: "note", data: Data("just a field".utf8))
        }
        let json = try #require(response.json)
        #expect(json["method"]?.string == "PUT")
        #expect(json["files"]?["report"]?.string == "a,b\n1,2\n")
        #expect(json["form"]?["note"]?.string == "just a field")
    }

    @Test func aRawFileBodyWithAnyMethod() async throws {
        let scratch = Scratch()
        let file = scratch.file("payload.json")
        try Data(#"{"uploaded":true}"#.utf8).write(to: file)
        let response = try await center().send { request in
            request.kind = .upload
            request.api = "put"
            request.method = .put
            request.body = .file(file, contentType: "application/json")
        }
        let json = try #require(response.json)
        #expect(json["json"] == ["uploaded": true])
        #expect(json["headers"]?["Content-Length"]?.string == "17")
        #expect(json["headers"]?["Transfer-Encoding"] == nil)
    }

    @Test(.enabled(if: !Server.isRealHttpbin, "the hashing sink is the loopback server's own"))
    func aFiftyMegabyteUploadIsHashedByTheServer() async throws {
        let scratch = Scratch()
        let file = scratch.write("big.bin", bytes: 50_000_000, seed: 77)
        let expected = await Scratch.sha256(of: file)
        let response = try await testCenter { $0.server = Server.loopback.baseURL + "/" }.send { request in
            request.kind = .upload
            request.api = "sink"
            request.method = .put
            request.body = .file(file)
        }
        let json = try #require(response.json)
        #expect(json["length"]?.int == 50_000_000)
        #expect(json["sha256"]?.string == expected)
        #expect(json["chunked"]?.bool == false)
    }

    @Test(.enabled(if: !Server.isRealHttpbin, "the hashing sink is the loopback server's own"))
    func aLargeMultipartUploadStreamsFromDiskAndLeavesNoTemporaryFile() async throws {
        let scratch = Scratch()
        let file = scratch.write("video.mp4", bytes: 20_000_000, seed: 5)
        let marker = UUID().uuidString
        let response = try await testCenter { $0.server = Server.loopback.baseURL + "/" }.send { request in
            request.kind = .upload
            request.api = "sink"
            request.parameters = ["marker": marker]
            request.addFormData(name: "video", fileURL: file)
        }
        #expect(response.json?["length"]?.int.map { $0 > 20_000_000 } == true)
        #expect(response.json?["method"]?.string == "POST")
        #expect(MultipartCopies.holding(marker).isEmpty, "no temporary copy of this test's body remains")
    }

    @Test func aFailedOrCancelledMultipartUploadLeavesNoTemporaryFile() async throws {
        let scratch = Scratch()
        let file = scratch.write("doc.pdf", bytes: 1000)
        let marker = UUID().uuidString
        let refused = await testCenter { $0.engine = URLSessionEngine() }.sendRecording { request in
            request.kind = .upload
            request.url = "http://127.0.0.1:1/upload"
            request.parameters = ["marker": marker]
            request.addFormData(name: "doc", fileURL: file)
        }
        #expect(refused.error?.code == .cannotConnect)
        let stub = StubEngine()
        stub.on(nil, "*", reply: .status(200).delayed(by: .seconds(30)))
        let center = testCenter { $0.engine = stub }
        let cancelled = await upload(file, as: "doc", marker: marker, on: center) {
            $0.url = "https://example.com/upload"
        } afterSending: { id in
            Task {
                await waitUntil { stub.statistics.inFlight == 1 }
                center.cancel(id)
            }
        }
        #expect(cancelled.error?.code == .cancelled)
        #expect(MultipartCopies.holding(marker).isEmpty, "no temporary copy of this test's body remains")
    }

    #if canImport(FoundationNetworking)
    /// URLSessionEngine on Linux streams a multipart body from its pieces, with its length: no copy exists while it is
    /// on its way (looked for at its first upload progress report), nor after.
    @Test func aMultipartUploadOnURLSessionEngineMakesNoCopyOnItsWay() async throws {
        let scratch = Scratch()
        let file = scratch.write("big.bin", bytes: 12 << 20)
        let marker = UUID().uuidString
        let center = testCenter { config in
            config.engine = URLSessionEngine()
            config.server = Server.loopback.baseURL + "/"
        }
        let copiesMidway = Locked<[String]?>(nil)
        let result = await withCheckedContinuation {
            (continuation: CheckedContinuation<Result<Response, HTTPError>, Never>) in
            center.send { request in
                request.kind = .upload
                request.api = "discard"
                request.parameters = ["marker": marker]
                request.addFormData(name: "big", fileURL: file)
            } onFinished: { result in
                continuation.resume(returning: result)
            } onProgress: { progress in
                guard progress.direction == .upload, progress.completed > 0, copiesMidway.snapshot == nil else {
                    return
                }
                copiesMidway.withLock { $0 = MultipartCopies.holding(marker) }
            }
        }
        let response = try result.get()
        #expect(response.json?["length"]?.int.map { $0 > 12 << 20 } == true)
        #expect(copiesMidway.snapshot == [], "mid-upload, no copy of the body exists")
        #expect(MultipartCopies.holding(marker).isEmpty)
    }
    #else
    /// URLSessionEngine copies a multipart body into a file before sending it (URLSession gives a length only to a
    /// file): the copy is made on a dispatch queue, so a cancel during it ends the request, and nothing is left.
    @Test func aMultipartUploadCancelledWhileURLSessionEngineCopiesItEndsCancelledAndLeavesNoCopy() async throws {
        let scratch = Scratch()
        let file = scratch.write("big.bin", bytes: 64 << 20)
        let marker = UUID().uuidString
        let center = testCenter { config in
            config.engine = URLSessionEngine()
            config.server = Server.loopback.baseURL + "/"
        }
        let cancelled = await upload(file, as: "big", marker: marker, on: center) {
            $0.api = "discard"
        } afterSending: { id in
            BlockingWork.start {
                // As soon as the copy has begun (or after 10 s, when the test fails anyway).
                let deadline = Date().addingTimeInterval(10)
                while MultipartCopies.holding(marker).isEmpty, Date() < deadline { usleep(500) }
                center.cancel(id)
            }
        }
        #expect(cancelled.error?.code == .cancelled)
        await waitUntil { MultipartCopies.holding(marker).isEmpty }
        #expect(MultipartCopies.holding(marker).isEmpty, "the copy was removed")
    }
    #endif

    /// Sends `file` as the form part `name` of an upload whose one field is `marker` (so that its temporary copies
    /// can be told apart), to where `target` says, with every callback recorded.
    private func upload(
        _ file: URL, as name: String, marker: String, on center: Center, to target: (inout Request) -> Void,
        afterSending: @escaping @Sendable (RequestID) -> Void
    ) async -> Outcome {
        await center.sendRecording(
            { request in
                request.kind = .upload
                target(&request)
                request.parameters = ["marker": marker]
                request.addFormData(name: name, fileURL: file)
            }, afterSending: afterSending)
    }

    // MARK: - Bad input

    /// A file reached through symbolic links (as a mounted secret or a shared folder often is) goes whole, as a body
    /// and as a part. Before, its length was the link's own (the length of the path it holds), and both engines
    /// failed the upload as a file that changed while it was sent.
    @Test func aFileThroughSymbolicLinksGoesWhole() async throws {
        let scratch = Scratch()
        let target = scratch.write("target.bin", bytes: 5000)
        let inner = scratch.file("inner-link")
        let link = scratch.file("payload.bin")
        try FileManager.default.createSymbolicLink(at: inner, withDestinationURL: target)
        try FileManager.default.createSymbolicLink(at: link, withDestinationURL: inner)
        let content = try Data(contentsOf: target)
        let body = try await center().send { request in
            request.api = "anything"
            request.method = .put
            request.body = .file(link)
        }
        let echoed = try #require(body.json?["data"]?.string)
        let prefix = "data:application/octet-stream;base64,"
        #expect(echoed.hasPrefix(prefix))
        #expect(Data(base64Encoded: String(echoed.dropFirst(prefix.count))) == content)
        let form = try await center().send { request in
            request.kind = .upload
            request.api = "post"
            request.addFormData(name: "payload", fileURL: link, mimeType: "application/octet-stream")
        }
        let part = try #require(form.json?["files"]?["payload"]?.string)
        #expect(part.hasPrefix(prefix))
        #expect(Data(base64Encoded: String(part.dropFirst(prefix.count))) == content)
    }

    @Test func aMissingUploadFile() async {
        let stub = StubEngine()
        let center = testCenter {
            $0.engine = stub; $0.server = "https://example.com/"
        }
        let missing = URL(fileURLWithPath: "/no/such/file.bin")
        let asBody = await center.sendRecording { request in
            request.kind = .upload; request.api = "up"; request.method = .put; request.body = .file(missing)
        }
        #expect(asBody.error?.code == .fileSystem)
        #expect(asBody.error?.message.contains("/no/such/file.bin") == true)
        let asPart = await center.sendRecording { request in
            request.kind = .upload; request.api = "up"; request.addFormData(name: "f", fileURL: missing)
        }
        #expect(asPart.error?.code == .fileSystem)
        // Nor a FIFO or a device: no length to send, and a FIFO nobody writes to held the request forever.
        let scratch = Scratch()
        let fifo = scratch.file("fifo")
        #expect(mkfifo(fifo.path, 0o600) == 0)
        for file in [fifo, URL(fileURLWithPath: "/dev/zero")] {
            let body = await center.sendRecording { request in
                request.kind = .upload; request.api = "up"; request.method = .put; request.body = .file(file)
            }
            let part = await center.sendRecording { request in
                request.kind = .upload; request.api = "up"; request.addFormData(name: "f", fileURL: file)
            }
            for outcome in [body, part] {
                #expect(outcome.error?.code == .fileSystem, "\(file.path)")
                #expect(outcome.error?.message.contains("is not a regular file") == true, "\(file.path)")
            }
        }
        #expect(stub.requests.isEmpty)
    }

    @Test func formPartsAndABodyTogetherAreRefused() async {
        let center = testCenter {
            $0.engine = StubEngine(); $0.server = "https://example.com/"
        }
        let outcome = await center.sendRecording { request in
            request.kind = .upload
            request.api = "up"
            request.body = .data(Data([1]))
            request.addFormData(name: "f", data: Data([2]))
        }
        #expect(outcome.error?.code == .encoding)
    }
}

/// An upload file that grows or shrinks while it is sent fails the request, the same way on both engines, and the
/// server never has a whole request: the body would be neither the file as it was nor as it is. (`CurlEngine` sent the
/// first bytes of a file that grew as if they were all of it, and waited, until the idle timeout, for the rest of one
/// that shrank.) A multipart form's file part alike: it was read to its end, so the stream yielded more or less than
/// it announced and the engines said so as `.encoding`, "the body stream ...", not naming the file.)
@Suite(.enabled(if: !Server.isRealHttpbin, "the slow sink is the loopback server's own"))
struct ChangingUploadFileTests {
    @Test(arguments: bothEngines, ["grows", "shrinks", "grows in a form", "shrinks in a form"])
    func anUploadFileThatChangesWhileItIsSentFailsTheRequest(engineName: String, change: String) async throws {
        let (server, completeBodies) = try countingHttpbin()
        defer { server.stop() }
        let center = try loopbackCenter(engineName, server: server)
        let scratch = Scratch()
        let size = 16 << 20
        let file = scratch.write("body.bin", bytes: size, seed: 4)
        // The server changes the file once it has read 1 MiB, on its own thread, before it reads on: the client can
        // have read at most that and what the sockets hold, far from the file's end, however slowly this test's
        // threads run. (The change was made at the first progress report past 1 MiB, on the callback queue; with the
        // machine busy, the report came after the whole file had been read, about 1 run in 10 under load. Then the
        // test made it after the server had stopped reading, which needed the test's task to run within the idle
        // timeout; in the suite's first seconds it did not.)
        let gate = SinkGate(after: 1 << 20) {
            let handle = try FileHandle(forUpdating: file)
            if change.hasPrefix("grows") {
                try handle.seekToEnd()
                try handle.write(contentsOf: Data(repeating: 1, count: 10))
            } else {
                try handle.truncate(atOffset: 1000)
            }
            try handle.close()
        }
        defer { gate.forget() }
        let outcome = await withCheckedContinuation { (continuation: CheckedContinuation<HTTPError?, Never>) in
            center.send { request in
                request.api = "sink?gate=\(gate.key)"
                request.method = .put
                if change.hasSuffix("in a form") {
                    request.kind = .upload
                    request.addFormData(name: "file", fileURL: file)
                } else {
                    request.body = .file(file)
                }
                request.timeout = .seconds(10)  // before the change, one engine waited for the rest until this
            } onFinished: { result in
                if case .failure(let error) = result {
                    continuation.resume(returning: error)
                } else {
                    continuation.resume(returning: nil)
                }
            }
        }
        #expect(gate.isReached, "\(engineName), \(change): the server never read 1 MiB")
        #expect(gate.failure == nil, "\(engineName), \(change): \(gate.failure ?? "")")
        #expect(outcome?.code == .fileSystem, "\(engineName), \(change): \(String(describing: outcome))")
        let said = change.hasPrefix("grows") ? "and has more now" : "and ended after"
        let expected = "\(file.path) changed while it was sent: it had \(size) bytes when the send started, \(said)"
        #expect(outcome?.message.contains(expected) == true, "\(engineName): \(outcome?.message ?? "")")
        #expect(completeBodies.snapshot == 0, "\(engineName), \(change): the server had a whole request")
    }
}

@Suite struct SHA256Tests {
    @Test(arguments: [
        ("", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"),
        ("abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"),
        (
            "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"
        ),
    ])
    func knownVectors(_ input: String, _ digest: String) {
        #expect(SHA256Hasher.hex(Data(input.utf8)) == digest)
    }

    @Test func incrementalUpdatesMatchOneShot() {
        let data = GeneratedContent(seed: 3).bytes(offset: 0, count: 10_000)
        var hasher = SHA256Hasher()
        var offset = 0
        for size in [1, 63, 64, 65, 1000, 127, 8680] {
            hasher.update(data[offset..<offset + size])
            offset += size
        }
        #expect(offset == data.count)
        #expect(hasher.hexDigest() == SHA256Hasher.hex(data))
    }

    @Test func aMillionAs() {
        #expect(
            SHA256Hasher.hex(Data(repeating: UInt8(ascii: "a"), count: 1_000_000))
                == "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0")
    }

    /// The loopback server's digests of what it receives, and the suite's of files, are OpenSSL's where it can be
    /// loaded (`BodyDigest`): they agree with `SHA256Hasher`'s, fed in pieces of every size around a block's, and
    /// for files of lengths around a block's edges.
    @Test(.enabled(if: BodyDigest.usesOpenSSL, "libcrypto cannot be loaded here"))
    func theServersDigestsAgreeWithSHA256Hasher() throws {
        let data = GeneratedContent(seed: 5).bytes(offset: 0, count: 20_003)
        for pieces in [[0], [1, 63, 64, 65], [55, 56, 57, 1000], [4096, 65536]] {
            let server = BodyDigest()
            var hasher = SHA256Hasher()
            var offset = 0
            var index = 0
            while offset < data.count {
                let size = min(max(pieces[index % pieces.count], 1), data.count - offset)
                let piece = data[offset..<(offset + size)]
                server.update(piece)
                hasher.update(piece)
                offset += size
                index += 1
            }
            #expect(server.hexDigest() == hasher.hexDigest(), "pieces of \(pieces)")
        }
        #expect(BodyDigest.hex(Data()) == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
        let scratch = Scratch()
        for length in [0, 55, 56, 63, 64, 65, 1_000_003] {
            let file = scratch.write("\(length).bin", bytes: length, seed: UInt64(length))
            #expect(try BodyDigest.hex(ofFile: file) == SHA256Hasher.hex(Data(contentsOf: file)), "\(length) bytes")
        }
    }
}
