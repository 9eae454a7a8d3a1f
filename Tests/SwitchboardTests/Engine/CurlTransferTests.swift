import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
@testable import Switchboard
import SwitchboardTestSupport

/// CurlEngine's errors keep libcurl's own words, written into a buffer that comes with each easy handle: a handle
/// reused for another transfer never repeats the text of the transfer before.
@Suite(.enabled(if: CurlEngine.isAvailable)) struct CurlErrorTextTests {
    /// The description of a failed exchange on `engine`.
    private func failure(_ engine: CurlEngine, _ url: String) async -> String? {
        do {
            _ = try await engine.perform(EngineRequest(url: URL(string: url)!)) { _ in }
            return nil
        } catch {
            return (error as NSError).localizedDescription
        }
    }

    @Test func eachFailureCarriesItsOwnLibcurlText() async throws {
        let engine = try CurlEngine()
        let base = LoopbackServer.shared.baseURL
        // A success first, so that the handles after it are reused ones.
        let ok = try await engine.perform(EngineRequest(url: URL(string: base + "/get")!)) { _ in }
        #expect(ok.status == 200)
        let empty = await failure(engine, base + "/fault/empty-reply")
        #expect(empty?.contains("(libcurl error 52)") == true, "\(String(describing: empty))")
        #expect(empty?.lowercased().contains("empty reply") == true, "libcurl's words: \(String(describing: empty))")
        // Port 1 on loopback refuses: a different failure on a handle that just carried the one above.
        let refused = await failure(engine, "http://127.0.0.1:1/x")
        #expect(refused?.contains("(libcurl error 7)") == true, "\(String(describing: refused))")
        #expect(refused?.lowercased().contains("empty reply") == false, "no text left from the transfer before")
        let again = try await engine.perform(EngineRequest(url: URL(string: base + "/get")!)) { _ in }
        #expect(again.status == 200, "the handle serves a success after the failures")
        let emptyAgain = await failure(engine, base + "/fault/empty-reply")
        #expect(emptyAgain == empty, "the same failure reads the same")
    }
}

/// CurlEngine reuses the header list of the last transfer for the next one that sends the same fields: whatever it
/// reuses, the server receives each request's own fields, byte for byte.
@Suite(.enabled(if: CurlEngine.isAvailable)) struct CurlHeaderListTests {
    /// The value of `X-Probe` the server received (nil when none), as raw UTF-8 bytes.
    private func probe(_ engine: CurlEngine, _ value: String?, method: HTTPMethod = .get) async throws -> [UInt8]? {
        var headers: HTTPHeaders = ["X-Client": "switchboard-tests"]
        if let value { headers["X-Probe"] = value }
        let path = method == .get ? "/headers" : "/anything"
        let url = URL(string: LoopbackServer.shared.baseURL + path)!
        var request = EngineRequest(method: method, url: url, headers: headers)
        if method != .get { request.body = .data(Data("body".utf8)) }
        let response = try await engine.perform(request) { _ in }
        let object = try JSONSerialization.jsonObject(with: response.body) as? [String: Any]
        let received = object?["headers"] as? [String: Any]
        return (received?.first { $0.key.lowercased() == "x-probe" }?.value as? String).map { Array($0.utf8) }
    }

    @Test func eachRequestSendsItsOwnFieldsWhenListsAreReused() async throws {
        let engine = try CurlEngine()
        #expect(try await probe(engine, "1") == Array("1".utf8))
        #expect(try await probe(engine, "1") == Array("1".utf8), "the same fields again: the list is reused")
        #expect(try await probe(engine, "2") == Array("2".utf8), "a new value is sent, not the reused list's")
        #expect(try await probe(engine, nil) == nil, "a field left out is not sent")
        #expect(try await probe(engine, "2", method: .post) == Array("2".utf8), "a body changes the list")
        #expect(try await probe(engine, "2") == Array("2".utf8))
        // The same text to `==`, other bytes on the wire: each request's own bytes arrive.
        let composed = "caf\u{E9}"
        let decomposed = "cafe\u{301}"
        #expect(composed == decomposed)
        #expect(try await probe(engine, composed) == Array(composed.utf8))
        #expect(try await probe(engine, decomposed) == Array(decomposed.utf8))
    }
}
