import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Where a download's bytes go while it runs, how it resumes, and how the finished file gets into place.
///
/// The body is written to a partial file beside the destination (so the final move is a rename on one file
/// system). A resumable download keeps the partial file and a small JSON record of what it was (URL, `ETag`,
/// `Last-Modified`, length) when it fails or is cancelled, and continues from it with `Range` and `If-Range`. Only
/// a complete file, of the announced length and the given checksum, is renamed to the destination.
struct DownloadPlan: Sendable {
    /// What a resumable download remembers beside its partial file.
    struct Record: Codable, Equatable {
        var url: String
        var etag: String?
        var lastModified: String?
        var total: Int64?
    }

    let request: Request
    let url: URL
    let partial: URL
    let recordURL: URL?
    let offset: Int64
    let validator: String?
    let knownTotal: Int64?

    static let partialSuffix = ".switchboard-partial"
    static let recordSuffix = ".switchboard-resume"

    /// Checks the destination and works out where to write and where to resume from.
    ///
    /// - Throws: `.fileSystem` when the destination is missing, not writable, or of the wrong kind.
    init(_ request: Request, url: URL) throws(HTTPError) {
        self.request = request
        self.url = url
        let files = FileManager.default
        guard let destination = request.destination else {
            throw HTTPError(.fileSystem, "a download needs `request.destination`", request: request)
        }
        var isDirectory: ObjCBool = false
        let base: URL
        switch destination {
        case .file(let file):
            if files.fileExists(atPath: file.path, isDirectory: &isDirectory), isDirectory.boolValue {
                throw HTTPError(
                    .fileSystem,
                    "the destination \(file.path) is a directory; use .directory(_:) to "
                        + "save into it", request: request)
            }
            // A finished download replaces what is at its destination, by renaming its file onto it: a device, a FIFO
            // or a socket would be replaced, not written to (with the rights to do it, `/dev/null` became a regular
            // file holding the body). A symbolic link is replaced as a name, and what it points to is left alone.
            var status = stat()
            if lstat(file.path, &status) == 0, status.st_mode & S_IFMT != S_IFREG, status.st_mode & S_IFMT != S_IFLNK {
                throw HTTPError(
                    .fileSystem,
                    "the destination \(file.path) is not a regular file (a device, a FIFO or a socket): a download "
                        + "replaces the file at its destination; nothing was sent", request: request)
            }
            try DownloadPlan.checkWritableDirectory(file.deletingLastPathComponent(), request)
            base = file
        case .directory(let directory):
            try DownloadPlan.checkWritableDirectory(directory, request)
            // The name is known only from the response; a URL-keyed name lets a new process find the partial file.
            base = directory.appendingPathComponent(
                ".switchboard-" + String(SHA256Hasher.hex(Data(url.absoluteString.utf8)).prefix(24)))
        }
        if case .sha256(let expected) = request.checksum,
            expected.utf8.count != 64 || !expected.unicodeScalars.allSatisfy(\.properties.isASCIIHexDigit)
        {
            // Checked before anything is sent: found only at the end, it cost the whole download, and a resumable
            // one lost its partial file with it.
            throw HTTPError(
                .encoding,
                "the checksum \(String(reflecting: expected)) is not a SHA-256 (64 hex digits); nothing was sent",
                request: request)
        }
        if let asked = request.headers["Range"] {
            // A download into a file takes one range from a known byte, written from the file's start; a resumable
            // one asks for the rest of its file itself.
            guard ContentRange.askedStart(asked) != nil, !request.resumable else {
                throw HTTPError(
                    .encoding,
                    request.resumable
                        ? "a resumable download asks for ranges itself; it cannot carry a `Range` of its own"
                        : "a download into a file takes one range from a known byte (`bytes=START-END` or "
                            + "`bytes=START-`), not \"\(asked)\"", request: request)
            }
        }
        if request.resumable {
            partial = URL(fileURLWithPath: base.path + DownloadPlan.partialSuffix)
            recordURL = URL(fileURLWithPath: base.path + DownloadPlan.recordSuffix)
            // Its name is known in advance, so a link put there (into a shared directory such as /tmp) would have the
            // body written through it, into whatever file it points to. Switchboard never makes one. Refused here,
            // before anything is sent; one made later is refused when the engine opens the file (`apply`).
            var status = stat()
            if lstat(partial.path, &status) == 0, status.st_mode & S_IFMT == S_IFLNK {
                throw HTTPError(
                    .fileSystem,
                    "the partial file \(partial.path) is a symbolic link, which a download never makes: it would "
                        + "write through it; nothing was sent", request: request)
            }
            // The last check: from here on the plan is made, and the attempt that made it releases the claim.
            try DownloadPlan.claim(partial, for: request)
        } else {
            // Named for this download alone. The request's number only is not enough: every process numbers its
            // requests from 1, so two processes downloading to one destination wrote into one file, each cutting it
            // back under the other, and the one that finished renamed the mixture into place.
            let unique = String(UInt64.random(in: .min ... .max), radix: 36)
            partial = URL(
                fileURLWithPath: base.path + ".\(request.id.rawValue)-\(unique)" + DownloadPlan.partialSuffix)
            recordURL = nil
        }
        var offset: Int64 = 0
        var validator: String?
        var knownTotal: Int64?
        if let recordURL {
            let record = (try? Data(contentsOf: recordURL)).flatMap { try? JSONDecoder().decode(Record.self, from: $0) }
            let size = FileSink.size(of: partial)
            if let record, record.url == url.absoluteString, let size, size > 0 {
                offset = size
                validator = record.etag.flatMap { $0.hasPrefix("W/") ? nil : $0 } ?? record.lastModified
                knownTotal = record.total
            } else {
                DownloadPlan.remove(partial)
                DownloadPlan.remove(recordURL)
            }
        }
        self.offset = offset
        self.validator = validator
        self.knownTotal = knownTotal
    }

