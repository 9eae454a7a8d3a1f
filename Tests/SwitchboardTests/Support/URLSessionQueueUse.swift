import Foundation

/// URLSession on Linux has one work queue for the whole process. A test that holds that queue on purpose (PoolTests'
/// gated read) and a test whose timing rests on it (FaultTests' idle timeout, a timer on that queue) must not
/// overlap: while the one waits, the other's timer cannot fire. Such tests run their bodies through `exclusively`,
/// one at a time; every other test runs beside them as before.
enum URLSessionQueueUse {
    private actor Turns {
        private var busy = false
        private var waiting: [CheckedContinuation<Void, Never>] = []

        func take() async {
            guard busy else {
                busy = true
                return
            }
            // Handed over by `give`, still busy.
            await withCheckedContinuation { waiting.append($0) }
        }

        func give() {
            if waiting.isEmpty { busy = false } else { waiting.removeFirst().resume() }
        }
    }

    private static let turns = Turns()

    /// Runs `body` when no other test that holds or times URLSession's work queue runs.
    static func exclusively<T>(_ body: () async throws -> T) async throws -> T {
        await turns.take()
        do {
            let value = try await body()
            await turns.give()
            return value
        } catch {
            await turns.give()
            throw error
        }
    }
}
