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

/// A file upload that ends while the file is still being read: cancelled just after it starts, many times over.
/// URLSession's own file upload (`uploadTask(fromFile:)`) pauses the transfer while its reader has no bytes ready and
/// resumes it when a read arrives; on Linux a read that arrived after the transfer ended crashed the process (`try!`
/// on `curl_easy_pause`). URLSessionEngine no longer uses it on Linux; the shim's guard keeps any other caller in the
/// process from the crash.
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
    /// URLSession's own file upload, cancelled as it starts, 200 times: every task ends (cancelled or answered) and the
    /// process goes on. Without the guard this crashed every run.
    @Test func urlSessionsOwnFileUploadsCancelledAsTheyStartLeaveTheProcessRunning() async throws {
        let scratch = Scratch()
        let file = scratch.write("body.bin", bytes: 1 << 20)
        let session = URLSession(configuration: .ephemeral)
        defer { session.invalidateAndCancel() }
        var request = URLRequest(url: URL(string: LoopbackServer.shared.baseURL + "/discard")!)
        request.httpMethod = "POST"
        var outcomes: [String: Int] = [:]
        for round in 0..<200 {
            let ended = AsyncStream<String>.makeStream()
            let task = session.uploadTask(with: request, fromFile: file) { _, response, error in
                let code = (error as? URLError)?.code == .cancelled ? "cancelled" : error.map { "\($0)" }
                ended.continuation.yield(code ?? "\((response as? HTTPURLResponse)?.statusCode ?? 0)")
                ended.continuation.finish()
            }
            task.resume()
            if round % 4 != 0 { try await Task.sleep(for: .microseconds(250 * (round % 16))) }
            task.cancel()
            for await outcome in ended.stream { outcomes[outcome, default: 0] += 1 }
        }
        #expect(outcomes.keys.allSatisfy { $0 == "cancelled" || $0 == "200" }, "\(outcomes)")
        #expect(outcomes["cancelled", default: 0] > 0, "\(outcomes)")
    }

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
