import Foundation
import Testing
@testable import Switchboard
import SwitchboardTestSupport

/// A download can be cancelled until its file takes its final name, and not after: the outcome always says whether
/// the file is at its destination.
@Suite struct DownloadCommitTests {
    /// The `onResponse` hook runs after the file took its name. A cancel by identifier there finds nothing to cancel,
    /// and a cancel of the request's task changes nothing either: the download ends with its response and its file.
    /// (Before, both turned the outcome into `.cancelled` with the whole file in place: a caller told the download
    /// failed while it had replaced the file there.)
    @Test(arguments: bothEngines)
    func aCancelAfterTheFileIsInPlaceLeavesTheDownloadDone(engineName: String) async throws {
        let scratch = Scratch()
        let destination = scratch.write("done.bin", bytes: 10)
        let length = 256 << 10
        let sent = Locked<Center?>(nil)
        let cancelFound = Locked<[Bool]>([])
        let inPlaceInHook = Locked<Bool?>(nil)
        let center = try loopbackCenter(engineName) { config in
            config.onResponse = { request, response in
                inPlaceInHook.withLock { $0 = FileManager.default.fileExists(atPath: response.fileURL?.path ?? "") }
                sent.snapshot?.cancel(request.id) { found in cancelFound.withLock { $0.append(found != nil) } }
                withUnsafeCurrentTask { $0?.cancel() }
                return response
            }
        }
        sent.withLock { $0 = center }
        defer { sent.withLock { $0 = nil } }
        // In a task of its own: the hook cancels the task it runs in.
        let response = try await Task {
            try await center.send { request in
                request.kind = .download
                request.api = "files/\(length)"
                request.destination = .file(destination)
            }
        }.value
        #expect(inPlaceInHook.snapshot == true, "the hook runs once the file is in place")
        #expect(response.fileURL == destination)
        #expect(await Scratch.sha256(of: destination) == GeneratedContent(seed: 1).digest(length: length))
        center.privateQueue.sync(flags: .barrier) {}
        #expect(cancelFound.snapshot == [false], "the cancel found nothing it could still cancel")
        #expect(scratch.contents == ["done.bin"])
    }
}