    /// Points the engine at the partial file, asks for the rest when resuming, and records the response head when the
    /// file is opened for it.
    func apply(to engineRequest: inout EngineRequest) {
        engineRequest.destination = .file(partial, offset: offset)
        engineRequest.destinationIsPartialFile = true
        if request.headers["Accept-Encoding"] == nil {
            // Byte ranges and lengths must refer to the bytes on disk, not to a compressed stream.
            engineRequest.headers["Accept-Encoding"] = "identity"
        }
        if offset > 0 {
            engineRequest.headers["Range"] = "bytes=\(offset)-"
            if let validator { engineRequest.headers["If-Range"] = validator }
        }
        guard let recordURL else { return }
        let url = url.absoluteString
        // When the engine opens the partial file for a head (`fileSink(for:)`), before the body: a transfer cut off
        // later still leaves what resuming needs. A head whose body the file refuses (a `206` from the wrong
        // offset) records nothing.
        engineRequest.onFileOpened = { status, field in
            let record = Record(
                url: url, etag: field("ETag"), lastModified: field("Last-Modified"),
                total: DownloadPlan.total(status: status, header: field))
            // The user's alone: its URL may carry credentials in its query (a signed URL).
            if let data = try? JSONEncoder().encode(record) { PrivateFile.replace(recordURL, with: data) }
        }
    }

    /// Whether a `416` means the partial file is already the whole file.
    func isComplete(after response: Response) -> Bool {
        guard offset > 0, response.status == 416 else { return false }
        let total = ContentRange(response.headers["Content-Range"])?.total ?? knownTotal
        return total == offset
    }

