import Foundation
import Testing
@testable import Switchboard
import SwitchboardTestSupport

/// An engine's waits stay off the shared pool: on Linux Swift's tasks and Dispatch's global queues share about one
/// thread a core, so an engine call that waits there holds up every task of the process.
@Suite struct PoolTests {
    /// A body stream whose first read waits until the gate opens: URLSession on Linux reads a stream body on its
    /// one work queue, shared by every session of the process, so while the read waits, every call into URLSession
    /// that needs that queue (creating, resuming or cancelling a task) waits too. CurlEngine reads it on its worker.
    ///
    /// Many requests are then started on the same engine, and after them a task that opens the gate. If starting a
    /// request held a thread of the pool until the work queue was free, the starts would take every thread and the
    /// opening task could not run until Dispatch added threads (about one a second, each taken by the next start);
    /// a plain thread opens the gate after 30 seconds in that case, so that the test ends, and the test fails.
    ///
    /// On Linux, URLSessionEngine's half runs in a child process (this binary, running only this test): while the
    /// gate is closed, every URLSession request of the process waits, and the gate waits for a thread of the pool,
    /// which the tests beside it can keep busy for seconds (a debug build parsing and writing JSON). Run beside them,
    /// it held up their URLSession requests for that long (a full run showed the gate still closed 16 s in).
    @Test(arguments: bothEngines)
    func startingRequestsWhileTheEnginesQueueWaitsHoldsUpNoThreadOfThePool(engineName: String) async throws {
        #if os(Linux)
        let child = ProcessInfo.processInfo.environment[Self.childVariable]
        if engineName == "URLSessionEngine", child == nil {
            try await ChildTest.run(
                "startingRequestsWhileTheEnginesQueueWaitsHoldsUpNoThreadOfThePool",
                environment: [Self.childVariable: engineName], scratch: Scratch())
            return
        }
        // The child runs URLSessionEngine's half alone.
        if let child, child != engineName { return }
        #endif
        try await URLSessionQueueUse.exclusively {
            let engine = try namedEngine(engineName, perHost: 200)
            let base = LoopbackServer.shared.baseURL
            let gate = ReadGate()
            var upload = EngineRequest(url: URL(string: base + "/post")!)
            upload.method = .post
            upload.body = .stream(Request.BodyStream(length: nil) { GatedReadStream(gate) })
            let uploading = Task { try await engine.perform(upload) { _ in } }
            while !gate.entered { try await Task.sleep(for: .milliseconds(5)) }

            let starts = 64 + 8 * ProcessInfo.processInfo.activeProcessorCount
            let gets = (0..<starts).map { _ in
                Task { try await engine.perform(EngineRequest(url: URL(string: base + "/get")!)) { _ in }.status }
            }
            Task { gate.open(by: "a task of the pool") }
            Thread.detachNewThread {
                if !gate.waitUntilOpen(seconds: 30) { gate.open(by: "the fallback thread") }
            }

            let uploaded = try await uploading.value
            var statuses: [Int] = []
            for get in gets { statuses.append(try await get.value) }
            #expect(gate.openedBy == "a task of the pool", "\(engineName)")
            #expect(uploaded.status == 200, "\(engineName)")
            #expect(String(decoding: uploaded.body, as: UTF8.self).contains("gated body"), "\(engineName)")
            #expect(statuses == Array(repeating: 200, count: starts), "\(engineName)")
            #if os(Linux)
            if engine is URLSessionEngine {
                #expect(Self.threadNames().contains(SessionCallThread.threadName), "the calls' own thread runs")
            }
            #endif
        }
    }

    /// Set in the child process that runs URLSessionEngine's half of the test above: the engine it runs.
    static let childVariable = "SWITCHBOARD_POOL_CHILD"

    /// The kernel's names of the process's threads.
    static func threadNames() -> Set<String> {
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []
        return Set(
            tasks.compactMap { task in
                (try? String(contentsOfFile: "/proc/self/task/\(task)/comm", encoding: .utf8))?
                    .trimmingCharacters(in: .whitespacesAndNewlines)
            })
    }
}

/// Opened once, by whoever comes first.
private final class ReadGate: Sendable {
    private let state = Locked<(entered: Bool, openedBy: String?)>((false, nil))
    private let opened = DispatchSemaphore(value: 0)

    var entered: Bool { state.withLock { $0.entered } }
    var openedBy: String? { state.withLock { $0.openedBy } }

    func enter() { state.withLock { $0.entered = true } }

    func open(by opener: String) {
        let first = state.withLock { state -> Bool in
            guard state.openedBy == nil else { return false }
            state.openedBy = opener
            return true
        }
        // Two signals: one for the stream's read, one for the fallback thread's wait.
        if first {
            opened.signal()
            opened.signal()
        }
    }

    /// Waits on a thread of its own; `false` when the time passed first.
    func waitUntilOpen(seconds: Int) -> Bool {
        opened.wait(timeout: .now() + .seconds(seconds)) == .success
    }

    func waitUntilOpen() { opened.wait() }
}

/// A stream whose first read waits for the gate, then yields a short body.
private final class GatedReadStream: InputStream {
    private let gate: ReadGate
    private var remaining = Data("gated body".utf8)
    private var status: Stream.Status = .notOpen

    init(_ gate: ReadGate) {
        self.gate = gate
        super.init(data: Data())
    }

    override func open() { status = .open }
    override func close() { status = .closed }
    override var streamStatus: Stream.Status { status }
    override var hasBytesAvailable: Bool { !remaining.isEmpty }
    override var streamError: (any Error)? { nil }

    override func read(_ buffer: UnsafeMutablePointer<UInt8>, maxLength: Int) -> Int {
        if gate.openedBy == nil {
            gate.enter()
            gate.waitUntilOpen()
        }
        let count = min(maxLength, remaining.count)
        guard count > 0 else {
            status = .atEnd
            return 0
        }
        remaining.copyBytes(to: buffer, count: count)
        remaining.removeFirst(count)
        return count
    }
}
