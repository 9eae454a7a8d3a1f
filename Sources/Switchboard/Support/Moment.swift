#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// A reading of the clock `ContinuousClock` reads (time that goes on while the machine sleeps), in nanoseconds.
///
/// `ContinuousClock.Instant` is not frozen: its size is unknown where Switchboard is compiled, so each one an `async`
/// function holds takes an allocation from its task (six in every CurlEngine exchange). An integer sits in the
/// function's frame, and is read from the system's clock without the `Duration` arithmetic of an instant.
struct Moment: Comparable, Sendable {
    private let nanoseconds: Int64

    /// The clock's reading now. Never inlined: one call for every reading, wherever it is taken.
    static var now: Moment {
        @inline(never) get {
            var time = timespec()
            // The clocks `ContinuousClock` reads on each platform.
            #if canImport(Darwin)
            clock_gettime(CLOCK_MONOTONIC_RAW, &time)
            #else
            clock_gettime(CLOCK_BOOTTIME, &time)
            #endif
            return Moment(nanoseconds: Int64(time.tv_sec) &* 1_000_000_000 &+ Int64(time.tv_nsec))
        }
    }

    static func + (moment: Moment, duration: Duration) -> Moment {
        let (seconds, attoseconds) = duration.components
        let (whole, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        // A deadline past what the clock can reach (`.seconds(Int64.max)`, "never") stays at the end of its range.
        guard !overflow else { return Moment(nanoseconds: seconds < 0 ? .min : .max) }
        let (span, spanCarry) = whole.addingReportingOverflow(attoseconds / 1_000_000_000)
        let (sum, carry) = moment.nanoseconds.addingReportingOverflow(span)
        return spanCarry || carry ? Moment(nanoseconds: seconds < 0 ? .min : .max) : Moment(nanoseconds: sum)
    }

    static func - (later: Moment, earlier: Moment) -> Duration {
        .nanoseconds(later.nanoseconds &- earlier.nanoseconds)
    }

    static func < (lhs: Moment, rhs: Moment) -> Bool {
        lhs.nanoseconds < rhs.nanoseconds
    }
}
