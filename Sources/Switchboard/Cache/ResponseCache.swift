import Foundation

/// Responses kept in memory and, optionally, on disk, each store bounded in bytes (the least recently used go
/// first). URLSession stores nothing on Linux, so Switchboard keeps its own cache, the same on every platform.
///
/// It is a private HTTP cache by RFC 9111: a response marked `no-store` (or asked for with `no-store`) is never
/// kept, nor one with `Vary: *`; a response that varies is kept per value of the request headers it names; a
/// successful `POST`, `PUT`, `PATCH` or `DELETE` forgets what is stored for its URL and for its `Location` and
/// `Content-Location` (on the same origin); a `304` refreshes the stored header fields. How a request uses it is its
/// `CachePolicy` (`.http` follows the response's freshness).
///
/// On disk each response is one file, written to a temporary name and then renamed, so that a crash leaves either
/// the old entry or the new one, never half of one; files that do not read whole, or whose body does not match the
/// digest written with it, are dropped. Nothing secret is written in clear: in keys, the values of query items with a
/// secret name, a URL's user info, the values a response varies on and the request's credential are digested, and a
/// response's `Set-Cookie` fields are not kept.
///
/// A response to a request that carried a credential (`Authorization`, `Cookie`, `Proxy-Authorization` or a field
/// with a secret name) is kept under a digest of it: a request with another credential, or none, does not see it
/// (`Request.cachesAcrossCredentials` opts out, for data every user shares).
///
/// Entries are scoped by a `version` (an app update invalidates) and a `userKey` (a logout or another user
/// invalidates): an entry stored under another scope is a miss.
///
/// ```swift
/// let cache = ResponseCache(directory: cachesURL.appendingPathComponent("api"), diskCapacity: 50 << 20)
/// cache.version = appVersion
/// center.setup { $0.cache = cache }
/// cache.userKey = user.id                  // on login; a different user never sees the previous one's responses
/// cache.invalidate(prefix: "GET https://api.example.com/v1/users")
/// ```
public final class ResponseCache: Sendable {
    /// A cached response.
    struct Entry: Codable, Sendable {
        /// The request's key (`key(method:url:body:)`), then, for a response that varies, a line per varied header.
        var key: String
        var scope: String
        var status: Int
        var headers: [String: String]
        /// When the response arrived (RFC 9111's response_time).
        var storedAt: Date
        var body: Data
        /// When the request that brought it was sent (request_time); `storedAt` for entries written before it was
        /// kept.
        var requestedAt: Date?
        /// The request header names the response varies on, lower-cased and sorted.
        var vary: [String]?
        /// The body's length, written in the file's header so that a file cut short never reads as an entry.
        var bodyLength: Int?
        /// The body's SHA-256, written in the file's header so that a damaged body never reads as an entry.
        var bodyDigest: String?

        var etag: String? { headers.first { $0.key.lowercased() == "etag" }?.value }
        var lastModified: String? { headers.first { $0.key.lowercased() == "last-modified" }?.value }
    }

    private struct Stored {
        var entry: Entry
        var lastUse: UInt64
    }

    private struct DiskRecord {
        var key: String
        var size: Int
        var lastUse: UInt64
        /// Which write put the file there (the clock when it was stored; 0 for files found at start-up): a lookup
        /// that read the file outside the lock keeps what it read only when the record is still the same one.
        var written: UInt64 = 0
    }

    private struct State {
        var version = ""
        var userKey = ""
        /// For each request key, the header names its latest stored response varies on.
        var vary: [String: [String]] = [:]
        var memory: [String: Stored] = [:]
        var memoryBytes = 0
        var disk: [String: DiskRecord] = [:]
        var diskBytes = 0
        var clock: UInt64 = 0
        /// The file writes under way, by file name: the clock of the latest store of each. A write lands only if it
        /// is still the latest when it is done, and an invalidation in the meantime cancels it.
        var writes: [String: (write: UInt64, key: String)] = [:]
    }

    private let state = Locked(State())
    private let memoryCapacity: Int
    private let directory: URL?
    private let diskCapacity: Int
    let now: @Sendable () -> Date
    private let heuristics = Locked(false)
    /// Called before each file is read or written (with the file's name), outside the lock: tests hold the I/O
    /// there to see that other lookups go on meanwhile.
    let beforeFileAccess = Locked<(@Sendable (String) -> Void)?>(nil)

    /// The first bytes of every entry file; a file of an earlier format (keys in clear, no body digest) is dropped.
    static let magic = Data("SWBCACHE2\n".utf8)

