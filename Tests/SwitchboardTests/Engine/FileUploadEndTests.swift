import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
@testable import Switchboard
import SwitchboardTestSupport
#if os(Linux)
import CCurlShim
#endif

/// A file upload that ends while its engine is still reading the file: cancelled just after it starts, many times
/// over. FoundationNetworking pauses a file upload while its reader has no bytes ready and resumes it when a read
/// arrives; a read that arrives after the transfer ended made it crash the process (`try!` on `curl_easy_pause`).
@Suite struct FileUploadEndTests {
    @Test(arguments: bothEngines)
    func fileUploadsCancelledAsTheyStartEndCancelledAndTheProcessGoesOn(engineName: String) async throws {
        let engine = try namedEngine(engineName)
        let scratch = Scratch()
        let file = scratch.write("body.bin", bytes: 1 << 20)
        let url = URL(string: LoopbackServer.shared.baseURL + "/discard")!
        var outcomes: [String: Int] = [:]
        for round in 0..<200 {
            var request = EngineRequest(url: url)
            request.method = .post
            request.body = .file(file)
            let signal = EngineCancellation()
            request.cancellation = signal
            let exchange = Task { try await engine.perform(request) { _ in } }
            // From at once to a few milliseconds in, so that some cancels meet a read of the file under way.
            if round % 4 != 0 { try await Task.sleep(for: .microseconds(250 * (round % 16))) }
            signal.cancel()
            do {
                let response = try await exchange.value
                outcomes["\(response.statusCode)", default: 0] += 1
            } catch is CancellationError {
                outcomes["cancelled", default: 0] += 1
            } catch {
                outcomes["\(error)", default: 0] += 1
            }
        }
        let unexpected = outcomes.filter { $0.key != "cancelled" && $0.key != "200" }
        #expect(unexpected.isEmpty, "every upload was cancelled or done: \(outcomes)")
        #expect(outcomes["cancelled", default: 0] > 0, "\(outcomes)")
        // The engine serves the next upload in full.
        var request = EngineRequest(url: url)
        request.method = .post
        request.body = .file(file)
        let response = try await engine.perform(request) { _ in }
        #expect(response.statusCode == 200)
    }

    #if os(Linux)
    /// The guard in front of libcurl's `curl_easy_pause` (the shim's pause_guard.c) is what this process binds the
    /// name to, and it gives any caller but FoundationNetworking libcurl's own answer: a resume of a handle that was
    /// never added to a transfer is refused, as libcurl refuses it.
    @Test func thePauseGuardIsBoundAndAnswersOtherCallersAsLibcurlDoes() throws {
        #expect(sb_pause_guard_is_active() == 1, "FoundationNetworking's curl_easy_pause is the guard")
        _ = try CurlLibrary.shared.get()
        let handle = try #require(sb_easy_init())
        defer { sb_easy_cleanup(handle) }
        #expect(sb_easy_pause(handle, 0) == 43, "libcurl's own answer: CURLE_BAD_FUNCTION_ARGUMENT")
        #expect(sb_pause_as_the_process_binds(handle, 0) == 43, "the guard changes no other caller's answer")
    }
    #endif
}
