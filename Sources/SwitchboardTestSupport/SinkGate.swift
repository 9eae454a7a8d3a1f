import Foundation

/// Runs a test's change (to the file being uploaded, say) once the server has read `after` bytes of an upload to
/// `/sink?gate=KEY`, on the server's own thread, while it reads nothing: the client can have sent at most `after`
/// bytes and what the sockets hold. The server then reads on.
///
/// The change runs where the server stands, not in the test's task: a test that waited for the gate and then made
/// the change needed a thread of Swift's pool in time, and in the suite's first seconds, while every test starts at
/// once on a 2-core machine, none came for over ten seconds, and the client's idle timeout ended the upload first.
public final class SinkGate: Sendable {
    private static let gates = ServerLock<[String: SinkGate]>([:])

    /// The value of the `gate` query item that picks this gate.
    public let key = UUID().uuidString
    /// How many bytes of the body the server reads before it runs the change.
    public let after: Int
    private let change: @Sendable () throws -> Void
    private let state = ServerLock<(reached: Bool, failure: String?)>((false, nil))

    /// A gate that `/sink?gate=\(key)` reaches after `after` bytes, and there runs `change`; it is known to the
    /// server until then, or until `forget()`.
    public init(after: Int, change: @escaping @Sendable () throws -> Void) {
        self.after = after
        self.change = change
        Self.gates.withLock { $0[key] = self }
    }

    /// Whether the server has read `after` bytes and run the change.
    public var isReached: Bool { state.withLock { $0.reached } }

    /// What the change threw, if it did.
    public var failure: String? { state.withLock { $0.failure } }

    /// Makes the gate unknown to the server (for a test that ends before its upload reached it).
    public func forget() {
        _ = Self.gates.withLock { $0.removeValue(forKey: key) }
    }

    /// The gate a request names, if it is known.
    static func named(_ key: String?) -> SinkGate? {
        guard let key else { return nil }
        return gates.withLock { $0[key] }
    }

    /// Called by the server's connection once `after` bytes are read: runs the change, then lets the server read on.
    func arrive() {
        forget()
        var failure: String?
        do {
            try change()
        } catch {
            failure = "\(error)"
        }
        state.withLock { $0 = (true, failure) }
    }
}