    /// Verifies the partial file and renames it to its destination; returns the final URL.
    ///
    /// The file work (the checksum, flushing the file to disk, the rename) runs on a thread of its own
    /// (`BlockingWork`), not in the calling task nor on a dispatch queue: a gigabyte's checksum takes seconds, and a
    /// thread of the shared pool would wait that long.
    ///
    /// `commit` is asked just before the rename whether the file may take its name: `false` (the request was
    /// cancelled) leaves it as an interrupted download is left.
    ///
    /// - Throws: `.fileSystem` when the file is shorter or longer than announced or fails its checksum; a resumable
    ///   download keeps a short file to continue from, and drops a corrupt one. `.cancelled` when `commit` refused.
    func complete(_ response: Response, commit: @escaping @Sendable () -> Bool) async throws(HTTPError) -> URL {
        let plan = self
        let result = await BlockingWork.run {
            Result { () throws(HTTPError) in try plan.completeNow(response, commit: commit) }
        }
        return try result.get()
    }

    private func completeNow(_ response: Response, commit: () -> Bool) throws(HTTPError) -> URL {
        let length = FileSink.size(of: partial) ?? 0
        let range = response.status == 206 ? ContentRange(response.headers["Content-Range"]) : nil
        if let range, let mismatch = range.bodyMismatch(received: length - offset) {
            // A body shorter than its range is kept to resume from; a longer one is dropped (see `cut`).
            if !request.resumable {
                discard()
            } else if length - offset > range.count ?? 0 {
                FileSink.cut(partial, to: offset)
            }
            throw HTTPError(.transport, mismatch, request: request, response: response)
        }
        if offset > 0, let before = knownTotal, let now = range?.total, now != before {
            // The rest of another version of the file (one without a validator for `If-Range`, which would have
            // brought the new version whole): the bytes kept and those appended do not make one file.
            discard()
            throw HTTPError(
                .transport,
                "the file changed while its download was interrupted (it had \(before) bytes, now \(now)): the "
                    + "partial file was dropped, and the next attempt starts from the beginning", request: request,
                response: response)
        }
        // The part of the file a caller's own `Range` asked for is checked against its range (above), not the whole.
        let part = response.status == 206 && offset == 0 && request.headers["Range"] != nil
        let total = part ? nil : DownloadPlan.total(of: response) ?? (response.status == 416 ? offset : nil)
        if let total, total != length {
            if length > total || !request.resumable { discard() }
            throw HTTPError(
                .fileSystem, "the download has \(length) of \(total) bytes", request: request,
                response: response)
        }
        if case .sha256(let expected) = request.checksum {
            let actual = try DownloadPlan.sha256(of: partial, request: request)
            guard actual == expected.lowercased() else {
                discard()
                throw HTTPError(
                    .fileSystem, "the download's SHA-256 is \(actual), not \(expected.lowercased())",
                    request: request, response: response)
            }
        }
        let final = try finalURL(for: response)
        // On disk before it gets its final name, so that a crash never leaves a short file under that name.
        if let handle = try? FileHandle(forWritingTo: partial) {
            try? handle.synchronize()
            try? handle.close()
        }
        guard commit() else {
            interrupted()
            throw HTTPError(.cancelled, "the request was cancelled", request: request)
        }
        let named: URL
        do {
            named = try place(at: final)
        } catch {
            discard()
            throw HTTPError(.fileSystem, "cannot move the download to \(final.path): \(error.reason)", request: request)
        }
        if let recordURL { DownloadPlan.remove(recordURL) }
        return named
    }

    /// Cleans up after a failure: a resumable download keeps its partial file (and record), another drops it.
    func interrupted() {
        if !request.resumable { discard() }
    }

    /// Resumable downloads running in this process, by partial file: the request that holds each, and the descriptor
    /// of its lock file, which tells other processes (see `lockAcrossProcesses`).
    ///
    /// A resumable download's partial file is named after its destination (or, into a directory, its URL), so that a
    /// later download finds it; two at once would share it. Each wrote into it as if it were its own: a second
    /// download of another URL to the same file removed the first's partial file, and the first then failed with
    /// "the download has 1062912 of 4000000 bytes" (or, finishing just after the second had written all of its own,
    /// took the second's file as its own); two of one URL whose content changed between them wrote both versions into
    /// one file. The second is now refused before anything is sent, in this process or in another.
    private static let claims = Locked<[String: (id: RequestID, lock: Int32?)]>([:])

