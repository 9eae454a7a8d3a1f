import Testing
@testable import Switchboard

/// The registry's stripes: work whose identifiers fall in different stripes is found, counted and cancelled as if
/// it were kept in one place.
@Suite struct RegistryTests {
    private func request(_ raw: UInt64, tag: String?) -> AnyRequest {
        var request = Request { $0.api = "items/\(raw)" }
        request.id = RequestID(rawValue: raw)
        request.tag = tag
        return .single(request)
    }

    @Test func workInEveryStripeIsCountedFoundAndCancelledByTag() {
        let registry = Registry()
        // Forty consecutive identifiers: every stripe holds some, and each stripe both tags.
        let ids = (UInt64(1_000)..<1_040).map { RequestID(rawValue: $0) }
        for (index, id) in ids.enumerated() {
            registry.insert(id, request(id.rawValue, tag: index % 2 == 0 ? "feed" : "profile"))
        }
        #expect(registry.count == 40)
        let cancelled = registry.cancel(tag: "feed")
        #expect(Set(cancelled.compactMap(\.id)) == Set(ids.enumerated().filter { $0.offset % 2 == 0 }.map(\.element)))
        for (index, id) in ids.enumerated() {
            #expect((registry.work(for: id) == nil) == (index % 2 == 0), "cancelled work is no longer found: \(id)")
        }
        #expect(registry.count == 40, "cancelled work stays registered until it finishes")
        for (index, id) in ids.enumerated() {
            #expect(registry.finish(id) == (index % 2 == 0), "finish tells whether \(id) was cancelled")
        }
        #expect(registry.count == 0)
        #expect(registry.cancelAll().isEmpty)
    }

    @Test func workStartedAndFinishedOnManyThreadsLeavesNothingBehind() async {
        let registry = Registry()
        let perTask: UInt64 = 500
        await withTaskGroup(of: Int.self) { group in
            for task in UInt64(0)..<8 {
                group.addTask {
                    var cancelledSeen = 0
                    for raw in (task * perTask)..<((task + 1) * perTask) {
                        let id = RequestID(rawValue: 10_000 + raw)
                        registry.insert(id, request(id.rawValue, tag: "burst"))
                        registry.update(id, request(id.rawValue, tag: "burst"))
                        if registry.finish(id) { cancelledSeen += 1 }
                    }
                    return cancelledSeen
                }
            }
            // Cancels racing the bursts: whatever they reach must finish as cancelled, and nothing is left.
            group.addTask {
                var cancelled = 0
                for _ in 0..<50 {
                    cancelled += registry.cancel(tag: "burst").count
                    await Task.yield()
                }
                return -cancelled
            }
            var balance = 0
            for await value in group { balance += value }
            #expect(balance == 0, "every cancel that found work was seen by that work's finish")
        }
        #expect(registry.count == 0)
    }
}
