import Foundation
import Testing
@testable import Switchboard

/// A time source tests move by hand.
final class ManualDate: Sendable {
    private let current = Locked(Date(timeIntervalSince1970: 1_000_000))
    var now: Date { current.snapshot }
    func advance(_ seconds: TimeInterval) { current.withLock { $0 += seconds } }
}

@Suite struct CacheTests {
    /// A stub whose `/v1/feed` counts its calls, answers with an ETag, and a 304 when it is sent back.
    func setup(
        cache: ResponseCache? = nil, date: ManualDate = ManualDate()
    ) -> (Center, StubEngine, ResponseCache, Locked<Int>) {
        let stub = StubEngine()
        let calls = Locked(0)
        stub.on(nil, "/v1/feed") { request in
            let call = calls.withLock {
                $0 += 1; return $0
            }
            if request.urlRequest.value(forHTTPHeaderField: "If-None-Match") == "\"v1\"" {
                return .status(304, headers: ["ETag": "\"v1\""])
            }
            return .json(["call": .number(JSON.Number(call))], headers: ["ETag": "\"v1\""])
        }
        let cache = cache ?? ResponseCache(now: { date.now })
        let center = stubCenter(stub) { $0.cache = cache }.0
        return (center, stub, cache, calls)
    }

    @Test func networkOnlyNeitherReadsNorWrites() async throws {
        let (center, _, _, calls) = setup()
        _ = try await center.send { $0.api = "feed" }
        _ = try await center.send { $0.api = "feed" }
        #expect(calls.snapshot == 2)
        let miss = await center.sendRecording {
            $0.api = "feed"; $0.cachePolicy = .cacheOnly
        }
        #expect(miss.error?.code == .cacheMiss)
    }

    @Test func cacheElseNetworkHonoursItsMaxAgeAndRevalidates() async throws {
        let date = ManualDate()
        let (center, stub, _, calls) = setup(date: date)
        let policy = CachePolicy.cacheElseNetwork(maxAge: .seconds(60))
        let first = try await center.send {
            $0.api = "feed"; $0.cachePolicy = policy
        }
        #expect(first.source == .network)
        date.advance(30)
        let second = try await center.send {
            $0.api = "feed"; $0.cachePolicy = policy
        }
        #expect(second.source == .cache)
        #expect(second.json?["call"] == 1)
        #expect(calls.snapshot == 1)
        // Past its age: the server is asked, with the ETag, and its 304 serves the cached body.
        date.advance(60)
        let third = try await center.send {
            $0.api = "feed"; $0.cachePolicy = policy
        }
        #expect(calls.snapshot == 2)
        #expect(stub.requests.last?.urlRequest.value(forHTTPHeaderField: "If-None-Match") == "\"v1\"")
        #expect(third.source == .revalidated)
        #expect(third.status == 200)
        #expect(third.json?["call"] == 1)
        // The 304 restamped the entry: fresh again.
        date.advance(30)
        _ = try await center.send {
            $0.api = "feed"; $0.cachePolicy = policy
        }
        #expect(calls.snapshot == 2)
    }

