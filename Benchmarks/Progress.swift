import Foundation

/// What the benchmark is doing, on standard error, so that a run shows its work while standard output keeps the
/// tables: the section, the measurements it has taken, the time it has run, and about how long is left. On a
/// terminal one line updates in place; otherwise (a log, CI) a plain line at the start and end of each section and
/// at most one every 10 seconds between.
///
/// The estimate adds up what each section took in a run on a 2-core machine (`Section.seconds`), less what the current
/// one has run so far: it says "about", and a faster or busier machine moves it.
final class Progress: @unchecked Sendable {
    // Safety: every stored property is read and written only under `lock`.
    private let lock = NSLock()
    private var sections: [Section] = []
    private var mode = Mode.standard
    private var current = 0
    private var started = ContinuousClock.now
    private var runStarted = ContinuousClock.now
    private var measurements = 0
    private var lastLine = ContinuousClock.now
    private let isTerminal = isatty(STDERR_FILENO) == 1

    static let shared = Progress()

    /// A part of the run, with what it took here in each mode.
    struct Section {
        let name: String
        /// Seconds in a `--quick`, default and `--full` run, in that order.
        let seconds: (quick: Int, standard: Int, full: Int)
    }

    /// The sections the run will go through, in order, and the mode whose durations estimate what is left.
    func plan(_ sections: [Section], mode: Mode) {
        lock.withLock {
            (self.sections, self.mode) = (sections, mode)
            runStarted = .now
        }
    }

    /// Starts the named section (one of those planned).
    func begin(_ name: String) {
        let line = lock.withLock { () -> String in
            current = sections.firstIndex { $0.name == name } ?? current
            started = .now
            measurements = 0
            return statusLine()
        }
        write(line, final: !isTerminal)
    }

    /// One measurement taken (a round of a contender, a child process's case).
    func tick() {
        let line = lock.withLock { () -> String? in
            measurements += 1
            guard isTerminal || ContinuousClock.now - lastLine >= .seconds(10) else { return nil }
            lastLine = .now
            return statusLine()
        }
        if let line { write(line, final: !isTerminal) }
    }

    /// Ends the current section, saying what it took.
    func end() {
        let line = lock.withLock { () -> String in
            let name = sections.indices.contains(current) ? sections[current].name : "?"
            return "[\(current + 1)/\(sections.count)] \(name): done in \(Self.format(ContinuousClock.now - started))"
        }
        write(line, final: true)
    }

    /// The whole run's time, once it has ended.
    func finish() {
        let line = lock.withLock { "benchmark done in \(Self.format(ContinuousClock.now - runStarted))" }
        write(line, final: true)
    }

    private func statusLine() -> String {
        guard sections.indices.contains(current) else { return "" }
        let section = sections[current]
        let elapsed = ContinuousClock.now - started
        let expected = sections[current...].map { section in
            Duration.seconds(mode.pick(section.seconds.quick, section.seconds.standard, section.seconds.full))
        }
        let left = max(.zero, expected.reduce(.zero, +) - elapsed)
        return "[\(current + 1)/\(sections.count)] \(section.name): \(measurements) measurements, "
            + "\(Self.format(elapsed)); about \(Self.format(left)) left in the run"
    }

    private func write(_ line: String, final: Bool) {
        guard !line.isEmpty else { return }
        let text = isTerminal ? "\r\u{1B}[K" + line + (final ? "\n" : "") : line + "\n"
        FileHandle.standardError.write(Data(text.utf8))
    }

    static func format(_ duration: Duration) -> String {
        let seconds = Int(duration.seconds.rounded())
        return seconds < 60 ? "\(seconds) s" : "\(seconds / 60) min \(seconds % 60) s"
    }
}

/// How long a run is: `--quick` (CI), the default (a few minutes), `--full` (every figure of the README).
enum Mode {
    case quick, standard, full

    /// The one of three values (for `--quick`, the default and `--full`) that belongs to this mode.
    func pick<T>(_ quick: T, _ standard: T, _ full: T) -> T {
        switch self {
        case .quick: quick
        case .standard: standard
        case .full: full
        }
    }
}