    /// The file beside a resumable download's partial file that it holds locked while it runs.
    static let lockSuffix = ".switchboard-lock"

    /// Takes `partial` for `request` (again, for its next attempt), or refuses when another request holds it, in this
    /// process or in another.
    private static func claim(_ partial: URL, for request: Request) throws(HTTPError) {
        let id = request.id
        let key = claimKey(partial)
        // Another request's claim, or whether this request's own (taken again, for its next attempt) holds the lock.
        let (holder, locked) = claims.withLock { claims -> (RequestID?, Bool) in
            if let held = claims[key] { return held.id == id ? (nil, held.lock != nil) : (held.id, false) }
            claims[key] = (id, nil)
            return (nil, false)
        }
        let into =
            switch request.destination {
            case .directory(let directory): "\(directory.path) of the same URL"
            case .file(let file): file.path
            case nil: partial.path
            }
        if let holder {
            throw HTTPError(
                .fileSystem,
                "another resumable download into \(into) is running (request \(holder.rawValue)): it keeps its "
                    + "partial file beside the destination, which two downloads cannot share; nothing was sent",
                request: request)
        }
        guard !locked else { return }
        let lockPath = lockPath(forClaim: key)
        switch lockAcrossProcesses(lockPath) {
        case .taken(let descriptor):
            claims.withLock { claims in claims[key]?.lock = descriptor }
        case .heldElsewhere:
            claims.withLock { claims in claims[key] = nil }
            throw HTTPError(
                .fileSystem,
                "another process is downloading into \(into) (it holds \(lockPath) locked): a resumable download "
                    + "keeps its partial file beside the destination, which two downloads cannot share; nothing was "
                    + "sent", request: request)
        case .unsupported:
            // A file system without locks (some network ones): the claim holds within this process.
            break
        case .failed(let reason):
            claims.withLock { claims in claims[key] = nil }
            throw HTTPError(
                .fileSystem, "the lock file \(lockPath) cannot be opened (\(reason)); nothing was sent",
                request: request)
        }
    }

    /// How taking a lock file went.
    enum ProcessLock: Equatable {
        /// Taken: the open descriptor holds it until it is closed.
        case taken(Int32)
        /// Another open of the file (another process's, or another download's in this one) holds it.
        case heldElsewhere
        /// The file system does not lock files.
        case unsupported
        /// The file could not be opened; `strerror`'s words.
        case failed(String)
    }

    /// Opens (creating it) and locks `path` without waiting, with `flock`, which other processes see (and other opens
    /// of the file in this one).
    ///
    /// The holder removes the file before it lets go of it, so that nothing is left behind; an open that came just
    /// before the removal then locks a file no longer at the path. So the lock counts only when the path still names
    /// the file that was locked; otherwise it is taken again, on the file now there. A file left by a process that
    /// was killed is locked by nobody, and is taken.
    static func lockAcrossProcesses(_ path: String) -> ProcessLock {
        for _ in 0..<8 {
            // Read-only is enough to lock; a symbolic link in its place is not followed (it fails, and the download
            // with it, rather than create or lock a file elsewhere).
            let descriptor = open(path, O_RDONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0o644)
            guard descriptor >= 0 else { return .failed(String(cString: strerror(errno))) }
            if flock(descriptor, LOCK_EX | LOCK_NB) != 0 {
                let error = errno
                close(descriptor)
                switch error {
                case EWOULDBLOCK: return .heldElsewhere
                case EINTR: continue
                default: return .unsupported
                }
            }
            var locked = stat()
            var named = stat()
            if fstat(descriptor, &locked) == 0, stat(path, &named) == 0, locked.st_dev == named.st_dev,
                locked.st_ino == named.st_ino
            {
                return .taken(descriptor)
            }
            close(descriptor)
        }
        // The file was replaced under every attempt: others are taking and releasing it as fast as that.
        return .heldElsewhere
    }

