/// Holds a transfer's body to a speed limit, chunk by chunk, as a value without I/O.
///
/// libcurl's own receive limit (CURLOPT_MAX_RECV_SPEED_LARGE) is checked only between its read loops, and one loop
/// reads up to 100 buffers while the socket has data: on a fast link a body of a megabyte arrived at full speed
/// whatever the limit. So `CurlTransfer` asks this before taking each chunk; a chunk that would run ahead of the
/// limit pauses the transfer (libcurl keeps the chunk and stops reading the socket) until it is due.
struct ReceivePacer {
    /// The limit, in bytes per second.
    let rate: Int64
    /// What may arrive at once before the limit applies: a tenth of a second's worth, at most 16 KiB.
    let burst: Int64
    /// When the first chunk arrived.
    private(set) var start: ContinuousClock.Instant?
    /// Bytes taken so far.
    private(set) var taken: Int64 = 0

    init(rate: Int64) {
        self.rate = max(1, rate)
        burst = min(16 << 10, max(1, self.rate / 10))
    }

    /// Whether a chunk of `count` bytes arriving `now` may be taken: `nil` when it may (and it is counted), else
    /// when it is due.
    mutating func admit(_ count: Int, at now: ContinuousClock.Instant) -> ContinuousClock.Instant? {
        let start = start ?? now
        self.start = start
        let after = taken + Int64(count)
        let due = start + .seconds(Double(max(0, after - burst)) / Double(rate))
        guard due <= now else { return due }
        taken = after
        return nil
    }
}