    @Test func cacheThenNetworkDeliversTwiceInOrder() async throws {
        let (center, stub, _, _) = setup()
        // No ETag here, so the second round's network response is new, not a 304.
        let calls = Locked(0)
        stub.on(nil, "/v1/feed") { _ in
            .json([
                "call": .number(
                    JSON.Number(
                        calls.withLock {
                            $0 += 1; return $0
                        }))
            ])
        }
        let log = EventLog()
        for round in 1...2 {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                center.send {
                    $0.api = "feed"; $0.cachePolicy = .cacheThenNetwork; $0.headers["X-Round"] = "\(round)"
                } onSuccess: { response in
                    log.record("round \(round): \(response.source) call \(response.json?["call"]?.int ?? 0)")
                } onFinished: { _ in
                    continuation.resume()
                }
            }
        }
        #expect(log.all == ["round 1: network call 1", "round 2: cache call 1", "round 2: network call 2"])
        #expect(calls.snapshot == 2)
    }

    @Test func cacheThenNetworkAsAStream() async throws {
        let (center, _, _, _) = setup()
        _ = try await center.send {
            $0.api = "feed"; $0.cachePolicy = .cacheElseNetwork(maxAge: .zero)
        }
        var sources: [Response.Source] = []
        for try await response in center.responses({
            $0.api = "feed"; $0.cachePolicy = .cacheThenNetwork
        }) {
            sources.append(response.source)
        }
        // The second delivery is the server's 304, which confirms the cached body: the network's word, not a second
        // copy of the cache's.
        #expect(sources == [.cache, .revalidated])
    }

    @Test func cacheOnlyNeverTouchesTheNetwork() async throws {
        let (center, stub, _, _) = setup()
        _ = try await center.send {
            $0.api = "feed"; $0.cachePolicy = .cacheElseNetwork(maxAge: .seconds(1))
        }
        let cached = try await center.send {
            $0.api = "feed"; $0.cachePolicy = .cacheOnly
        }
        #expect(cached.source == .cache)
        #expect(stub.requests.count == 1)
    }

    @Test func aVersionOrUserKeyChangeMisses() async throws {
        let (center, _, cache, calls) = setup()
        let policy = CachePolicy.cacheElseNetwork(maxAge: .seconds(3600))
        cache.userKey = "ada"
        _ = try await center.send {
            $0.api = "feed"; $0.cachePolicy = policy
        }
        _ = try await center.send {
            $0.api = "feed"; $0.cachePolicy = policy
        }
        #expect(calls.snapshot == 1)
        cache.userKey = "bob"
        _ = try await center.send {
            $0.api = "feed"; $0.cachePolicy = policy
        }
        #expect(calls.snapshot == 2)
        cache.version = "2.0"
        _ = try await center.send {
            $0.api = "feed"; $0.cachePolicy = policy
        }
        #expect(calls.snapshot == 3)
        cache.userKey = "ada"
        cache.version = ""
        #expect(
            try await center.send {
                $0.api = "feed"; $0.cachePolicy = policy
            }.source == .cache)
    }

    @Test func postIsCachedOnlyWhenAsked() async throws {
        let stub = StubEngine()
        stub.on(.post, "/v1/search", reply: .json(["hits": 3]))
        let cache = ResponseCache()
        let (center, _) = stubCenter(stub) { $0.cache = cache }
        let policy = CachePolicy.cacheElseNetwork(maxAge: .seconds(60))
        for _ in 0..<2 {
            _ = try await center.send {
                $0.api = "search"; $0.method = .post; $0.cachePolicy = policy
            }
        }
        #expect(stub.statistics.calls == 2)
        for query in ["a", "a", "b"] {
            _ = try await center.send { request in
                request.api = "search"
                request.method = .post
                request.parameters = ["q": query]
                request.cachePolicy = policy
                request.cachesPOST = true
            }
        }
        #expect(stub.statistics.calls == 4)
    }

    @Test func invalidationByKeyAndPrefix() async throws {
        let (center, _, cache, calls) = setup()
        let policy = CachePolicy.cacheElseNetwork(maxAge: .seconds(3600))
        _ = try await center.send {
            $0.api = "feed"; $0.cachePolicy = policy
        }
        cache.invalidate(key: ResponseCache.key(method: .get, url: "https://api.example.com/v1/feed"))
        _ = try await center.send {
            $0.api = "feed"; $0.cachePolicy = policy
        }
        #expect(calls.snapshot == 2)
        cache.invalidate(prefix: "GET https://api.example.com/v1/")
        _ = try await center.send {
            $0.api = "feed"; $0.cachePolicy = policy
        }
        #expect(calls.snapshot == 3)
    }

    // MARK: - Disk

    @Test func theDiskCacheSurvivesANewCenter() async throws {
        let scratch = Scratch()
        let policy = CachePolicy.cacheElseNetwork(maxAge: .seconds(3600))
        let (first, _, _, calls) = setup(cache: ResponseCache(directory: scratch.url))
        _ = try await first.send {
            $0.api = "feed"; $0.cachePolicy = policy
        }
        // As after a restart: a new cache on the same directory (memory empty), and a new center.
        let (second, stub, _, _) = setup(cache: ResponseCache(directory: scratch.url))
        let response = try await second.send {
            $0.api = "feed"; $0.cachePolicy = policy
        }
        #expect(response.source == .cache)
        #expect(response.json?["call"] == 1)
        #expect(calls.snapshot == 1)
        #expect(stub.requests.isEmpty)
    }

    @Test func theDiskStoreNeverExceedsItsBound() throws {
        let scratch = Scratch()
        let cache = ResponseCache(memoryCapacity: 0, directory: scratch.url, diskCapacity: 50_000)
        for index in 0..<40 {
            cache.store(key: "GET https://x/\(index)", status: 200, headers: [:], body: Data(count: 5_000))
            let onDisk = scratch.contents.reduce(0) { total, name in
                total + (FileSink.size(of: scratch.file(name)).map(Int.init) ?? 0)
            }
            #expect(onDisk <= 50_000)
            #expect(cache.diskUsage == onDisk)
        }
        // The oldest went first; the newest are there.
        #expect(cache.entry(for: "GET https://x/39") != nil)
        #expect(cache.entry(for: "GET https://x/0") == nil)
        // A reopened cache finds the same and stays within the bound.
        let reopened = ResponseCache(memoryCapacity: 0, directory: scratch.url, diskCapacity: 20_000)
        #expect(reopened.diskUsage <= 20_000)
        #expect(reopened.entry(for: "GET https://x/39") != nil)
    }

    /// Whether `work` finishes on another thread within 10 seconds (it returns at once unless a lock holds it).
    static func finishesMeanwhile(_ work: @escaping @Sendable () -> Void) -> Bool {
        let done = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            work()
            done.signal()
        }
        return done.wait(timeout: .now() + 10) == .success
    }

    /// A file is written and read outside the cache's lock: while one response's file is written (or read), other
    /// lookups and stores go on. Both were done under the lock, so a large response held up every request that
    /// used the cache until its file was on disk.
    @Test func filesAreWrittenAndReadWithoutHoldingUpOtherLookups() throws {
        let scratch = Scratch()
        let cache = ResponseCache(memoryCapacity: 1 << 20, directory: scratch.url)
        cache.store(key: "GET https://x/small", status: 200, headers: [:], body: Data("small".utf8))
        let body = Data((0..<200_000).map { UInt8(truncatingIfNeeded: $0) })
        // What went on while the first file access of each cache was held (the accesses the work makes itself, on
        // the other thread, are let through).
        let meanwhile = Locked<[Bool]>([])
        let holding = Locked(false)
        let hold: @Sendable (@escaping @Sendable () -> Void) -> @Sendable (String) -> Void = { work in
            { _ in
                let first = holding.withLock { held in
                    defer { held = true }
                    return !held
                }
                guard first else { return }
                let went = Self.finishesMeanwhile(work)
                meanwhile.withLock { $0.append(went) }
            }
        }
        cache.beforeFileAccess.withLock {
            $0 = hold {
                _ = cache.entry(for: "GET https://x/small")
                cache.store(key: "GET https://x/other", status: 200, headers: [:], body: Data("o".utf8))
            }
        }
        cache.store(key: "GET https://x/large", status: 200, headers: [:], body: body)
        cache.beforeFileAccess.withLock { $0 = nil }
        // A cache that keeps nothing in memory reads the file on each lookup.
        let reader = ResponseCache(memoryCapacity: 0, directory: scratch.url)
        holding.withLock { $0 = false }
        reader.beforeFileAccess.withLock {
            $0 = hold { reader.store(key: "GET https://x/r", status: 200, headers: [:], body: Data()) }
        }
        #expect(reader.entry(for: "GET https://x/large")?.body == body)
        #expect(meanwhile.snapshot == [true, true], "a lookup and a store went on while a file was written, then read")
        #expect(!scratch.contents.contains { $0.hasSuffix(".partial") })
    }

    /// A write under way loses to what comes after it started: a later store of the same response (its file is the
    /// one kept), and an invalidation (nothing is put back, not even a body too large to be kept in memory).
    @Test func aWriteUnderWayLosesToALaterStoreOrAnInvalidation() throws {
        let scratch = Scratch()
        let cache = ResponseCache(memoryCapacity: 0, directory: scratch.url)
        let first = Locked(true)
        cache.beforeFileAccess.withLock {
            $0 = { _ in
                let isFirst = first.withLock { isFirst in
                    defer { isFirst = false }
                    return isFirst
                }
                guard isFirst else { return }
                cache.store(key: "GET https://x/a", status: 200, headers: [:], body: Data("second".utf8))
            }
        }
        cache.store(key: "GET https://x/a", status: 200, headers: [:], body: Data("first".utf8))
        cache.beforeFileAccess.withLock { $0 = nil }
        #expect(cache.entry(for: "GET https://x/a")?.body == Data("second".utf8))
        #expect(
            ResponseCache(memoryCapacity: 0, directory: scratch.url).entry(for: "GET https://x/a")?.body
                == Data("second".utf8))

        cache.beforeFileAccess.withLock {
            $0 = { _ in cache.invalidate(prefix: "GET https://x/b") }
        }
        cache.store(key: "GET https://x/b", status: 200, headers: [:], body: Data("gone".utf8))
        cache.beforeFileAccess.withLock { $0 = nil }
        #expect(cache.entry(for: "GET https://x/b") == nil)
        #expect(ResponseCache(memoryCapacity: 0, directory: scratch.url).entry(for: "GET https://x/b") == nil)
        #expect(Set(scratch.contents).count == 1, "\(scratch.contents)")
        #expect(cache.diskUsage == (FileSink.size(of: scratch.file(scratch.contents[0])).map(Int.init) ?? -1))
    }

    /// A response too large for the disk (and for memory) is not kept, and the older one it replaces goes too: the
    /// older file stayed, and lookups answered with it after the newer response was stored.
    @Test func aResponseTooLargeToKeepRemovesTheOneItReplaces() throws {
        let scratch = Scratch()
        let cache = ResponseCache(memoryCapacity: 0, directory: scratch.url, diskCapacity: 10_000)
        cache.store(key: "GET https://x/a", status: 200, headers: [:], body: Data(count: 1_000))
        #expect(cache.entry(for: "GET https://x/a")?.body.count == 1_000)
        cache.store(key: "GET https://x/a", status: 200, headers: [:], body: Data(count: 20_000))
        #expect(cache.entry(for: "GET https://x/a") == nil)
        #expect(scratch.contents.isEmpty)
        #expect(cache.diskUsage == 0)
    }

    @Test func aCorruptFileIsIgnoredAndReplaced() async throws {
        let scratch = Scratch()
        let policy = CachePolicy.cacheElseNetwork(maxAge: .seconds(3600))
        let (center, _, _, calls) = setup(cache: ResponseCache(memoryCapacity: 0, directory: scratch.url))
        _ = try await center.send {
            $0.api = "feed"; $0.cachePolicy = policy
        }
        let file = try #require(scratch.contents.first)
        try Data("not a cache file at all".utf8).write(to: scratch.file(file))
        let response = try await center.send {
            $0.api = "feed"; $0.cachePolicy = policy
        }
        #expect(response.source == .network)
        #expect(calls.snapshot == 2)
        // Replaced by the fresh response, which now serves from the cache.
        #expect(
            try await center.send {
                $0.api = "feed"; $0.cachePolicy = policy
            }.source == .cache)
        // A new cache over a directory with a corrupt file drops it at start-up.
        try Data([0, 1, 2]).write(to: scratch.file("broken.response"))
        _ = ResponseCache(directory: scratch.url)
        #expect(!scratch.contents.contains("broken.response"))
    }

    /// A cache opens on its files' headers alone, and still drops at start-up a file that is not as long as its
    /// header says (cut short, or with bytes after its body), or whose header claims more bytes than the file has;
    /// the files kept serve their bodies whole.
    @Test func aFileOfTheWrongLengthIsDroppedAtStartUp() throws {
        let scratch = Scratch()
        let cache = ResponseCache(memoryCapacity: 0, directory: scratch.url)
        let body = Data((0..<10_000).map { UInt8(truncatingIfNeeded: $0) })
        for name in ["whole", "short", "long", "claims"] {
            cache.store(key: "GET https://x/\(name)", status: 200, headers: [:], body: body)
        }
        let files = Dictionary(
            uniqueKeysWithValues: try scratch.contents.map { name in
                let data = try Data(contentsOf: scratch.file(name))
                let key = try #require(
                    String(decoding: data.prefix(400), as: UTF8.self).firstMatch(of: /(whole|short|long|claims)/))
                return (String(key.1), (name, data))
            })
        let (short, shortData) = try #require(files["short"])
        try shortData.dropLast().write(to: scratch.file(short))
        let (long, longData) = try #require(files["long"])
        try (longData + Data([0])).write(to: scratch.file(long))
        let (claims, claimsData) = try #require(files["claims"])
        var claiming = claimsData
        let magic = Data("SWBCACHE1\n".utf8).count
        claiming.replaceSubrange(magic..<magic + 4, with: [0x7f, 0xff, 0xff, 0xff])
        try claiming.write(to: scratch.file(claims))
        let reopened = ResponseCache(memoryCapacity: 0, directory: scratch.url)
        #expect(Set(scratch.contents) == [try #require(files["whole"]).0])
        #expect(reopened.entry(for: "GET https://x/whole")?.body == body)
        #expect(reopened.entry(for: "GET https://x/short") == nil)
        #expect(reopened.diskUsage == files["whole"]?.1.count)
    }
}