    /// Lets go of a lock `lockAcrossProcesses` took: the file is removed first, while it is still held (see there).
    static func unlockAcrossProcesses(_ path: String, descriptor: Int32) {
        unlink(path)
        close(descriptor)
    }

    /// Gives up the partial file's claim, when this plan's request holds it: called when the attempt that made the
    /// plan ends, whatever its outcome.
    func release() {
        guard request.resumable else { return }
        let id = request.id
        let key = DownloadPlan.claimKey(partial)
        let lock = DownloadPlan.claims.withLock { claims -> Int32? in
            guard let held = claims[key], held.id == id else { return nil }
            claims[key] = nil
            return held.lock
        }
        if let lock { DownloadPlan.unlockAcrossProcesses(DownloadPlan.lockPath(forClaim: key), descriptor: lock) }
    }

    /// The lock file of the partial file a claim is keyed by.
    private static func lockPath(forClaim key: String) -> String {
        String(key.dropLast(partialSuffix.count)) + lockSuffix
    }

    /// The partial file's path as claims know it: `.` and `..` resolved, so that two spellings of one destination
    /// (`downloads/../downloads/a.bin`) are one claim.
    private static func claimKey(_ partial: URL) -> String {
        partial.standardizedFileURL.path
    }

    /// Deletes the partial file and its record.
    func discard() {
        DownloadPlan.remove(partial)
        if let recordURL { DownloadPlan.remove(recordURL) }
    }

    // MARK: - Names

    /// Why the download could not be given its name (`strerror`'s words).
    struct PlacingError: Error {
        let reason: String
    }

    /// Gives the partial file its name: `final` itself for a `.file` destination, which it replaces (the caller named
    /// it); for a `.directory` one, whose name the server chose, never a file already there: `name (1).ext`,
    /// `name (2).ext` and on, as browsers do. A hard link claims a name only while it is free; where the file system
    /// has none, the name is checked and then taken.
    private func place(at final: URL) throws(PlacingError) -> URL {
        guard case .directory = request.destination else { return try move(to: final) }
        let directory = final.deletingLastPathComponent()
        let name = final.lastPathComponent
        for number in 0..<10_000 {
            let candidate = number == 0 ? final : directory.appendingPathComponent(Self.numbered(name, number))
            if link(partial.path, candidate.path) == 0 {
                unlink(partial.path)
                return candidate
            }
            if errno == EEXIST { continue }
            if FileManager.default.fileExists(atPath: candidate.path) { continue }
            return try move(to: candidate)
        }
        throw PlacingError(reason: "10,000 files of that name are there already")
    }

    /// Renames the partial file to `target` (replacing a file there), or says why the system refused.
    private func move(to target: URL) throws(PlacingError) -> URL {
        guard rename(partial.path, target.path) == 0 else {
            throw PlacingError(reason: String(cString: strerror(errno)))
        }
        return target
    }

    /// `name (number).ext`: the number goes before the last extension (`photo (1).jpg`, `notes (1)`).
    ///
    /// The name part is cut (by whole characters) as far as the number needs to keep the whole within `nameLimit`
    /// bytes: a name of the limit's length numbered past it, so the system refused the rename after the whole
    /// transfer, and the download was lost.
    static func numbered(_ name: String, _ number: Int) -> String {
        let (stem, ext) = stemAndExtension(name)
        return fitting(stem, " (\(number))" + ext)
    }

    /// The most bytes a file name may hold (`NAME_MAX` on Linux and Apple platforms).
    static let nameLimit = 255

    /// The longest extension kept whole when a long name is cut: a longer "extension" is just more name.
    private static let extensionLimit = 32

    /// A name's part before its last extension, and the extension with its dot (empty when it has none, or when the
    /// only dot starts the name, or the extension is longer than `extensionLimit` bytes).
    private static func stemAndExtension(_ name: String) -> (stem: Substring, ext: String) {
        guard let dot = name.lastIndex(of: "."), dot != name.startIndex,
            name.utf8.distance(from: dot, to: name.endIndex) <= extensionLimit
        else { return (name[...], "") }
        return (name[..<dot], String(name[dot...]))
    }

