import Foundation

/// Responses kept in memory and, optionally, on disk, each store bounded in bytes (the least recently used go
/// first). URLSession stores nothing on Linux, so Switchboard keeps its own cache, the same on every platform.
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
        var key: String
        var scope: String
        var status: Int
        var headers: [String: String]
        var storedAt: Date
        var body: Data

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
    }

    private struct State {
        var version = ""
        var userKey = ""
        var memory: [String: Stored] = [:]
        var memoryBytes = 0
        var disk: [String: DiskRecord] = [:]
        var diskBytes = 0
        var clock: UInt64 = 0
    }

    private let state = Locked(State())
    private let memoryCapacity: Int
    private let directory: URL?
    private let diskCapacity: Int
    private let now: @Sendable () -> Date

    private static let magic = Data("SWBCACHE1\n".utf8)

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
            try? FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
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

    /// The bytes the cache's files take on disk.
    public var diskUsage: Int {
        state.withLock { $0.diskBytes }
    }

    /// The key of a request: method and URL, and a digest of the body when there is one. `invalidate` takes it.
    public static func key(method: HTTPMethod, url: String, body: Data = Data()) -> String {
        body.isEmpty ? "\(method) \(url)" : "\(method) \(url) #\(SHA256.hex(body).prefix(16))"
    }

    /// Forgets one response, by its key.
    public func invalidate(key: String) {
        invalidate { $0 == key }
    }

    /// Forgets every response whose key starts with a prefix (`"GET https://api.example.com/v1/users"`).
    public func invalidate(prefix: String) {
        invalidate { $0.hasPrefix(prefix) }
    }

    /// Forgets everything.
    public func removeAll() {
        invalidate { _ in true }
    }

    // MARK: - For the center

    func entry(for key: String) -> Entry? {
        state.withLock { state -> Entry? in
            let scope = "\(state.version)|\(state.userKey)"
            let name = fileName(key, scope)
            state.clock += 1
            if let stored = state.memory[name] {
                state.memory[name]!.lastUse = state.clock
                return stored.entry
            }
            guard let directory, state.disk[name] != nil else { return nil }
            guard let entry = read(directory.appendingPathComponent(name)), entry.key == key, entry.scope == scope else {
                // Unreadable or not what its name says: gone, so that it is replaced.
                remove(name, from: &state)
                return nil
            }
            state.disk[name]!.lastUse = state.clock
            keepInMemory(entry, name: name, state: &state)
            return entry
        }
    }

    func store(key: String, status: Int, headers: [String: String], body: Data) {
        state.withLock { state in
            let scope = "\(state.version)|\(state.userKey)"
            let entry = Entry(key: key, scope: scope, status: status, headers: headers, storedAt: now(), body: body)
            let name = fileName(key, scope)
            state.clock += 1
            keepInMemory(entry, name: name, state: &state)
            if let directory { write(entry, name: name, directory: directory, state: &state) }
        }
    }

    /// Restamps an entry the server said is still good (a `304`).
    func refresh(key: String) -> Entry? {
        guard var entry = entry(for: key) else { return nil }
        entry.storedAt = now()
        store(key: key, status: entry.status, headers: entry.headers, body: entry.body)
        return entry
    }

    /// The age of an entry now.
    func age(of entry: Entry) -> Duration {
        .milliseconds(Int64(now().timeIntervalSince(entry.storedAt) * 1000))
    }

    // MARK: - Stores

    private func fileName(_ key: String, _ scope: String) -> String {
        SHA256.hex(Data("\(scope)\n\(key)".utf8)) + ".response"
    }

    private func keepInMemory(_ entry: Entry, name: String, state: inout State) {
        if let old = state.memory.removeValue(forKey: name) { state.memoryBytes -= old.entry.body.count }
        guard entry.body.count <= memoryCapacity else { return }
        state.memory[name] = Stored(entry: entry, lastUse: state.clock)
        state.memoryBytes += entry.body.count
        while state.memoryBytes > memoryCapacity, let oldest = state.memory.min(by: { $0.value.lastUse < $1.value.lastUse }) {
            state.memoryBytes -= oldest.value.entry.body.count
            state.memory.removeValue(forKey: oldest.key)
        }
    }

    private func write(_ entry: Entry, name: String, directory: URL, state: inout State) {
        var header = entry
        header.body = Data()
        guard let json = try? JSONEncoder().encode(header) else { return }
        var length = UInt32(json.count).bigEndian
        var file = ResponseCache.magic
        file.append(Data(bytes: &length, count: 4))
        file.append(json)
        file.append(entry.body)
        guard file.count <= diskCapacity else { return }
        if let old = state.disk.removeValue(forKey: name) { state.diskBytes -= old.size }
        guard (try? file.write(to: directory.appendingPathComponent(name), options: .atomic)) != nil else { return }
        state.disk[name] = DiskRecord(key: entry.key, size: file.count, lastUse: state.clock)
        state.diskBytes += file.count
        while state.diskBytes > diskCapacity, let oldest = state.disk.min(by: { $0.value.lastUse < $1.value.lastUse }) {
            remove(oldest.key, from: &state)
        }
    }

    private func read(_ url: URL) -> Entry? {
        guard let data = try? Data(contentsOf: url), data.count >= ResponseCache.magic.count + 4,
              data.prefix(ResponseCache.magic.count) == ResponseCache.magic
        else { return nil }
        let start = data.startIndex + ResponseCache.magic.count
        let length = data[start..<start + 4].reduce(0) { $0 << 8 | Int($1) }
        guard data.count >= ResponseCache.magic.count + 4 + length,
              var entry = try? JSONDecoder().decode(Entry.self, from: data[(start + 4)..<(start + 4 + length)])
        else { return nil }
        entry.body = Data(data[(start + 4 + length)...])
        return entry
    }

    private func remove(_ name: String, from state: inout State) {
        if let record = state.disk.removeValue(forKey: name) { state.diskBytes -= record.size }
        if let stored = state.memory.removeValue(forKey: name) { state.memoryBytes -= stored.entry.body.count }
        if let directory { try? FileManager.default.removeItem(at: directory.appendingPathComponent(name)) }
    }

    private func invalidate(where matches: (String) -> Bool) {
        state.withLock { state in
            let names = Set(state.memory.filter { matches($0.value.entry.key) }.keys)
                .union(state.disk.filter { matches($0.value.key) }.keys)
            for name in names { remove(name, from: &state) }
        }
    }

    /// Reads every file's header once, oldest first, so that use order survives a restart; drops files that do not
    /// read.
    private func loadIndex(_ directory: URL) {
        let files = (try? FileManager.default.contentsOfDirectory(
            at: directory, includingPropertiesForKeys: [.contentModificationDateKey, .fileSizeKey])) ?? []
        let dated = files.map { url -> (URL, Date) in
            (url, (try? url.resourceValues(forKeys: [.contentModificationDateKey]))?.contentModificationDate ?? .distantPast)
        }.sorted { $0.1 < $1.1 }
        state.withLock { state in
            for (url, _) in dated where url.pathExtension == "response" {
                guard let entry = read(url) else {
                    try? FileManager.default.removeItem(at: url)
                    continue
                }
                state.clock += 1
                let size = ((try? url.resourceValues(forKeys: [.fileSizeKey]))?.fileSize) ?? entry.body.count
                state.disk[url.lastPathComponent] = DiskRecord(key: entry.key, size: size, lastUse: state.clock)
                state.diskBytes += size
            }
            while state.diskBytes > diskCapacity, let oldest = state.disk.min(by: { $0.value.lastUse < $1.value.lastUse }) {
                remove(oldest.key, from: &state)
            }
        }
    }
}
