import Foundation
import Testing
@testable import Switchboard
import SwitchboardTestSupport

/// Multipart bodies with file parts are read straight from their pieces, with a `Content-Length` (object stores
/// refuse chunked multipart bodies): CurlEngine, and URLSessionEngine on Linux, stream them without any copy (on Apple
/// platforms URLSessionEngine copies the body into a temporary file it deletes when the exchange ends). The same bytes
/// arrive on both engines, and again when the body is sent a second time (a `307`).
@Suite(.serialized) struct MultipartStreamingTests {
    @Test(arguments: bothEngines)
    func fileAndMemoryPartsArriveByteForByte(engineName: String) async throws {
        let scratch = Scratch()
        let big = scratch.write("big.bin", bytes: 6 << 20, seed: 41)
        let tiny = scratch.file("tiny.txt")
        try Data("abc".utf8).write(to: tiny)
        let marker = UUID().uuidString
        let response = try await loopbackCenter(engineName).send { request in
            request.kind = .upload
            request.api = "anything"
            request.parameters = ["title": "streamed", "marker": marker]
            request.addFormData(name: "big", fileURL: big)
            request.addFormData(name: "tiny", fileURL: tiny)
            request.addFormData(name: "inline", data: Data("from memory".utf8), fileName: "inline.txt")
        }
        let json = try #require(response.json)
        #expect(json["form"]?["title"]?.string == "streamed")
        let files = try #require(json["files"])
        let prefix = "data:application/octet-stream;base64,"
        let bigEcho = try #require(files["big"]?.string)
        #expect(bigEcho.hasPrefix(prefix))
        #expect(
            Data(base64Encoded: String(bigEcho.dropFirst(prefix.count))) == (try Data(contentsOf: big)),
            "\(engineName): the 6 MiB part")
        #expect(files["tiny"]?.string == "abc")
        #expect(files["inline"]?.string == "from memory")
        #expect(MultipartCopies.holding(marker).isEmpty, "no temporary copy is left")
        let headers = try #require(json["headers"])
        #expect(
            headers["Content-Length"]?.string.flatMap { Int($0) }.map { $0 > 6 << 20 } == true,
            "\(engineName): the length is known from the parts")
        #expect(headers["Transfer-Encoding"] == nil, "\(engineName): never chunked")
    }

    /// A part's name and file name are quoted with `"` and line breaks percent-encoded, each scalar of them: one that
    /// a combining mark follows (U+0301) is one character with the mark, and escaped by character it was left as it
    /// was, ending the quoted name early or the part's head line.
    @Test func aQuoteOrLineBreakThatACombiningMarkFollowsIsEscaped() {
        let quoted = Multipart.quote("re\"\u{301}port\r\u{301}\n\u{301}.csv\"")
        #expect(Array(quoted.unicodeScalars) == Array("re%22\u{301}port%0D\u{301}%0A\u{301}.csv%22".unicodeScalars))
        #expect(!quoted.unicodeScalars.contains { $0 == "\"" || $0 == "\r" || $0 == "\n" })
    }

    /// Empty parts stream as well as others, in memory and from an empty file, beside a file part.
    @Test(arguments: bothEngines)
    func emptyPartsArriveEmpty(engineName: String) async throws {
        let scratch = Scratch()
        let file = scratch.write("some.bin", bytes: 70_000, seed: 47)
        let empty = scratch.file("empty.txt")
        try Data().write(to: empty)
        let response = try await loopbackCenter(engineName).send { request in
            request.kind = .upload
            request.api = "anything"
            request.addFormData(name: "nothing", data: Data(), fileName: "nothing.txt")
            request.addFormData(name: "some", fileURL: file)
            request.addFormData(name: "emptyFile", fileURL: empty)
        }
        let files = try #require(response.json?["files"])
        #expect(files["nothing"]?.string == "", "\(engineName)")
        #expect(files["emptyFile"]?.string == "", "\(engineName)")
        let echo = try #require(files["some"]?.string)
        let prefix = "data:application/octet-stream;base64,"
        #expect(Data(base64Encoded: String(echo.dropFirst(prefix.count))) == (try Data(contentsOf: file)))
    }

    @Test(arguments: bothEngines)
    func aResentBodyIsTheSameBody(engineName: String) async throws {
        let scratch = Scratch()
        let file = scratch.write("again.bin", bytes: 300_000, seed: 43)
        let response = try await loopbackCenter(engineName).send { request in
            request.kind = .upload
            request.url = LoopbackServer.shared.baseURL + "/redirect-to?url=%2Fanything&status_code=307"
            request.addFormData(name: "file", fileURL: file)
        }
        // The 307 sends the same multipart body again, to `/anything`.
        let json = try #require(response.json)
        #expect(json["url"]?.string?.hasSuffix("/anything") == true)
        let echo = try #require(json["files"]?["file"]?.string)
        let prefix = "data:application/octet-stream;base64,"
        #expect(
            Data(base64Encoded: String(echo.dropFirst(prefix.count))) == (try Data(contentsOf: file)),
            "\(engineName): the body after the 307")
    }

    @Test func curlEngineMakesNoCopyWhileTheBodyIsOnItsWay() async throws {
        let scratch = Scratch()
        let file = scratch.write("slow.bin", bytes: 512 << 10, seed: 45)
        let marker = UUID().uuidString
        let center = try loopbackCenter("CurlEngine")
        let upload = Task {
            try await center.send { request in
                request.kind = .upload
                request.api = "sink"
                request.parameters = ["marker": marker]
                request.addFormData(name: "file", fileURL: file)
                request.maxUploadBytesPerSecond = 256 << 10  // two seconds on the way
            }
        }
        try await Task.sleep(for: .milliseconds(500))
        #expect(MultipartCopies.holding(marker).isEmpty, "mid-upload, no copy of the body exists")
        let response = try await upload.value
        #expect(response.json?["length"]?.int.map { $0 > 512 << 10 } == true)
    }

    /// A file part that is missing, or that measures 0 bytes but has some (a file in `/proc`), is refused before
    /// anything is sent, as a raw file body is. The one in `/proc` was sent, and the stream then yielded more than it
    /// announced (`.encoding`).
    @Test(arguments: [
        ("/nonexistent/\(UUID().uuidString)", "does not exist or cannot be read"),
        ("/proc/self/status", "/proc/self/status measures 0 bytes but has more to read"),
    ])
    func aFilePartThatCannotBeSentFailsBeforeAnythingIsSent(path: String, said: String) async throws {
        let stub = StubEngine()
        let center = Center {
            $0.engine = stub; $0.server = "https://api.example.com/"
        }
        let outcome = await center.sendRecording { request in
            request.kind = .upload
            request.api = "upload"
            request.addFormData(name: "file", fileURL: URL(fileURLWithPath: path))
        }
        #expect(outcome.error?.code == .fileSystem)
        #expect(outcome.error?.message.contains(said) == true, "\(String(describing: outcome.error))")
        #expect(outcome.error?.request != nil)
        #expect(stub.requests.isEmpty)
    }

    /// Each file part is held to the length it had when the body was made. Read to their ends, a first file that
    /// grew and a second that shrank by as much made a body of the announced length with every byte after the first
    /// file shifted, which no length check could see.
    @Test func aFilePartThatChangedFailsTheReadNamingTheFile() throws {
        let scratch = Scratch()
        let first = scratch.write("first.bin", bytes: 5000, seed: 45)
        let second = scratch.write("second.bin", bytes: 5000, seed: 46)
        let pieces: [MultipartStream.Piece] = [
            .data(Data("a".utf8)), .file(first, length: 5000), .data(Data("b".utf8)), .file(second, length: 5000),
        ]
        let grown = try FileHandle(forUpdating: first)
        grown.seekToEndOfFile()
        grown.write(Data(repeating: 7, count: 10))
        try grown.close()
        let shrunk = try FileHandle(forUpdating: second)
        try shrunk.truncate(atOffset: 4990)
        try shrunk.close()
        for size in [1, 4096, 1 << 20] {
            let stream = MultipartStream(pieces)
            stream.open()
            var buffer = [UInt8](repeating: 0, count: size)
            var total = 0
            var last = 0
            repeat {
                last = stream.read(&buffer, maxLength: size)
                total += max(last, 0)
            } while last > 0
            #expect(last == -1, "reading \(size) bytes at a time")
            #expect(total <= 1 + 5000, "nothing beyond the first file's length went out")
            let error = stream.streamError as? HTTPError
            #expect(error?.code == .fileSystem)
            #expect(error?.message.contains("\(first.path) changed while it was sent") == true)
            stream.close()
        }
    }

    @Test func theStreamReadsThePiecesInOrderWhateverTheBufferSize() throws {
        let scratch = Scratch()
        let file = scratch.write("middle.bin", bytes: 100_000, seed: 44)
        let pieces: [MultipartStream.Piece] = [
            .data(Data("head-".utf8)), .file(file, length: 100_000), .data(Data(count: 0)),
            .data(Data("-tail".utf8)),
        ]
        let expected = Data("head-".utf8) + (try Data(contentsOf: file)) + Data("-tail".utf8)
        for size in [1, 7, 4096, 1 << 20] {
            let stream = MultipartStream(pieces)
            stream.open()
            var read = Data()
            var buffer = [UInt8](repeating: 0, count: size)
            while true {
                let count = stream.read(&buffer, maxLength: size)
                #expect(count >= 0)
                if count <= 0 { break }
                read.append(contentsOf: buffer[0..<count])
            }
            #expect(stream.streamStatus == .atEnd)
            stream.close()
            #expect(read == expected, "reading \(size) bytes at a time")
        }
    }
}