    /// `stem`, cut after the last whole character that lets `stem` and `tail` together fit in `nameLimit` bytes,
    /// then `tail`.
    private static func fitting(_ stem: Substring, _ tail: String) -> String {
        let room = nameLimit - tail.utf8.count
        var used = 0
        var end = stem.startIndex
        for character in stem {
            used += character.utf8.count
            if used > room { break }
            end = stem.index(after: end)
        }
        return stem[..<end] + tail
    }

    private func finalURL(for response: Response) throws(HTTPError) -> URL {
        switch request.destination {
        case .file(let file):
            return file
        case .directory(let directory):
            let name =
                DownloadPlan.fileName(contentDisposition: response.headers["Content-Disposition"])
                ?? DownloadPlan.sanitize(url.lastPathComponent)
                ?? "download"
            return directory.appendingPathComponent(name)
        case nil:
            throw HTTPError(.fileSystem, "a download needs `request.destination`", request: request)
        }
    }

    /// The file name a `Content-Disposition` header gives (`filename*` first), cleaned; `nil` when none is usable.
    ///
    /// Parameters are read as RFC 6266 writes them: a quoted value keeps its `;` and `\"`; `filename*` (RFC 8187) is
    /// `charset'language'percent-encoded`, in ISO-8859-1 when it says so, else UTF-8.
    static func fileName(contentDisposition header: String?) -> String? {
        guard let header else { return nil }
        var plain: String?
        var extended: String?
        for (name, value) in dispositionParameters(header) {
            switch name {
            case "filename*":
                let parts = value.unicodeScalars.split(separator: "'", maxSplits: 2, omittingEmptySubsequences: false)
                    .map { Substring($0) }
                guard parts.count == 3 else { continue }
                // UTF-8 unless it says ISO-8859-1 (the two RFC 8187 names; others are read as UTF-8, as before).
                extended =
                    parts[0].lowercased() == "iso-8859-1"
                    ? latin1PercentDecoded(parts[2]) : String(parts[2]).removingPercentEncoding
            case "filename":
                plain = value
            default:
                continue
            }
        }
        return extended.flatMap(sanitize) ?? plain.flatMap(sanitize)
    }

    /// The `name=value` parameters after a `Content-Disposition` field's type, names in lower case; a quoted value
    /// unquoted, so that a `;` inside quotes stays in the value.
    ///
    /// Read by scalar: a combining mark after `;`, `=`, `"` or `\\` joins it into one `Character`, which hid the
    /// separator (the parameters after it were lost, or a quoted value ran on past its closing quote).
    static func dispositionParameters(_ header: String) -> [(String, String)] {
        var parameters: [(String, String)] = []
        var rest = Substring(header).unicodeScalars
        func text(_ scalars: Substring.UnicodeScalarView) -> String {
            String(Substring(scalars)).trimmingCharacters(in: .whitespaces)
        }
        // The disposition type, up to the first `;` (it is a token: no quotes).
        guard let first = rest.firstIndex(of: ";") else { return [] }
        rest = rest[rest.index(after: first)...]
        while !rest.isEmpty {
            rest = rest.drop { $0 == " " || $0 == "\t" || $0 == ";" }
            guard let equals = rest.firstIndex(where: { $0 == "=" || $0 == ";" }), rest[equals] == "=" else {
                // A parameter without a value: skipped, up to the next `;`.
                rest = rest.drop { $0 != ";" }
                continue
            }
            let name = text(rest[..<equals]).lowercased()
            rest = rest[rest.index(after: equals)...].drop { $0 == " " || $0 == "\t" }
            var value = String.UnicodeScalarView()
            if rest.first == "\"" {
                rest = rest.dropFirst()
                // `\"` is a quote inside the value; any other backslash stays as it came (RFC 6266 Appendix D: user
                // agents do not unescape it, and it reads as a path separator, which `sanitize` cuts at).
                while let scalar = rest.first {
                    rest = rest.dropFirst()
                    if scalar == "\\", rest.first == "\"" {
                        value.append("\"")
                        rest = rest.dropFirst()
                    } else if scalar == "\"" {
                        break
                    } else {
                        value.append(scalar)
                    }
                }
                rest = rest.drop { $0 != ";" }
                parameters.append((name, String(value)))
            } else {
                let end = rest.firstIndex(of: ";") ?? rest.endIndex
                parameters.append((name, text(rest[..<end])))
                rest = rest[end...]
            }
        }
        return parameters
    }

