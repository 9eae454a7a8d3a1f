import Foundation
import Testing
@testable import Switchboard
import SwitchboardTestSupport

/// A download into a directory takes the name the server gives, but never a file already there: the name gets a
/// number, as browsers do (the existing file was replaced, on both engines). A `.file` destination, named by the
/// caller, is still replaced.
@Suite struct DownloadNameTests {
    static let content = Data("the report\n".utf8)

    static func server(_ disposition: String = "attachment; filename=\"report.txt\"") throws -> LoopbackServer {
        try LoopbackServer { _ in
            ServerResponse(
                headers: [("Content-Type", "text/plain"), ("Content-Disposition", disposition)], body: content)
        }
    }

    /// Downloads `report` on the named engine from a server that names it with `disposition`, into the directory
    /// `downloads` in `scratch` (made first, with `subfolder` in it when given); returns the response and the
    /// directory.
    static func download(
        _ engineName: String, disposition: String, into scratch: Scratch, subfolder: String? = nil
    ) async throws -> (response: Response, directory: URL) {
        let server = try LoopbackServer { _ in
            ServerResponse(headers: [("Content-Disposition", disposition)], body: content)
        }
        defer { server.stop() }
        let directory = scratch.file("downloads")
        try FileManager.default.createDirectory(
            at: subfolder.map(directory.appendingPathComponent) ?? directory, withIntermediateDirectories: true)
        let response = try await loopbackCenter(engineName, server: server).send { request in
            request.kind = .download
            request.api = "report"
            request.destination = .directory(directory)
        }
        return (response, directory)
    }

