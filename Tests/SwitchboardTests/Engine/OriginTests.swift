import Foundation
import Testing
@testable import Switchboard

/// `Origin(text:)` reads a plain URL's origin from its text, and any other text through `URL`: the two must agree.
@Suite struct OriginTests {
    @Test func aPlainURLsOriginIsReadAsURLReadsIt() {
        let texts = [
            "https://api.example.com/v1/", "https://API.Example.COM:443/x?y#z", "http://api.example.com",
            "http://api.example.com:8080", "https://api.example.com:8443/", "http://a_b~c.example-d.org/?q",
            "https://api.example.com:0443/", "https://api.example.com#frag",
        ]
        for text in texts {
            #expect(Origin(text: text) != nil, "\(text)")
            #expect(Origin(text: text) == Origin(URL(string: text)), "\(text)")
        }
        #expect(Origin(text: "https://API.example.com:443/x") == Origin(text: "https://api.example.com/"))
        #expect(Origin(text: "http://api.example.com/") != Origin(text: "https://api.example.com/"))
        #expect(Origin(text: "https://api.example.com:8443/") != Origin(text: "https://api.example.com/"))
        #expect(Origin(text: "https://api.example.com.evil.example/") != Origin(text: "https://api.example.com/"))
    }

    /// Generated URLs, plain and not (user info, an IPv6 literal, escapes, an empty or out-of-range port, another
    /// scheme, no scheme): the origin read from the text is the one `URL` reads, or none for both.
    @Test func generatedURLsGiveTheOriginURLGives() {
        var generator = SystemRandomNumberGenerator()
        let schemes = ["http://", "https://", "HTTPS://", "ftp://", "", "http:/"]
        let hosts = [
            "api.example.com", "API.example.COM", "a-b.c_d~e", "user:pw@host.example", "[::1]", "h%41st.example",
            "127.0.0.1", "", "xn--caf-dma.example", "host..example",
        ]
        let ports = ["", ":80", ":443", ":8080", ":", ":65535", ":65536", ":123456", ":0", ":08"]
        let tails = ["", "/", "/v1/items?page=2", "?q=1", "#f", "/a b", "/%7Euser"]
        for _ in 0..<5000 {
            let text =
                schemes.randomElement(using: &generator)! + hosts.randomElement(using: &generator)!
                + ports.randomElement(using: &generator)! + tails.randomElement(using: &generator)!
            let expected = Origin(URL(string: URLComposition.keepingEscapes(text)))
            #expect(Origin(text: text) == expected, "\(text)")
        }
    }
}
