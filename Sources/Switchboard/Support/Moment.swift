/// A reading of `ContinuousClock`, as the time since a fixed earlier reading.
///
/// `ContinuousClock.Instant` is not frozen: its size is unknown where Switchboard is compiled, so each one an `async`
/// function holds takes an allocation from its task (six in every CurlEngine exchange). A `Duration` is frozen, and
/// sits in the function's frame.
struct Moment: Comparable, Sendable {
    private let sinceOrigin: Duration

    private static let origin = ContinuousClock.now

    /// The clock's reading now. Never inlined: in an `async` function, the clock's instants it reads would take
    /// allocations from the task again.
    static var now: Moment {
        @inline(never) get { Moment(sinceOrigin: origin.duration(to: .now)) }
    }

    static func + (moment: Moment, duration: Duration) -> Moment {
        Moment(sinceOrigin: moment.sinceOrigin + duration)
    }

    static func - (later: Moment, earlier: Moment) -> Duration {
        later.sinceOrigin - earlier.sinceOrigin
    }

    static func < (lhs: Moment, rhs: Moment) -> Bool {
        lhs.sinceOrigin < rhs.sinceOrigin
    }
}
