import Foundation

/// One canned answer: what a `StubEngine` replies with, and what an endpoint may declare as its stub
/// (`Endpoint.stub`).
public struct StubReply: Sendable {
    /// The status code.
    public var status: Int
    /// The header fields.
    public var headers: HTTPHeaders
    /// The body.
    public var body: Data
    /// How long to wait before answering, on the stub's clock.
    public var delay: Duration
    /// When set, the exchange fails with this error (after the delay) instead of answering.
    public var error: (any Error)?

    /// Creates a reply.
    public init(
        status: Int = 200, headers: HTTPHeaders = [:], body: Data = Data(), delay: Duration = .zero,
        error: (any Error)? = nil
    ) {
        self.status = status
        self.headers = headers
        self.body = body
        self.delay = delay
        self.error = error
    }

    /// A reply with this status and no body.
    public static func status(_ status: Int, headers: HTTPHeaders = [:]) -> StubReply {
        StubReply(status: status, headers: headers)
    }

    /// A JSON body, with `Content-Type: application/json`.
    public static func json(_ json: JSON, status: Int = 200, headers: HTTPHeaders = [:]) -> StubReply {
        var headers = headers
        if headers["Content-Type"] == nil { headers["Content-Type"] = "application/json" }
        return StubReply(status: status, headers: headers, body: Data(json.description.utf8))
    }

    /// A text body, with `Content-Type: text/plain; charset=utf-8`.
    public static func string(_ text: String, status: Int = 200, headers: HTTPHeaders = [:]) -> StubReply {
        var headers = headers
        if headers["Content-Type"] == nil { headers["Content-Type"] = "text/plain; charset=utf-8" }
        return StubReply(status: status, headers: headers, body: Data(text.utf8))
    }

    /// A body of raw bytes.
    public static func data(_ data: Data, status: Int = 200, headers: HTTPHeaders = [:]) -> StubReply {
        StubReply(status: status, headers: headers, body: data)
    }

    /// A failed exchange: the engine throws this error (a `URLError`, say).
    public static func failure(_ error: any Error) -> StubReply {
        StubReply(error: error)
    }

    /// The same reply, after a delay.
    public func delayed(by delay: Duration) -> StubReply {
        var copy = self
        copy.delay = delay
        return copy
    }
}
