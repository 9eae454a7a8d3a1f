import Foundation
import Testing
@testable import Switchboard
import SwitchboardTestSupport

/// RFC 9111's rules as pure functions, the 304 refresh through the center, and the disk store across "processes"
/// (a new cache on the same directory) and crashes.
@Suite struct CacheRulesTests {
    @Test func cacheControlDirectivesAreParsedAsTheRFCWritesThem() {
        let control = CacheControl(#"Public, MAX-AGE=60 , no-cache="Set-Cookie, X-A", private,s-maxage = 5"#)
        #expect(control.has("public") && control.has("private") && control.has("no-cache"))
        #expect(control.seconds("max-age") == 60)
        #expect(control.directives["no-cache"] == .some("Set-Cookie, X-A"))
        #expect(control.seconds("s-maxage") == 5)
        #expect(CacheControl("max-age=-1").seconds("max-age") == nil)
        #expect(CacheControl("max-age=abc").seconds("max-age") == nil)
        #expect(CacheControl("max-age=99999999999999999999999").seconds("max-age") == Int64.max)
        #expect(CacheControl("max-age=1, max-age=99").seconds("max-age") == 1, "the first of a repeated directive")
        #expect(!CacheControl(nil).has("no-store"))
    }

    /// A combining mark after a separator joins the two into one `Character`; the directives and `Vary` names are read
    /// by scalar, so the separator still separates. `no-store,` U+0301 `max-age=60` was read as one directive, and the
    /// response was stored.
    @Test func aCombiningMarkDoesNotHideASeparator() {
        #expect(CacheControl("no-store,\u{301}max-age=60").has("no-store"))
        #expect(CacheControl("max-age=\u{301}5, no-store").has("no-store"))
        #expect(CacheControl("no-cache=\"a\"\u{301}, no-store").directives["no-cache"] == .some("a"))
        #expect(CacheControl("no-cache=\"a\"\u{301}, no-store").has("no-store"))
        let plain = HTTPHeaders(["Cache-Control": "max-age=60"])
        let marked = HTTPHeaders(["Cache-Control": "no-store,\u{301}max-age=60"])
        #expect(!CacheRules.isStorable(status: 200, response: marked, request: plain))
        // A Vary name that is not a header name: the cache cannot tell which field it means, so it is never matched.
        #expect(CacheRules.varyNames(HTTPHeaders(["Vary": "Accept,\u{301}Authorization"])) == nil)
        #expect(CacheRules.varyNames(HTTPHeaders(["Vary": "Accept, X-Lang,,accept"])) == ["accept", "x-lang"])
        let variant = { (value: String) in CacheRules.variant(["x-a"], of: HTTPHeaders(["X-A": value])) }
        #expect(variant("a ,  b") == variant("a,b"), "spaces around commas are folded")
        #expect(variant("a,\u{301}b") != variant("a,b"), "a mark after a comma is kept")
    }

    /// Only whole successes are stored: a `206` is part of a response (see `PartialResponseCacheTests`).
    @Test func onlyAWholeSuccessIsStorable() {
        let fields = HTTPHeaders(["Cache-Control": "max-age=60"])
        let none = HTTPHeaders()
        for status in [200, 203, 204, 299] {
            #expect(CacheRules.isStorable(status: status, response: fields, request: none), "\(status)")
        }
        for status in [206, 301, 304, 404, 500] {
            #expect(!CacheRules.isStorable(status: status, response: fields, request: none), "\(status)")
        }
    }

    @Test func freshnessComesFromMaxAgeThenExpiresLessDateThenNothing() {
        let now = Date(timeIntervalSince1970: 1_700_000_000)
        let date = Httpbin.httpDate(now)
        func lifetime(_ fields: [String: String], heuristic: Bool = false) -> TimeInterval {
            CacheRules.freshnessLifetime(HTTPHeaders(fields), status: 200, responseTime: now, heuristic: heuristic)
        }
        #expect(lifetime(["Cache-Control": "max-age=30", "Expires": Httpbin.httpDate(now + 600), "Date": date]) == 30)
        #expect(lifetime(["Expires": Httpbin.httpDate(now + 600), "Date": date]) == 600)
        #expect(lifetime(["Expires": "0", "Date": date]) == 0, "an invalid Expires is already expired")
        #expect(lifetime(["Expires": Httpbin.httpDate(now - 600), "Date": date]) == 0)
        #expect(lifetime(["Last-Modified": Httpbin.httpDate(now - 1000), "Date": date]) == 0, "no heuristics unasked")
        #expect(lifetime(["Last-Modified": Httpbin.httpDate(now - 1000), "Date": date], heuristic: true) == 100)
        #expect(lifetime(["Last-Modified": Httpbin.httpDate(now - 10_000_000)], heuristic: true) == 86_400)
    }

    @Test func theAgeCountsAgeTheResponseDelayAndTheTimeStored() {
        let requested = Date(timeIntervalSince1970: 1_700_000_000)
        let received = requested + 2
        func age(_ fields: [String: String], now: Date) -> TimeInterval {
            CacheRules.currentAge(HTTPHeaders(fields), requestTime: requested, responseTime: received, now: now)
        }
        #expect(age([:], now: received + 10) == 12, "the 2 seconds the response took count as age")
        #expect(age(["Age": "100"], now: received + 10) == 112, "Age plus the 2-second delay, plus 10 stored")
        #expect(age(["Date": Httpbin.httpDate(received - 50)], now: received) == 50, "a Date in the past")
        #expect(age(["Age": "abc"], now: received) == 2, "an Age that is not a number counts as none")
    }

    @Test func a304RefreshesTheStoredFieldsButNotTheBodysOwn() {
        let stored: HTTPHeaders = ["Content-Length": "10", "ETag": "\"a\"", "Cache-Control": "max-age=0", "X-Old": "1"]
        let updated = CacheRules.updated(stored, with: ["Content-Length": "0", "Cache-Control": "max-age=60"])
        #expect(updated["Cache-Control"] == "max-age=60")
        #expect(updated["Content-Length"] == "10")
        #expect(updated["ETag"] == "\"a\"")
        #expect(updated["X-Old"] == "1")
    }

    /// A 304 that brings a new lifetime makes the stored response fresh again: the next request stays home.
    @Test func a304WithANewLifetimeMakesTheEntryFreshAgain() async throws {
        let date = ManualDate()
        let stub = StubEngine()
        let calls = Locked(0)
        stub.on(nil, "/v1/doc") { request in
            calls.withLock { $0 += 1 }
            if request.headers["If-None-Match"] == "\"v1\"" {
                return .status(304, headers: ["ETag": "\"v1\"", "Cache-Control": "max-age=60"])
            }
            return .json(["n": 1], headers: ["ETag": "\"v1\"", "Cache-Control": "max-age=0"])
        }
        let cache = ResponseCache(now: { date.now })
        let center = stubCenter(stub) { $0.cache = cache }.0
        _ = try await center.send {
            $0.api = "doc"; $0.cachePolicy = .http
        }
        let revalidated = try await center.send {
            $0.api = "doc"; $0.cachePolicy = .http
        }
        #expect(revalidated.source == .revalidated)
        #expect(revalidated.headers["Cache-Control"] == "max-age=60")
        #expect(calls.snapshot == 2)
        date.advance(30)
        let fresh = try await center.send {
            $0.api = "doc"; $0.cachePolicy = .http
        }
        #expect(fresh.source == .cache)
        #expect(calls.snapshot == 2, "fresh for 60 s after the 304")
        date.advance(31)
        _ = try await center.send {
            $0.api = "doc"; $0.cachePolicy = .http
        }
        #expect(calls.snapshot == 3)
    }

    /// The cache holds responses, which may be personal or carry credentials: its files are this user's alone (mode
    /// 0600), in a directory only this user may enter when the cache made it (0700). Made with the default modes,
    /// every account on the machine could read them.
    @Test func theDiskStoreIsReadableByThisUserAlone() async throws {
        let parent = FileManager.default.temporaryDirectory.appendingPathComponent("cache-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: parent) }
        let directory = parent.appendingPathComponent("made/by/the/cache")
        let stub = StubEngine()
        stub.on(nil, "/v1/me", reply: .json(["token": "secret"], headers: ["Cache-Control": "max-age=600"]))
        let center = stubCenter(stub) { $0.cache = ResponseCache(directory: directory) }.0
        _ = try await center.send {
            $0.api = "me"; $0.cachePolicy = .http
        }
        func mode(_ path: String) throws -> Int {
            try #require(FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int) & 0o777
        }
        #expect(try mode(directory.path) == 0o700)
        let files = try FileManager.default.contentsOfDirectory(atPath: directory.path)
        #expect(!files.isEmpty)
        for file in files {
            #expect(try mode(directory.appendingPathComponent(file).path) == 0o600, "\(file)")
        }
    }

    @Test func theDiskStoreSurvivesANewCacheAndDropsWhatACrashLeft() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("cache-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let stub = StubEngine()
        stub.on(nil, "/v1/a", reply: .json(["a": 1], headers: ["Cache-Control": "max-age=600", "Vary": "X-Lang"]))
        stub.on(nil, "/v1/b", reply: .json(["b": 2], headers: ["Cache-Control": "max-age=600"]))
        do {
            let center = stubCenter(stub) { $0.cache = ResponseCache(directory: directory) }.0
            _ = try await center.send {
                $0.api = "a"; $0.cachePolicy = .http; $0.headers["X-Lang"] = "en"
            }
            _ = try await center.send {
                $0.api = "b"; $0.cachePolicy = .http
            }
        }
        var files = try FileManager.default.contentsOfDirectory(atPath: directory.path)
        #expect(files.count == 2)
        #expect(files.allSatisfy { $0.hasSuffix(".response") }, "no temporary file is left after a write")
        // What a crash could leave: a temporary file, and an entry cut short.
        try Data("half".utf8).write(to: directory.appendingPathComponent("x.response.123.partial"))
        let cut = directory.appendingPathComponent(try #require(files.first))
        let whole = try Data(contentsOf: cut)
        let copy = directory.appendingPathComponent("0000.response")
        try whole.prefix(whole.count - 3).write(to: copy)

        // A new process: a new cache on the same directory.
        let cache = ResponseCache(directory: directory)
        files = try FileManager.default.contentsOfDirectory(atPath: directory.path)
        #expect(files.sorted() == files.filter { $0 != "0000.response" && !$0.hasSuffix(".partial") }.sorted())
        #expect(files.count == 2, "the temporary file and the cut entry are gone")
        let center = stubCenter(stub) { $0.cache = cache }.0
        let a = try await center.send {
            $0.api = "a"; $0.cachePolicy = .http; $0.headers["X-Lang"] = "en"
        }
        let b = try await center.send {
            $0.api = "b"; $0.cachePolicy = .http
        }
        #expect(a.source == .cache && b.source == .cache)
        #expect(a.json?["a"] == 1 && b.json?["b"] == 2)
        let other = try await center.send {
            $0.api = "a"; $0.cachePolicy = .http; $0.headers["X-Lang"] = "fr"
        }
        #expect(other.source == .network, "the variant index survived the restart too")
        #expect(stub.requests.count == 3)
    }

    /// An entry file whose header gives its body a length no file has (beyond `Int`'s range once added to the
    /// header's, or below zero) is dropped when the cache opens: the sum stopped the process, at every start of an app
    /// whose cache held such a file.
    @Test(arguments: [Int.max, Int.max - 20, -1, Int.min])
    func anEntryWhoseHeaderLiesAboutItsBodyIsDropped(bodyLength: Int) async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("cache-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let stub = StubEngine()
        stub.on(nil, "/v1/a", reply: .json(["a": 1], headers: ["Cache-Control": "max-age=600"]))
        stub.on(nil, "/v1/b", reply: .json(["b": 2], headers: ["Cache-Control": "max-age=600"]))
        do {
            let center = stubCenter(stub) { $0.cache = ResponseCache(directory: directory) }.0
            for api in ["a", "b"] {
                _ = try await center.send {
                    $0.api = api; $0.cachePolicy = .http
                }
            }
        }
        // The first file's header, its body length replaced; the prefix (magic, then the header's length) kept right.
        let files = try FileManager.default.contentsOfDirectory(atPath: directory.path).sorted()
        let file = directory.appendingPathComponent(try #require(files.first))
        let bytes = try Data(contentsOf: file)
        let headerStart = ResponseCache.magic.count + 4
        let headerLength = bytes[ResponseCache.magic.count..<headerStart].reduce(0) { $0 << 8 | Int($1) }
        let parsed = try JSONSerialization.jsonObject(with: bytes.subdata(in: headerStart..<headerStart + headerLength))
        var header = try #require(parsed as? [String: Any])
        header["bodyLength"] = bodyLength
        let lying = try JSONSerialization.data(withJSONObject: header)
        var length = UInt32(lying.count).bigEndian
        var rewritten = ResponseCache.magic
        rewritten.append(Data(bytes: &length, count: 4))
        rewritten.append(lying)
        rewritten.append(bytes[(headerStart + headerLength)...])
        try rewritten.write(to: file)

        let cache = ResponseCache(directory: directory)
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path).count == 1)
        #expect(cache.diskUsage > 0)
        let center = stubCenter(stub) { $0.cache = cache }.0
        let sources = try await [
            center.send {
                $0.api = "a"; $0.cachePolicy = .http
            }.source,
            center.send {
                $0.api = "b"; $0.cachePolicy = .http
            }.source,
        ]
        #expect(sources.filter { $0 == .cache }.count == 1, "the other entry still reads: \(sources)")
    }

    @Test func theDiskStoreKeepsToItsSize() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("cache-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let stub = StubEngine()
        stub.on(
            nil, "/v1/*", reply: .data(Data(repeating: 7, count: 40_000), headers: ["Cache-Control": "max-age=600"]))
        let cache = ResponseCache(memoryCapacity: 0, directory: directory, diskCapacity: 100_000)
        let center = stubCenter(stub) { $0.cache = cache }.0
        func send(_ index: Int) async throws -> Response {
            try await center.send {
                $0.api = "item\(index)"; $0.cachePolicy = .http; $0.responseSerializer = .raw
            }
        }
        for index in 0..<5 { _ = try await send(index) }
        #expect(cache.diskUsage <= 100_000)
        let sizes = try FileManager.default.contentsOfDirectory(
            at: directory, includingPropertiesForKeys: [.fileSizeKey]
        )
        .map { try $0.resourceValues(forKeys: [.fileSizeKey]).fileSize ?? 0 }
        #expect(sizes.reduce(0, +) == cache.diskUsage)
        #expect(sizes.count == 2)
        // The newest stayed; the oldest went first.
        #expect(try await send(4).source == .cache)
        #expect(try await send(0).source == .network)
    }
}
