import Foundation

/// Where an engine puts a streamed response body: piece by piece as it arrives, with backpressure.
///
/// The center sets `EngineRequest.receiver` for a stream (`Center.stream(_:)`) on an engine whose
/// `Engine.streamsResponses` is `true`. The engine then:
/// 1. calls `accepts(_:)` with the head of each response whose body it would return (not with `1xx` heads). When it
///    answers `false` (an error status, a redirect), the engine collects that body into `EngineResponse.body` as
///    usual; the center handles it as any response (a `401` refreshes the credential and sends again).
/// 2. after an accepted head, gives each chunk of the body to `offer(_:resume:)` instead of collecting it. When
///    the consumer's buffer is full, `offer` does not take the chunk and answers `false`: the engine stops reading
///    (libcurl pauses the transfer) and offers the same chunk again once `resume` has been called. An engine that
///    cannot stop reading fails the exchange with `overflow()` instead, so that memory stays bounded.
/// 3. returns from `perform` when the body has ended, with an empty `EngineResponse.body`, or throws.
///
/// Every method may be called from any thread, one call at a time per exchange.
public final class BodyReceiver: Sendable {
    let channel: any BodyConsumer

    init(_ channel: any BodyConsumer) {
        self.channel = channel
    }

    /// Whether the body of the response with this head goes to the receiver (`true`), or into
    /// `EngineResponse.body` (`false`). A redirect's head (3xx) is never accepted.
    public func accepts(_ head: EngineResponse) -> Bool {
        channel.open(head)
    }

    /// Whether `accepts(_:)` would take a head with this status now: the built-in engines keep a stream's cookies
    /// before its reader hears of it.
    func wouldAccept(status: Int) -> Bool {
        channel.wouldOpen(status: status)
    }

    /// Offers the next chunk of an accepted body. `true`: taken. `false`: the consumer's buffer is full and the
    /// chunk was not taken; offer it again after `resume` is called, which happens once, from another thread, when
    /// there is room (or the stream ended: the exchange is then being cancelled).
    public func offer(_ chunk: Data, resume: @escaping @Sendable () -> Void) -> Bool {
        channel.offer(chunk, resume: resume)
    }

    /// The error to fail an exchange with when the engine cannot stop reading and `offer` answered `false`:
    /// `HTTPError.Code.streamOverflow`, naming the buffer's size.
    public func overflow() -> HTTPError {
        HTTPError(
            .streamOverflow,
            "the stream's consumer fell more than \(channel.limit) bytes behind, and the engine cannot pause the "
                + "transfer (read faster, raise Request.streamBufferSize, or use CurlEngine, which pauses)")
    }
}

/// Who reads what a `BodyReceiver` takes: the reader of a stream (`StreamChannel`), which the engines do not name.
protocol BodyConsumer: AnyObject, Sendable {
    /// The most bytes it holds for its reader.
    var limit: Int { get }
    /// Whether the body of the response with this head goes to the reader; the first accepted head opens it.
    func open(_ head: EngineResponse) -> Bool
    /// Whether `open` would accept a head with this status now.
    func wouldOpen(status: Int) -> Bool
    /// Takes a chunk, or answers `false` when full and calls `resume` once there is room.
    func offer(_ chunk: Data, resume: @escaping @Sendable () -> Void) -> Bool
}