    /// Creates a cache.
    ///
    /// - Parameters:
    ///   - memoryCapacity: bytes of bodies kept in memory. 4 MiB by default.
    ///   - directory: where to keep responses across launches; `nil` keeps them in memory only.
    ///   - diskCapacity: bytes of files kept in `directory`. 64 MiB by default.
    ///   - now: the time entries are stamped and aged with; inject one in tests.
    public init(
        memoryCapacity: Int = 4 << 20, directory: URL? = nil, diskCapacity: Int = 64 << 20,
        now: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.memoryCapacity = memoryCapacity
        self.directory = directory
        self.diskCapacity = diskCapacity
        self.now = now
        if let directory {
            // Only this user may enter a directory the cache makes (see `PrivateFile`).
            try? FileManager.default.createDirectory(
                at: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            loadIndex(directory)
        }
    }

    /// Entries stored under another version are misses (set it to the app's version).
    public var version: String {
        get { state.withLock { $0.version } }
        set { state.withLock { $0.version = newValue } }
    }

    /// Entries stored under another user key are misses (set it to the signed-in user, empty when signed out).
    public var userKey: String {
        get { state.withLock { $0.userKey } }
        set { state.withLock { $0.userKey = newValue } }
    }

    /// Whether a response without an explicit lifetime (`max-age`, `Expires`) but with `Last-Modified` counts as
    /// fresh for a tenth of the time since it was modified (at most a day), as RFC 9111 allows. `false` by default:
    /// such a response is revalidated every time under `CachePolicy.http`.
    public var heuristicFreshness: Bool {
        get { heuristics.withLock { $0 } }
        set { heuristics.withLock { $0 = newValue } }
    }

    /// The bytes the cache's files take on disk.
    public var diskUsage: Int {
        state.withLock { $0.diskBytes }
    }

    /// How many entries are kept in memory and on disk.
    var counts: (memory: Int, disk: Int) {
        state.withLock { ($0.memory.count, $0.disk.count) }
    }

    /// The key of a request: method and URL, and a digest of the body when there is one. `invalidate` takes it.
    ///
    /// In the URL, the values of query items with a secret name (`access_token`) and any user info are digested.
    public static func key(method: HTTPMethod, url: String, body: Data = Data()) -> String {
        let url = keyURL(url)
        return body.isEmpty ? "\(method) \(url)" : "\(method) \(url) #\(SHA256Hasher.hex(body).prefix(16))"
    }

    /// A request key with a digest of the credentials among `headers` (see the type's comment), or as it is when
    /// they carry none.
    static func key(_ key: String, credentialsOf headers: HTTPHeaders) -> String {
        let names = Redirects.credentialFields(in: headers)
        guard !names.isEmpty else { return key }
        let text = names.map { $0.lowercased() }.sorted().map { "\($0)=\(headers[$0] ?? "")" }.joined(separator: "\n")
        return key + " @" + SHA256Hasher.hex(Data(text.utf8)).prefix(32)
    }

    /// A URL as keys hold it: the values of query items with a secret name, and user info, digested.
    static func keyURL(_ url: String) -> String {
        guard var components = URLComponents(string: url) else { return url }
        var changed = false
        if components.percentEncodedUser != nil || components.percentEncodedPassword != nil {
            let userInfo = (components.percentEncodedUser ?? "") + ":" + (components.percentEncodedPassword ?? "")
            components.percentEncodedUser = "~" + SHA256Hasher.hex(Data(userInfo.utf8)).prefix(16)
            components.percentEncodedPassword = nil
            changed = true
        }
        if let items = components.percentEncodedQueryItems,
            items.contains(where: { SecretName.isSecret($0.name) })
        {
            components.percentEncodedQueryItems = items.map { item in
                guard SecretName.isSecret(item.name), let value = item.value else { return item }
                return URLQueryItem(name: item.name, value: "~" + SHA256Hasher.hex(Data(value.utf8)).prefix(16))
            }
            changed = true
        }
        return changed ? components.string ?? url : url
    }

    /// Forgets the responses stored under a key: for every credential and every variant.
    public func invalidate(key: String) {
        invalidate { $0 == key || $0.hasPrefix(key + " @") || $0.hasPrefix(key + "\n") }
    }

    /// Forgets every response whose key starts with a prefix (`"GET https://api.example.com/v1/users"`).
    public func invalidate(prefix: String) {
        invalidate { $0.hasPrefix(prefix) }
    }

    /// Forgets everything.
    public func removeAll() {
        invalidate { _ in true }
    }

    /// Forgets every response stored for a URL, whatever the method (what a successful unsafe request does to its
    /// target, RFC 9111 section 4.4).
    public func invalidate(url: String) {
        let url = ResponseCache.keyURL(url)
        invalidate { ResponseCache.url(ofKey: $0) == url }
    }

    /// The URL in a key: after the method, up to the body digest or the variant lines.
    static func url(ofKey key: String) -> Substring {
        guard let space = key.firstIndex(of: " ") else { return "" }
        let rest = key[key.index(after: space)...]
        let end = rest.firstIndex { $0 == " " || $0 == "\n" } ?? rest.endIndex
        return rest[..<end]
    }

    // MARK: - For the center

    /// The stored response for a request key that matches the request's varied header fields.
    func lookup(_ key: String, headers: HTTPHeaders) -> Entry? {
        let names = state.withLock { $0.vary[key] } ?? []
        return entry(for: ResponseCache.fullKey(key, names, headers))
    }

    /// Stores a response for a request key, under the values of the request headers it varies on.
    func store(
        _ key: String, requestHeaders: HTTPHeaders, status: Int, headers: HTTPHeaders, body: Data, requestedAt: Date
    ) {
        guard let names = CacheRules.varyNames(headers) else { return }
        state.withLock { $0.vary[key] = names }
        store(
            key: ResponseCache.fullKey(key, names, requestHeaders), status: status, headers: headers.dictionary,
            body: body, requestedAt: requestedAt, vary: names)
    }

    /// A stored entry after a `304`: its header fields updated from the `304`'s, its times from this exchange.
    func refresh(_ entry: Entry, with notModified: HTTPHeaders, requestedAt: Date) -> Entry {
        store(
            key: entry.key, status: entry.status,
            headers: CacheRules.updated(HTTPHeaders(entry.headers), with: notModified).dictionary, body: entry.body,
            requestedAt: requestedAt, vary: entry.vary)
    }

    private static func fullKey(_ key: String, _ names: [String], _ headers: HTTPHeaders) -> String {
        names.isEmpty ? key : key + "\n" + CacheRules.variant(names, of: headers)
    }

    func entry(for key: String) -> Entry? {
        enum Found {
            case entry(Entry?)
            case file(name: String, scope: String, written: UInt64)
        }
        let found = state.withLock { state -> Found in
            let scope = "\(state.version)|\(state.userKey)"
            let name = fileName(key, scope)
            state.clock += 1
            if let stored = state.memory[name] {
                state.memory[name]!.lastUse = state.clock
                return .entry(stored.entry)
            }
            guard directory != nil, let record = state.disk[name] else { return .entry(nil) }
            return .file(name: name, scope: scope, written: record.written)
        }
        guard case .file(let name, let scope, let written) = found, let directory else {
            guard case .entry(let entry) = found else { return nil }
            return entry
        }
        // The file is read outside the lock, so that other lookups (most answered from memory) and stores go on
        // while it is read; a file is replaced whole (renamed over), so what is read is one whole entry.
        beforeFileAccess.withLock { $0 }?(name)
        let read = read(directory.appendingPathComponent(name), body: true)?.entry
        let entry = read.flatMap { $0.key == key && $0.scope == scope ? $0 : nil }
        return state.withLock { state -> Entry? in
            // Invalidated meanwhile: a miss. Replaced meanwhile: what was read is a whole entry for the key, but
            // the record is another file's, so it is neither kept in memory nor counted as a use.
            guard let record = state.disk[name] else { return nil }
            guard record.written == written else { return entry }
            guard let entry else {
                // Unreadable or not what its name says: gone, so that it is replaced.
                remove(name, from: &state)
                return nil
            }
            state.disk[name]!.lastUse = state.clock
            keepInMemory(entry, name: name, state: &state)
            return entry
        }
    }

    /// Stores an entry under a full key, stamped now; returns it.
    @discardableResult
    func store(
        key: String, status: Int, headers: [String: String], body: Data, requestedAt: Date? = nil,
        vary: [String]? = nil
    ) -> Entry {
        // A cookie the response set is the account's, not the response's: it is never kept.
        let headers = headers.filter { !["set-cookie", "set-cookie2"].contains($0.key.lowercased()) }
        let (entry, name, write) = state.withLock { state in
            let scope = "\(state.version)|\(state.userKey)"
            let stored = now()
            let entry = Entry(
                key: key, scope: scope, status: status, headers: headers, storedAt: stored, body: body,
                requestedAt: requestedAt ?? stored, vary: vary)
            let name = fileName(key, scope)
            state.clock += 1
            keepInMemory(entry, name: name, state: &state)
            if directory != nil { state.writes[name] = (state.clock, key) }
            return (entry, name, state.clock)
        }
        if let directory { self.write(entry, name: name, write: write, directory: directory) }
        return entry
    }

    /// The age of an entry now, by RFC 9111 (its `Age` and `Date` fields, and the time it has been stored).
    func age(of entry: Entry) -> TimeInterval {
        CacheRules.currentAge(
            HTTPHeaders(entry.headers), requestTime: entry.requestedAt ?? entry.storedAt, responseTime: entry.storedAt,
            now: now())
    }

    /// Whether an entry is fresh now: younger than its freshness lifetime.
    func isFresh(_ entry: Entry) -> Bool {
        let lifetime = CacheRules.freshnessLifetime(
            HTTPHeaders(entry.headers), status: entry.status, responseTime: entry.storedAt,
            heuristic: heuristicFreshness)
        return lifetime > age(of: entry)
    }

    // MARK: - Stores

    private func fileName(_ key: String, _ scope: String) -> String {
        SHA256Hasher.hex(Data("\(scope)\n\(key)".utf8)) + ".response"
    }

    private func keepInMemory(_ entry: Entry, name: String, state: inout State) {
        if let old = state.memory.removeValue(forKey: name) { state.memoryBytes -= old.entry.body.count }
        guard entry.body.count <= memoryCapacity else { return }
        state.memory[name] = Stored(entry: entry, lastUse: state.clock)
        state.memoryBytes += entry.body.count
        while state.memoryBytes > memoryCapacity,
            let oldest = state.memory.min(by: { $0.value.lastUse < $1.value.lastUse })
        {
            state.memoryBytes -= oldest.value.entry.body.count
            state.memory.removeValue(forKey: oldest.key)
        }
    }

    /// Writes an entry's file, store number `write`, outside the lock (other lookups and stores go on meanwhile),
    /// and records it under the lock if it is still the latest store of its name and was not invalidated meanwhile.
    private func write(_ entry: Entry, name: String, write: UInt64, directory: URL) {
        var header = entry
        header.body = Data()
        header.bodyLength = entry.body.count
        header.bodyDigest = SHA256Hasher.hex(entry.body)
        var file: Data?
        if let json = try? JSONEncoder().encode(header) {
            var length = UInt32(json.count).bigEndian
            var bytes = ResponseCache.magic
            bytes.append(Data(bytes: &length, count: 4))
            bytes.append(json)
            bytes.append(entry.body)
            if bytes.count <= diskCapacity { file = bytes }
        }
        // Written whole under a temporary name, then renamed over the entry: a crash leaves a stray temporary file
        // (dropped at the next start), never a half-written entry.
        let temporary = directory.appendingPathComponent("\(name).\(UUID().uuidString).partial")
        let target = directory.appendingPathComponent(name)
        var written = false
        if let file {
            beforeFileAccess.withLock { $0 }?(name)
            written = PrivateFile.create(file, at: temporary)
        }
        state.withLock { state in
            guard state.writes[name]?.write == write else {
                // A later store of the same name, or an invalidation, came first: this file is out of date.
                try? FileManager.default.removeItem(at: temporary)
                return
            }
            state.writes[name] = nil
            guard let file, written, rename(temporary.path, target.path) == 0 else {
                // Too large for the disk, not encodable, or not written: the store is the latest, so the file of an
                // earlier one goes too.
                try? FileManager.default.removeItem(at: temporary)
                remove(name, from: &state, keepingMemory: true)
                return
            }
            if let old = state.disk.removeValue(forKey: name) { state.diskBytes -= old.size }
            state.disk[name] = DiskRecord(key: entry.key, size: file.count, lastUse: write, written: write)
            state.diskBytes += file.count
            while state.diskBytes > diskCapacity,
                let oldest = state.disk.min(by: { $0.value.lastUse < $1.value.lastUse })
            {
                remove(oldest.key, from: &state)
            }
        }
    }

    /// An entry file's header, the file's size and when it was last written, and with `body` its body too: `nil`
    /// unless the file is as long as its header says (one cut short never reads as an entry), and with `body`
    /// unless the body's digest is the one its header gives (a damaged body is no entry). Opening the cache
    /// reads headers alone; a lookup reads the body as well.
    private func read(_ url: URL, body: Bool) -> (entry: Entry, size: Int, modified: Double)? {
        guard let handle = try? FileHandle(forReadingFrom: url) else { return nil }
        defer { try? handle.close() }
        var status = stat()
        guard fstat(handle.fileDescriptor, &status) == 0 else { return nil }
        #if canImport(Darwin)
        let written = status.st_mtimespec
        #else
        let written = status.st_mtim
        #endif
        let size = Int(status.st_size)
        let prefixLength = ResponseCache.magic.count + 4
        guard size >= prefixLength, let prefix = try? handle.read(upToCount: prefixLength),
            prefix.count == prefixLength, prefix.prefix(ResponseCache.magic.count) == ResponseCache.magic
        else { return nil }
        let length = prefix.suffix(4).reduce(0) { $0 << 8 | Int($1) }
        guard length <= size - prefixLength, let json = try? handle.read(upToCount: length), json.count == length,
            var entry = try? JSONValueDecoder.decode(Entry.self, from: JSON(data: json)),
            // Compared by subtraction: a header's length (any `Int`, from a damaged file) added to the others
            // could overflow and stop the process, at every start.
            let bodyLength = entry.bodyLength, bodyLength == size - prefixLength - length
        else { return nil }
        if body {
            guard let bytes = try? handle.readToEnd() ?? Data(), bytes.count == bodyLength,
                entry.bodyDigest == SHA256Hasher.hex(bytes)
            else { return nil }
            entry.body = bytes
        }
        return (entry, size, Double(written.tv_sec) + Double(written.tv_nsec) / 1e9)
    }

    /// Removes an entry from memory (unless `keepingMemory`) and disk. A write of it under way goes on (it replaces
    /// the file removed); `invalidate` cancels those too.
    private func remove(_ name: String, from state: inout State, keepingMemory: Bool = false) {
        if let record = state.disk.removeValue(forKey: name) { state.diskBytes -= record.size }
        if !keepingMemory, let stored = state.memory.removeValue(forKey: name) {
            state.memoryBytes -= stored.entry.body.count
        }
        if let directory { try? FileManager.default.removeItem(at: directory.appendingPathComponent(name)) }
    }

    private func invalidate(where matches: (String) -> Bool) {
        state.withLock { state in
            let names = Set(state.memory.filter { matches($0.value.entry.key) }.keys)
                .union(state.disk.filter { matches($0.value.key) }.keys)
            for name in names { remove(name, from: &state) }
            // A write under way would put back what is forgotten (a body too large for memory is only there).
            for (name, write) in state.writes where matches(write.key) { state.writes[name] = nil }
        }
    }

    /// Reads every file's header once, oldest first, so that use order survives a restart; drops files that do not
    /// read. Bodies are not read: a full cache (64 MiB by default) was read whole when the cache was made, at an
    /// app's start.
    private func loadIndex(_ directory: URL) {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []
        var found: [(name: String, entry: Entry, size: Int, modified: Double)] = []
        for name in names {
            let url = directory.appendingPathComponent(name)
            // An entry is whole (its file as long as its header says; the body is read when it is used), and lives
            // under the name its key and scope give it.
            guard url.pathExtension == "response", let (entry, size, modified) = read(url, body: false),
                name == fileName(entry.key, entry.scope)
            else {
                // A temporary file a crash left behind, or an entry that does not read whole.
                if url.pathExtension == "partial" || url.pathExtension == "response" {
                    try? FileManager.default.removeItem(at: url)
                }
                continue
            }
            found.append((name, entry, size, modified))
        }
        found.sort { $0.modified < $1.modified }
        state.withLock { state in
            for (name, entry, size, _) in found {
                if let vary = entry.vary, let newline = entry.key.firstIndex(of: "\n") {
                    state.vary[String(entry.key[..<newline])] = vary
                } else if entry.vary?.isEmpty ?? true {
                    state.vary[entry.key] = []
                }
                state.clock += 1
                state.disk[name] = DiskRecord(key: entry.key, size: size, lastUse: state.clock)
                state.diskBytes += size
            }
            while state.diskBytes > diskCapacity,
                let oldest = state.disk.min(by: { $0.value.lastUse < $1.value.lastUse })
            {
                remove(oldest.key, from: &state)
            }
        }
    }
}

extension ResponseCache: CustomStringConvertible, CustomReflectable {
    /// How many responses it keeps and the bytes they take; never their keys (URLs with their queries) or bodies.
    public var description: String {
        let (memory, disk) = counts
        return "ResponseCache (\(memory) in memory, \(disk) on disk, \(diskUsage) bytes on disk)"
    }

    /// What `dump` shows: `description`'s facts.
    public var customMirror: Mirror {
        let (memory, disk) = counts
        return Mirror(
            self, children: ["inMemory": memory, "onDisk": disk, "diskUsage": diskUsage], displayStyle: .class)
    }
}
