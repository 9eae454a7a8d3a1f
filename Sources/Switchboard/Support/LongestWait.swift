extension Duration {
    /// The longest timeout or wait Switchboard keeps, about 31.7 years (10⁹ seconds): a longer one is kept as this,
    /// which is the same in practice. Longer ones stopped the process: Swift's `Task.sleep` and `Clock.sleep` trap
    /// on a wait near `Int64.max` seconds, as do URLSession on Linux and CurlEngine converting a timeout to
    /// milliseconds.
    static let longestWait = Duration.seconds(1_000_000_000)

    /// This duration, or `longestWait` when longer.
    var boundedAsWait: Duration { min(self, .longestWait) }
}