    /// Downloads `report` into `directory` twice, one after the other; returns where each went.
    static func downloadTwice(_ center: Center, into directory: URL) async throws -> [URL] {
        var files: [URL] = []
        for _ in 0..<2 {
            let response = try await center.send { request in
                request.kind = .download
                request.api = "report"
                request.destination = .directory(directory)
            }
            files.append(try #require(response.fileURL))
        }
        return files
    }

    @Test(arguments: bothEngines)
    func aDownloadIntoADirectoryNeverReplacesAFileThere(engineName: String) async throws {
        let server = try Self.server()
        defer { server.stop() }
        let center = try loopbackCenter(engineName, server: server)
        let scratch = Scratch()
        let directory = scratch.file("downloads")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let mine = Data("mine, not the server's\n".utf8)
        try mine.write(to: directory.appendingPathComponent("report.txt"))
        let files = try await Self.downloadTwice(center, into: directory)
        let names = files.map(\.lastPathComponent)
        for file in files { #expect(try Data(contentsOf: file) == Self.content, "\(engineName)") }
        #expect(names == ["report (1).txt", "report (2).txt"], "\(engineName)")
        #expect(try Data(contentsOf: directory.appendingPathComponent("report.txt")) == mine, "\(engineName)")
        let left = try FileManager.default.contentsOfDirectory(atPath: directory.path).sorted()
        #expect(left == ["report (1).txt", "report (2).txt", "report.txt"], "\(engineName): \(left)")
    }

    /// A hostile name from the server lands inside the directory, on both engines: nothing is written beside it.
    @Test(arguments: bothEngines)
    func aNameThatClimbsOutOfTheDirectoryStaysInside(engineName: String) async throws {
        let server = try LoopbackServer { _ in
            ServerResponse(
                headers: [("Content-Disposition", "attachment; filename=\"../../escaped;1.txt\"")], body: Self.content)
        }
        defer { server.stop() }
        let scratch = Scratch()
        let directory = scratch.file("a/b/downloads")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let response = try await loopbackCenter(engineName, server: server).send { request in
            request.kind = .download
            request.api = "report"
            request.destination = .directory(directory)
        }
        #expect(response.fileURL == directory.appendingPathComponent("escaped;1.txt"), "\(engineName)")
        #expect(try Data(contentsOf: directory.appendingPathComponent("escaped;1.txt")) == Self.content)
        #expect(try FileManager.default.contentsOfDirectory(atPath: scratch.file("a").path) == ["b"])
        #expect(try FileManager.default.contentsOfDirectory(atPath: scratch.file("a/b").path) == ["downloads"])
    }

    /// A slash the server follows with a combining mark (`sub/` then U+0301, percent-encoded in `filename*`) is a
    /// slash on the disk, though with the mark it is one character: the name is cut there too, on both engines. Cut
    /// at slash characters only, the file went into the folder `sub` inside the directory.
    @Test(arguments: bothEngines)
    func aSlashWithACombiningMarkDoesNotLeadIntoAFolder(engineName: String) async throws {
        let scratch = Scratch()
        let (response, directory) = try await Self.download(
            engineName, disposition: "attachment; filename*=UTF-8''sub%2F%CC%81x.txt", into: scratch, subfolder: "sub")
        let file = try #require(response.fileURL, "\(engineName)")
        #expect(file.deletingLastPathComponent().path == directory.path, "\(engineName)")
        #expect(Array(file.lastPathComponent.unicodeScalars) == Array("\u{301}x.txt".unicodeScalars), "\(engineName)")
        #expect(try Data(contentsOf: file) == Self.content, "\(engineName)")
        let inside = try FileManager.default.contentsOfDirectory(atPath: directory.appendingPathComponent("sub").path)
        #expect(inside.isEmpty, "\(engineName): \(inside)")
    }

    /// A combining mark after the closing quote of `filename` joined the two into one character: the name ran on
    /// to the end of the field (`a.txt"` U+0301 `; filename*=…`), and the file was saved under that. The field is
    /// read by scalar; the name is `filename*`'s, on both engines.
    @Test(arguments: bothEngines)
    func aCombiningMarkAfterAClosingQuoteEndsTheName(engineName: String) async throws {
        let scratch = Scratch()
        let (response, directory) = try await Self.download(
            engineName, disposition: "attachment; filename=\"a.txt\"\u{301}; filename*=UTF-8''b.txt", into: scratch)
        #expect(response.fileURL == directory.appendingPathComponent("b.txt"), "\(engineName)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path) == ["b.txt"], "\(engineName)")
    }

    @Test(arguments: bothEngines)
    func aDownloadIntoANamedFileReplacesIt(engineName: String) async throws {
        let server = try Self.server()
        defer { server.stop() }
        let scratch = Scratch()
        let file = scratch.file("named.txt")
        try Data("old\n".utf8).write(to: file)
        let response = try await loopbackCenter(engineName, server: server).send { request in
            request.kind = .download
            request.api = "report"
            request.destination = .file(file)
        }
        #expect(response.fileURL == file)
        #expect(try Data(contentsOf: file) == Self.content, "\(engineName)")
    }

    /// A download into a named file replaces what is there by renaming its own file onto it. A FIFO (or a device, or
    /// a socket) there was replaced by a regular file holding the body; with the rights to do it, `/dev/null` became
    /// one. Such a destination is refused before anything is sent, on both engines. A symbolic link is replaced as a
    /// name: the file it points to is left as it was.
    @Test(arguments: bothEngines)
    func aDownloadNeverReplacesADeviceOrAFIFO(engineName: String) async throws {
        let asked = Locked(0)
        let server = try LoopbackServer { _ in
            asked.withLock { $0 += 1 }
            return ServerResponse(body: Self.content)
        }
        defer { server.stop() }
        let center = try loopbackCenter(engineName, server: server)
        let scratch = Scratch()
        let fifo = scratch.file("pipe")
        #expect(mkfifo(fifo.path, 0o600) == 0)
        let outcome = await center.sendRecording { request in
            request.kind = .download
            request.api = "report"
            request.destination = .file(fifo)
        }
        #expect(outcome.error?.code == .fileSystem, "\(engineName): \(String(describing: outcome.error))")
        #expect(outcome.error?.message.contains("not a regular file") == true, "\(engineName)")
        var status = stat()
        #expect(lstat(fifo.path, &status) == 0 && status.st_mode & S_IFMT == S_IFIFO, "\(engineName): still a FIFO")
        #expect(asked.withLock { $0 } == 0, "\(engineName): nothing was sent")
        #expect(try FileManager.default.contentsOfDirectory(atPath: scratch.url.path) == ["pipe"], "\(engineName)")

        let elsewhere = scratch.file("elsewhere.txt")
        try Data("left alone\n".utf8).write(to: elsewhere)
        let link = scratch.file("link.txt")
        try FileManager.default.createSymbolicLink(at: link, withDestinationURL: elsewhere)
        let response = try await center.send { request in
            request.kind = .download
            request.api = "report"
            request.destination = .file(link)
        }
        #expect(response.fileURL == link)
        #expect(try Data(contentsOf: link) == Self.content, "\(engineName)")
        #expect(try Data(contentsOf: elsewhere) == Data("left alone\n".utf8), "\(engineName)")
    }

    /// Names a server gives in `Content-Disposition` stay inside the download directory whatever they hold, and a
    /// quoted name keeps its `;` (it was cut there, leaving a stray quote in the name).
    @Test(
        arguments: [
            ("attachment; filename=\"report.pdf\"", "report.pdf"),
            ("attachment; filename=report.pdf", "report.pdf"),
            ("attachment; filename=\"Q1; final.pdf\"", "Q1; final.pdf"),
            ("attachment; filename=\"say \\\"hi\\\".txt\"; size=3", "say \"hi\".txt"),
            ("attachment; filename=\"../../etc/passwd\"", "passwd"),
            ("attachment; filename=\"/etc/passwd\"", "passwd"),
            ("attachment; filename=\"..\\\\..\\\\win.ini\"", "win.ini"),
            ("attachment; filename=\"a\\..\\b.txt\"", "b.txt"),
            ("attachment; filename*=UTF-8''..%2F..%2Fevil.sh", "evil.sh"),
            ("attachment; filename=\"..\"", nil),
            ("attachment; filename=\".bashrc\"", "bashrc"),
            ("attachment; filename=\"a\u{7}b\u{1B}c.txt\"", "abc.txt"),
            ("attachment; filename*=UTF-8''%00%2E%2E", nil),
            // A slash or backslash followed by a combining mark or a joiner is still cut at.
            ("attachment; filename=\"sub/\u{301}x.txt\"", "\u{301}x.txt"),
            ("attachment; filename*=UTF-8''..%2F%CC%81..%2F%E2%80%8Dx", "\u{200D}x"),
            ("attachment; filename=\"a\\\u{301}b\"", "\u{301}b"),
            // A quote, `;` or `=` followed by a combining mark still ends the value, separates, or names.
            ("attachment; filename=\"a.txt\"\u{301}; filename*=UTF-8''b.txt", "b.txt"),
            ("attachment; filename=\"a.txt\"\u{301}", "a.txt"),
            ("attachment; filename=a.txt;\u{301} size=3", "a.txt"),
            ("attachment; filename=\u{301}a.txt", "\u{301}a.txt"),
            ("attachment; filename*=UTF-8'\u{301}'b.txt", "b.txt"),
            ("attachment; filename=\"plain.txt\"; filename*=UTF-8''%E4%B8%AD%E6%96%87.txt", "中文.txt"),
            ("attachment; filename*=iso-8859-1'en'%A3%20rates.txt", "£ rates.txt"),
            ("attachment; filename*=UTF-8''%ZZ; filename=\"fallback.txt\"", "fallback.txt"),
            ("attachment", nil),
            ("attachment; filename", nil),
            ("inline; name=\"x\"", nil),
        ] as [(String, String?)])
    func aServersFileNameIsReadAndKeptInsideTheDirectory(field: String, name: String?) {
        #expect(DownloadPlan.fileName(contentDisposition: field) == name, "\(field)")
    }

    /// A name longer than a file name may be (255 bytes) is cut before its extension, by whole characters; a number
    /// for a name taken cuts the name further. Cut at its end, the name lost its extension, and a second download of
    /// it was numbered past the limit: the system refused the name after the whole transfer, and the download was lost.
    @Test(arguments: bothEngines)
    func aLongNameKeepsItsExtensionAndASecondCopyGetsANumber(engineName: String) async throws {
        let scratch = Scratch()
        for (index, stem) in [String(repeating: "a", count: 300), String(repeating: "中", count: 100)].enumerated() {
            let server = try Self.server("attachment; filename=\"\(stem).pdf\"")
            defer { server.stop() }
            let center = try loopbackCenter(engineName, server: server)
            let directory = scratch.file("downloads-\(index)")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            let files = try await Self.downloadTwice(center, into: directory)
            let names = files.map(\.lastPathComponent)
            #expect(names.count == 2 && Set(names).count == 2, "\(names)")
            #expect(names.allSatisfy { $0.utf8.count <= 255 && $0.hasSuffix(".pdf") }, "\(names.map(\.utf8.count))")
            #expect(names.last?.hasSuffix(" (1).pdf") == true)
            #expect(names.allSatisfy { $0.hasPrefix(String(stem.prefix(50))) })
            for url in files { #expect(try Data(contentsOf: url) == Self.content) }
        }
    }

    @Test func aLongNameIsCutBeforeItsExtensionByWholeCharacters() throws {
        let family = "\u{1F468}\u{200D}\u{1F469}\u{200D}\u{1F467}"  // one character of 18 bytes
        for stem in [String(repeating: "a", count: 400), String(repeating: family, count: 20)] {
            let name = try #require(DownloadPlan.sanitize(stem + ".tar.gz"))
            #expect(name.utf8.count <= 255)
            #expect(name.hasSuffix(".gz"))
            #expect(stem.hasPrefix(String(name.dropLast(3))), "whole characters of the name, in order")
            let numbered = DownloadPlan.numbered(name, 9999)
            #expect(numbered.utf8.count <= 255 && numbered.hasSuffix(" (9999).gz"))
        }
        // An "extension" longer than an extension is just more name, cut like the rest.
        let long = try #require(DownloadPlan.sanitize("x." + String(repeating: "y", count: 300)))
        #expect(long.utf8.count == 255)
        #expect(DownloadPlan.sanitize("short.txt") == "short.txt")
    }

    @Test func aNumberGoesBeforeTheLastExtension() {
        #expect(DownloadPlan.numbered("photo.jpg", 1) == "photo (1).jpg")
        #expect(DownloadPlan.numbered("notes", 2) == "notes (2)")
        #expect(DownloadPlan.numbered("archive.tar.gz", 3) == "archive.tar (3).gz")
        #expect(DownloadPlan.numbered(".hidden", 1) == ".hidden (1)")
    }
}
