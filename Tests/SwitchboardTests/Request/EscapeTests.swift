import Foundation
import Testing
@testable import Switchboard
import SwitchboardTestSupport

/// Escapes a caller wrote reach the server as written. Foundation's `URL(string:)` encodes a text that holds a byte a
/// URL cannot (a space, `北京`, `[`) as if it had no escapes, its `%` too: `files/a b/%2F` went as
/// `files/a%20b/%252F`, and the server read `%2F` where the caller had written an escaped `/`. The same for a `url`,
/// a server, and a redirect's `Location`.
@Suite struct EscapeTests {
    @Test(arguments: [
        // An escape beside a byte to encode: the escape is kept, the byte encoded.
        ("http://x/a b/%2F", "http://x/a%20b/%2F"),
        ("files/北京/%2F", "files/%E5%8C%97%E4%BA%AC/%2F"),
        ("http://x/q?a=%2F&b=c d#f g%20", "http://x/q?a=%2F&b=c%20d#f%20g%20"),
        ("a%2f[1]|b", "a%2f%5B1%5D%7Cb"),
        // A `%` without two hex digits is encoded, and every `#` after the first.
        ("http://x/100% sure %41", "http://x/100%25%20sure%20%41"),
        ("http://x/a%41#b#c d", "http://x/a%41#b%23c%20d"),
        // The authority is Foundation's: a host in another script, user info.
        ("http://北京.cn/a b%2F", "http://北京.cn/a%20b%2F"),
        ("http://u:p%40 @x/a b%2F", "http://u:p%40 @x/a%20b%2F"),
        ("//x y/a b%2F", "//x y/a%20b%2F"),
        // Without an escape, encoded as Foundation encodes it; with nothing to encode, unchanged.
        ("http://x/a b/ä", "http://x/a%20b/%C3%A4"),
        ("http://x/a%2Fb", "http://x/a%2Fb"),
        ("", ""),
    ])
    func escapesAreKeptAndTheRestEncoded(text: String, expected: String) {
        #expect(URLComposition.keepingEscapes(text) == expected)
    }

    /// Over generated texts: Foundation takes the text made as it is; what the server decodes from it is what the
    /// caller meant (its escapes decoded, every other character as it is); and a text without an escape ends as
    /// Foundation's own encoding of it would.
    @Test func theServerDecodesWhatTheCallerWrote() {
        var generator = SplitMix(seed: 0xE5CA_9E5)
        let pieces = [
            "a", "Z", "0", "-", ".", "_", "~", ":", "/", "?", "#", "%", "%2F", "%2f", "%zz", "%4", "%25", "%E4%B8%AD",
            "@", "!", "$", "&", "'", "(", ")", "*", "+", ",", ";", "=", " ", "\"", "<", ">", "[", "]", "{", "}", "|",
            "\\", "^", "`", "ä", "北", "\t",
        ]
        var encoded = 0
        var withEscapes = 0
        // 20,000 texts: enough of each kind (below), and a few seconds of a debug build's CPU at most, which the
        // suite's other tests share in its first seconds.
        for _ in 0..<20_000 {
            var rest = "/"
            for _ in 0..<(1 + generator.next() % 8) { rest += pieces[Int(generator.next() % UInt64(pieces.count))] }
            let text = "http://x.com" + rest
            let escaped = URLComposition.keepingEscapes(text)
            guard URL(string: escaped)?.absoluteString == escaped else {
                Issue.record(
                    "Foundation changes \(escaped), made from \(text), to \(URL(string: escaped)?.absoluteString ?? "nothing")"
                )
                return
            }
            guard Self.decoded(String(escaped.dropFirst("http://x.com".count))) == Self.decoded(rest) else {
                Issue.record("\(text) was sent as \(escaped)")
                return
            }
            if escaped != text { encoded += 1 }
            if rest.contains(/%[0-9A-Fa-f]{2}/) {
                withEscapes += 1
            } else if URL(string: text)?.absoluteString != escaped {
                Issue.record("\(text), without an escape, went as \(escaped), not as Foundation encodes it")
                return
            }
        }
        // Enough texts of each kind to mean something.
        #expect(encoded > 4_000)
        #expect(withEscapes > 4_000)
    }

    /// The bytes a server reads from a URL's text: each escape decoded, every other byte as it is.
    static func decoded(_ text: String) -> [UInt8] {
        let bytes = Array(text.utf8)
        var result: [UInt8] = []
        var index = 0
        while index < bytes.count {
            if bytes[index] == UInt8(ascii: "%"), index + 2 < bytes.count, let high = bytes[index + 1].hexDigitValue,
                let low = bytes[index + 2].hexDigitValue
            {
                result.append(high << 4 | low)
                index += 3
            } else {
                result.append(bytes[index])
                index += 1
            }
        }
        return result
    }

    /// On both engines: an `api`, a `url` and a redirect's `Location` with escapes beside bytes to encode reach the
    /// server with the escapes as written.
    @Test(arguments: bothEngines)
    func escapesReachTheServerAsWritten(engineName: String) async throws {
        let targets = Locked<[String]>([])
        let server = try LoopbackServer { request in
            targets.withLock { $0.append(request.target) }
            if request.path.hasPrefix("/moved") {
                return ServerResponse(status: 302, headers: [("Location", "/to/a b%2Fc?d=%26 e")], body: Data())
            }
            return ServerResponse(status: 200, headers: [("Content-Type", "text/plain")], body: Data("ok".utf8))
        }
        defer { server.stop() }
        let center = try loopbackCenter(engineName, server: server)
        let viaAPI = try await center.send {
            $0.api = "files/a b/%2F/北京/100%"; $0.responseSerializer = .raw
        }
        #expect(viaAPI.url?.absoluteString == server.baseURL + "/files/a%20b/%2F/%E5%8C%97%E4%BA%AC/100%25")
        // The parameters' escapes beside a space in a `url` (they were right before, the query being added to the
        // URL once Foundation had encoded it; this keeps them so).
        let withParameters = try await center.send {
            $0.url = server.baseURL + "/search/a b"; $0.parameters = ["q": "x&y z"]; $0.responseSerializer = .raw
        }
        #expect(withParameters.status == 200)
        let viaURL = try await center.send {
            $0.url = server.baseURL + "/q?a=%2F&b=c d"; $0.parameters = ["e": "f"]; $0.responseSerializer = .raw
        }
        #expect(viaURL.status == 200)
        let redirected = try await center.send {
            $0.api = "moved"; $0.responseSerializer = .raw
        }
        #expect(redirected.url?.absoluteString == server.baseURL + "/to/a%20b%2Fc?d=%26%20e")
        #expect(
            targets.snapshot == [
                "/files/a%20b/%2F/%E5%8C%97%E4%BA%AC/100%25", "/search/a%20b?q=x%26y%20z", "/q?a=%2F&b=c%20d&e=f",
                "/moved",
                "/to/a%20b%2Fc?d=%26%20e",
            ], "\(engineName)")
    }
}
