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