    /// `%XX` escapes read as ISO-8859-1 bytes (each byte is the Unicode scalar of its value); `nil` for a bad escape.
    private static func latin1PercentDecoded(_ text: Substring) -> String? {
        var scalars = String.UnicodeScalarView()
        var bytes = text.utf8.makeIterator()
        while let byte = bytes.next() {
            guard byte == UInt8(ascii: "%") else {
                scalars.append(Unicode.Scalar(byte))
                continue
            }
            guard let high = bytes.next()?.hexDigitValue, let low = bytes.next()?.hexDigitValue
            else { return nil }
            scalars.append(Unicode.Scalar(high << 4 | low))
        }
        return String(scalars)
    }

    /// A name that stays inside its directory: the last path component (either slash), without control characters,
    /// not `.` or `..`, not hidden, and at most `nameLimit` bytes, a longer one cut before its extension (cut at its
    /// end, `report….pdf` lost its `.pdf`); `nil` when nothing usable is left.
    ///
    /// The name is cut at every slash scalar. Cut at slash characters, a slash followed by a combining mark or a
    /// joiner (`sub/` then U+0301) was one character, not a slash, and stayed in the name: the file went into a
    /// folder inside the directory.
    static func sanitize(_ name: String) -> String? {
        let last = name.unicodeScalars.split(whereSeparator: { $0 == "/" || $0 == "\\" }).last ?? []
        var cleaned = String(
            String.UnicodeScalarView(
                last.filter {
                    $0.value >= 0x20 && $0.value != 0x7F && !CharacterSet.illegalCharacters.contains($0)
                }))
        cleaned = cleaned.trimmingCharacters(in: CharacterSet.whitespaces.union(CharacterSet(charactersIn: ".")))
        guard !cleaned.isEmpty else { return nil }
        guard cleaned.utf8.count > nameLimit else { return cleaned }
        let (stem, ext) = stemAndExtension(cleaned)
        return fitting(stem, ext)
    }

    // MARK: - Files

    /// The length of the whole file a response speaks of: `Content-Range`'s total for a `206` or `416`, else an
    /// uncompressed `Content-Length`.
    static func total(status: Int, header: (String) -> String?) -> Int64? {
        if status == 206 || status == 416 { return ContentRange(header("Content-Range"))?.total }
        guard header("Content-Encoding") == nil else { return nil }
        return header("Content-Length").flatMap(HTTPHeaders.contentLength)
    }

    static func total(of response: Response) -> Int64? {
        total(status: response.status) { response.headers[$0] }
    }

    static func remove(_ url: URL) {
        try? FileManager.default.removeItem(at: url)
    }

    private static func checkWritableDirectory(_ directory: URL, _ request: Request) throws(HTTPError) {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: directory.path, isDirectory: &isDirectory) else {
            throw HTTPError(.fileSystem, "the directory \(directory.path) does not exist", request: request)
        }
        guard isDirectory.boolValue else {
            throw HTTPError(.fileSystem, "\(directory.path) is not a directory", request: request)
        }
        guard FileManager.default.isWritableFile(atPath: directory.path) else {
            throw HTTPError(.fileSystem, "the directory \(directory.path) is not writable", request: request)
        }
    }

    static func sha256(of url: URL, request: Request) throws(HTTPError) -> String {
        do {
            return try SHA256Hasher.hex(ofFile: url)
        } catch {
            throw HTTPError(
                .fileSystem, "cannot read \(url.path) to check it: \(error)", request: request,
                underlying: error)
        }
    }
}
