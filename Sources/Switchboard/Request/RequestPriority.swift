/// Which requests start first when a center limits the requests in flight (`CenterConfiguration.maxRequestsInFlight`):
/// a higher priority first, and first come first served within one. Any number will do; `.high`, `.normal` (the
/// default) and `.low` are 1, 0 and -1.
///
/// ```swift
/// center.setup { $0.maxRequestsInFlight = 4 }
/// center.send { $0.api = "feed"; $0.priority = .high }
/// center.send { $0.api = "thumbnails/7"; $0.priority = .low }
/// ```
public struct RequestPriority: Sendable, Hashable, Comparable, ExpressibleByIntegerLiteral {
    /// The priority as a number: higher starts first.
    public var value: Int

    /// Before every `.normal` request.
    public static let high = RequestPriority(1)
    /// The default.
    public static let normal = RequestPriority(0)
    /// After every `.normal` request.
    public static let low = RequestPriority(-1)

    /// A priority of this number.
    public init(_ value: Int) { self.value = value }

    /// A priority of this number, written as a literal (`request.priority = 5`).
    public init(integerLiteral value: Int) { self.value = value }

    public static func < (lhs: RequestPriority, rhs: RequestPriority) -> Bool { lhs.value < rhs.value }
}
