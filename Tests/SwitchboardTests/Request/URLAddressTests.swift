import Foundation
import Testing
@testable import Switchboard
import SwitchboardTestSupport

/// The plain form that the center keeps as text, unparsed: Foundation must take every such text exactly as it is,
/// or a request would go to another URL than the one Foundation's value names.
@Suite struct URLAddressTests {
    static func isPlain(_ text: String) -> Bool {
        var text = text
        return text.withUTF8(URLAddress.isPlain)
    }

    @Test(arguments: [
        "http://x.com", "https://x.com/", "http://null.invalid/v1/items?page=7&app_version=1.2",
        "http://127.0.0.1:8080/small", "https://a-b_c~d.example/%E4%B8%AD?q=a:b@c/d?e#frag/?",
        "http://x/!$&'()*+,;=", "http://x:1", "http://x#", "http://x?",
    ])
    func plainTextsAreKeptAsTheyAre(_ text: String) throws {
        #expect(Self.isPlain(text))
        #expect(URL(string: text)?.absoluteString == text)
        guard case .text(let kept) = URLAddress(parsing: text) else {
            Issue.record("\(text) was parsed")
            return
        }
        #expect(kept == text)
    }

    /// What Foundation changes (encodes, or refuses), or reads differently, is left to Foundation.
    @Test(arguments: [
        "HTTP://x.com/", "ftp://x.com/", "http://x.com/a b", "http://x.com/ä", "http://x.com/a%zz", "http://x.com/%4",
        "http://x.com/a#b#c", "http://user@x.com/", "http://[::1]:80/", "http://x.com:/", "http://x.com:123456/",
        "http://x.com/{a}", "http://x.com/a|b", "http://x.com/a\"b", "http://x.com/a[b]", "http:/x.com", "http://",
        "http://x.com\\a", "http://:80/",
    ])
    func otherTextsAreLeftToFoundation(_ text: String) {
        #expect(!Self.isPlain(text))
        guard case .url(let url) = URLAddress(parsing: text) else {
            Issue.record("\(text) was kept as text")
            return
        }
        #expect(url?.absoluteString == URL(string: text)?.absoluteString)
    }

    /// Texts put together from pieces that URLs are made of, the troublesome ones among them: every one the plain
    /// form accepts, Foundation takes unchanged.
    @Test func foundationKeepsEveryGeneratedPlainText() {
        var generator = SplitMix(seed: 0x5EED_0F_0A11)
        let pieces = [
            "http://", "https://", "HTTP://", "http:/", "a", "Z", "0", "9", "-", ".", "..", "_", "~", ":", ":0", ":80",
            ":65535", ":123456", "/", "//", "/./", "/../", "?", "??", "#", "%", "%2F", "%2f", "%zz", "%4", "@", "!",
            "$", "&", "'", "(", ")", "*", "+", ",", ";", "=", " ", "\"", "<", ">", "[", "]", "{", "}", "|", "\\", "^",
            "`", "ä", "x.com", "localhost", "127.0.0.1", "[::1]", "%E4",
        ]
        var plain = 0
        for _ in 0..<200_000 {
            var text = generator.next() % 10 < 8 ? (generator.next() % 2 == 0 ? "http://" : "https://") : ""
            for _ in 0..<(generator.next() % 9) { text += pieces[Int(generator.next() % UInt64(pieces.count))] }
            guard Self.isPlain(text) else { continue }
            plain += 1
            let parsed = URL(string: text)?.absoluteString
            if parsed != text {
                Issue.record("Foundation reads the plain text \(text) as \(parsed ?? "nothing")")
                return
            }
        }
        // Enough plain texts to mean something (about one in twenty).
        #expect(plain > 5_000)
    }

    /// A composed URL in the plain form reaches the engine as text, and `url` is made from it when read.
    @Test func theCenterKeepsAPlainURLAsText() async throws {
        let (center, stub) = stubCenter()
        stub.on(nil, "*", reply: .json([:]))
        let response = try await center.send {
            $0.api = "items"; $0.parameters = ["page": 2]
        }
        let sent = try #require(stub.requests.last)
        guard case .text(let text) = sent.address else {
            Issue.record("the engine request's URL was parsed")
            return
        }
        #expect(text == "https://api.example.com/v1/items?page=2")
        #expect(sent.url == URL(string: text))
        #expect(sent.urlText == text)
        #expect(response.url?.absoluteString == text)
    }

    /// On both engines, over loopback: the response's URL is the one sent, whether kept as text (plain) or parsed
    /// (encoded by Foundation), and the server saw the same text.
    @Test(arguments: bothEngines)
    func theResponseURLIsTheOneSent(_ engine: String) async throws {
        let center = try loopbackCenter(engine)
        let base = Server.loopback.baseURL
        let plain = try await center.send {
            $0.api = "anything/a-b"; $0.parameters = ["q": "1"]
        }
        #expect(plain.url?.absoluteString == base + "/anything/a-b?q=1")
        #expect(plain.json?["url"]?.string == base + "/anything/a-b?q=1")
        let encoded = try await center.send { $0.url = base + "/anything/a b" }
        #expect(encoded.url?.absoluteString == base + "/anything/a%20b")
        #expect(encoded.json?["url"]?.string == base + "/anything/a%20b")
    }

    /// A URL Foundation must encode reaches the engine encoded, as before.
    @Test func aURLFoundationEncodesIsSentEncoded() async throws {
        let (center, stub) = stubCenter()
        stub.on(nil, "*", reply: .status(204))
        _ = try await center.send { $0.url = "https://api.example.com/a b/ä" }
        let sent = try #require(stub.requests.last)
        #expect(sent.urlText == "https://api.example.com/a%20b/%C3%A4")
        #expect(sent.url?.absoluteString == "https://api.example.com/a%20b/%C3%A4")
    }
}
