/// A named base URL (an environment, or a back end of its own) that requests and endpoints pick by name, so that the
/// URL behind a name can change at run time.
///
/// ```swift
/// extension Node {
///     static let payment: Node = "payment"
///     static let cdn: Node = "cdn"
/// }
/// center.setup { config in
///     config.server = "https://api.example.com/v1/"              // the default node
///     config.nodes[.payment] = "https://pay.example.com/"
/// }
/// center.setNode(.payment, to: "https://pay.staging.example.com/")  // switch environments at run time
/// center.send { $0.node = .payment; $0.api = "charges" }
/// ```
public struct Node: Hashable, Sendable, ExpressibleByStringLiteral, CustomStringConvertible {
    /// The node's name.
    public let name: String

    /// A node by name.
    public init(_ name: String) {
        self.name = name
    }

    /// A node by name, from a literal.
    public init(stringLiteral value: String) {
        self.init(value)
    }

    /// The center's own `server`.
    public static let `default`: Node = "default"

    /// The name.
    public var description: String { name }
}
