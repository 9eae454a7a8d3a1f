import Foundation
import Testing
@testable import Switchboard
import SwitchboardTestSupport

/// What the response cache keeps on disk and whom it serves, over loopback on both engines: nothing secret in clear
/// in its files, a response kept per credential unless the request says every user shares it, and a damaged body
/// never served.
@Suite struct CacheSecretsTests {
    /// A server whose every answer is fresh for a minute, varies on the fields `vary` names, has a `Set-Cookie` (one
    /// that expires at once, so that no cookie storage keeps it for other tests), and says which answer it is
    /// (`answer N`); how many requests it had.
    static func server() throws -> (LoopbackServer, Locked<Int>) {
        let count = Locked(0)
        let server = try LoopbackServer { request in
            let number = count.withLock { count in
                count += 1
                return count
            }
            var headers: [(name: String, value: String)] = [
                ("Content-Type", "text/plain"), ("Cache-Control", "max-age=60"),
                ("Set-Cookie", "sid=COOKIE-SECRET; Max-Age=0"),
            ]
            if let vary = request.queryValue("vary") { headers.append(("Vary", vary)) }
            return ServerResponse(status: 200, headers: headers, body: Data("answer \(number)".utf8))
        }
        return (server, count)
    }

    /// Every byte of every file in `directory`, as text.
    static func files(in directory: URL) throws -> String {
        let names = try FileManager.default.contentsOfDirectory(atPath: directory.path)
        return try names.map {
            String(decoding: try Data(contentsOf: directory.appendingPathComponent($0)), as: UTF8.self)
        }.joined(separator: "\n")
    }

    /// A request whose response varies on its credentials, with a secret in its query.
    static func secretRequest(_ request: inout Request) {
        request.api = "data"
        request.parameters = ["vary": "Authorization, X-Api-Key", "access_token": "QUERY-SECRET", "page": "2"]
        request.headers["Authorization"] = "Bearer HEADER-SECRET"
        request.headers["X-Api-Key"] = "KEY-SECRET"
        request.cachePolicy = .http
        request.responseSerializer = .string
    }

    @Test(arguments: bothEngines)
    func nothingSecretIsWrittenInClear(engineName: String) async throws {
        let (server, _) = try Self.server()
        defer { server.stop() }
        let scratch = Scratch()
        let cache = ResponseCache(directory: scratch.url)
        let center = try loopbackCenter(engineName, server: server) { $0.cache = cache }
        _ = try await center.send(Self.secretRequest)
        await waitUntil { cache.diskUsage > 0 }
        let written = try Self.files(in: scratch.url)
        #expect(written.contains("answer 1"), "the entry is on disk")
        #expect(written.contains("page=2"), "what is not secret stays readable")
        for secret in ["HEADER-SECRET", "KEY-SECRET", "QUERY-SECRET", "COOKIE-SECRET"] {
            #expect(!written.contains(secret), "\(secret) is on disk in clear")
        }
        // Read back by a cache opened on the same directory (nothing in memory): the same request is served from it.
        let reopened = try loopbackCenter(engineName, server: server) {
            $0.cache = ResponseCache(directory: scratch.url)
        }
        let again = try await reopened.send(Self.secretRequest)
        #expect(again.source == .cache)
        #expect(again.string == "answer 1")
        #expect(again.headers["Set-Cookie"] == nil)
    }

    @Test(arguments: bothEngines)
    func aResponseIsKeptPerCredential(engineName: String) async throws {
        let (server, count) = try Self.server()
        defer { server.stop() }
        let center = try loopbackCenter(engineName, server: server) { $0.cache = ResponseCache() }
        func send(_ token: String?, shared: Bool = false) async throws -> String? {
            try await center.send { request in
                request.api = shared ? "shared" : "mine"
                if let token { request.headers["Authorization"] = "Bearer \(token)" }
                request.cachePolicy = .http
                request.responseSerializer = .string
                request.cachesAcrossCredentials = shared
            }.string
        }
        #expect(try await send("alice") == "answer 1")
        #expect(try await send("alice") == "answer 1", "the same account is served from the cache")
        #expect(try await send("bob") == "answer 2", "another account is not")
        #expect(try await send(nil) == "answer 3", "nor is a request without a credential")
        #expect(try await send("bob") == "answer 2")
        // Data every user shares, said so by the request: one entry for every credential.
        #expect(try await send("alice", shared: true) == "answer 4")
        #expect(try await send("bob", shared: true) == "answer 4")
        #expect(try await send(nil, shared: true) == "answer 4")
        #expect(count.snapshot == 4)
    }

    @Test(arguments: bothEngines)
    func aDamagedBodyIsAMissAndIsRemoved(engineName: String) async throws {
        let (server, count) = try Self.server()
        defer { server.stop() }
        let scratch = Scratch()
        let cache = ResponseCache(directory: scratch.url)
        let center = try loopbackCenter(engineName, server: server) { $0.cache = cache }
        let first = try await center.send { request in
            request.api = "data"
            request.cachePolicy = .http
            request.responseSerializer = .string
        }
        #expect(first.string == "answer 1")
        await waitUntil { cache.diskUsage > 0 }
        // One byte of the body changed, the length the same.
        let name = try #require(try FileManager.default.contentsOfDirectory(atPath: scratch.url.path).first)
        let file = scratch.url.appendingPathComponent(name)
        var bytes = try Data(contentsOf: file)
        let last = bytes.count - 1
        #expect(bytes[last] == UInt8(ascii: "1"))
        bytes[last] = UInt8(ascii: "7")
        try bytes.write(to: file)
        let reopened = ResponseCache(directory: scratch.url)
        let other = try loopbackCenter(engineName, server: server) { $0.cache = reopened }
        let second = try await other.send { request in
            request.api = "data"
            request.cachePolicy = .http
            request.responseSerializer = .string
        }
        #expect(second.source == .network)
        #expect(second.string == "answer 2")
        #expect(count.snapshot == 2)
        await waitUntil { (try? Data(contentsOf: file))?.last == UInt8(ascii: "2") }
        #expect(try Data(contentsOf: file).last == UInt8(ascii: "2"), "the damaged entry was replaced")
    }
}
