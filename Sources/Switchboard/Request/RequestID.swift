/// Identifies one request or one group sent through a `Center`; use it to cancel, look up or retry.
///
/// Identifiers are unique within the process, are assigned before anything starts, and stay the same across the
/// retries of a request, so an identifier you hold always reaches the work it names.
public struct RequestID: Hashable, Sendable, Comparable, CustomStringConvertible {
    /// The number behind the identifier; increasing in the order requests were sent.
    public let rawValue: UInt64

    /// Wraps a number; identifiers are normally made by the `Center`.
    public init(rawValue: UInt64) {
        self.rawValue = rawValue
    }

    /// `#` followed by the number, as console logs print it.
    public var description: String { "#\(rawValue)" }

    /// Orders identifiers by the time they were made.
    public static func < (lhs: RequestID, rhs: RequestID) -> Bool {
        lhs.rawValue < rhs.rawValue
    }

    private static let counter = Locked<UInt64>(0)

    /// The next identifier of the process.
    static func next() -> RequestID {
        RequestID(
            rawValue: counter.withLock {
                $0 += 1; return $0
            })
    }
}
