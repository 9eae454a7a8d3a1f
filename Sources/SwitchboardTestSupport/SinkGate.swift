import Foundation

/// Holds an upload to `/sink?gate=KEY` once the server has read `after` bytes of its body, until the test opens the
/// gate: what the test does meanwhile (change the file being sent, say) happens while the client can have sent at
/// most `after` bytes and what the sockets hold, however slowly the test's own threads run.
public final class SinkGate: Sendable {
    private static let gates = ServerLock<[String: SinkGate]>([:])

    /// The value of the `gate` query item that picks this gate.
    public let key = UUID().uuidString
    /// How many bytes of the body the server reads before it waits.
    public let after: Int
    private let state = ServerLock((reached: false, open: false))
    private let opened = DispatchSemaphore(value: 0)

    /// A gate that `/sink?gate=\(key)` waits at after `after` bytes; it is known to the server until it is opened.
    public init(after: Int) {
        self.after = after
        Self.gates.withLock { $0[key] = self }
    }

    /// Whether the server has read `after` bytes and waits.
    public var isReached: Bool { state.withLock { $0.reached } }

    /// Lets the server read on (and forgets the gate).
    public func open() {
        let first = state.withLock { state -> Bool in
            defer { state.open = true }
            return !state.open
        }
        guard first else { return }
        _ = Self.gates.withLock { $0.removeValue(forKey: key) }
        opened.signal()
    }

    /// The gate a request names, if it is known.
    static func named(_ key: String?) -> SinkGate? {
        guard let key else { return nil }
        return gates.withLock { $0[key] }
    }

    /// Called by the server's connection once `after` bytes are read: waits until the gate is opened (at most 30 s,
    /// so that a test that never opens it cannot hold the server's thread for good).
    func arrive() {
        state.withLock { $0.reached = true }
        _ = opened.wait(timeout: .now() + 30)
    }
}
