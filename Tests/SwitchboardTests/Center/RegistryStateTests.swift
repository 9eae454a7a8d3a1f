import Testing
@testable import Switchboard

/// The registry's decisions, driven step by step as a value: no center, no tasks, no timers.
@Suite struct RegistryStateTests {
    private func work(_ raw: UInt64, tag: String? = nil) -> (RequestID, AnyRequest) {
        let id = RequestID(rawValue: raw)
        var request = Request { $0.api = "items/\(raw)" }
        request.id = id
        request.tag = tag
        return (id, .single(request))
    }

    @Test func aCancelThatComesBeforeTheTaskStopsItWhenAttached() {
        var state = RegistryState()
        let (id, request) = work(1)
        let scheduleCheck = state.insert(id, request)
        #expect(!scheduleCheck, "no owner: no owner check")
        let found = state.cancel(id)
        #expect(found != nil, "registered work can be cancelled before its task exists")
        #expect(found?.stop == nil)
        let stopNow = state.attach({}, to: id)
        #expect(stopNow, "the task attached after the cancel is stopped at once")
        #expect(state.work(for: id) == nil, "cancelled work is no longer found")
        let wasCancelled = state.finish(id)?.cancelled
        #expect(wasCancelled == true, "the outcome becomes .cancelled, whatever the transfer did")
    }

    @Test func aCancelAfterTheFinishFindsNothing() {
        var state = RegistryState()
        let (id, request) = work(2)
        _ = state.insert(id, request)
        let stopNow = state.attach({}, to: id)
        #expect(!stopNow)
        let wasCancelled = state.finish(id)?.cancelled
        #expect(wasCancelled == false)
        let late = state.cancel(id)
        #expect(late == nil, "finished first: the cancel loses and the outcome stands")
        let attachedLate = state.attach({}, to: id)
        #expect(!attachedLate, "nothing to stop once finished")
    }

    @Test func committedWorkIsOutOfACancelsReach() {
        var state = RegistryState()
        let (id, request) = work(11, tag: "files")
        _ = state.insert(id, request)
        let committed = state.commit(id)
        #expect(committed, "not cancelled: it may commit")
        let cancel = state.cancel(id)
        #expect(cancel == nil, "committed: the cancel finds nothing to stop")
        let cancelAll = state.cancel { _ in true }
        #expect(cancelAll.isEmpty, "nor does a cancel of everything")
        #expect(state.work(for: id) != nil, "still running, and found")
        let entry = state.finish(id)
        #expect(entry?.cancelled == false)
        #expect(entry?.committed == true, "it ends with its own outcome")
    }

    @Test func cancelledWorkCannotCommit() {
        var state = RegistryState()
        let (id, request) = work(12)
        _ = state.insert(id, request)
        let cancel = state.cancel(id)
        #expect(cancel != nil)
        let committed = state.commit(id)
        #expect(!committed, "the cancel came first: it wins")
        let wasCancelled = state.finish(id)?.cancelled
        #expect(wasCancelled == true)
        let notRunning = state.commit(RequestID(rawValue: 13))
        #expect(notRunning, "work that is not running has nothing to refuse")
    }

    @Test func aSecondCancelFindsNothing() {
        var state = RegistryState()
        let (id, request) = work(3)
        _ = state.insert(id, request)
        let stops = Locked(0)
        _ = state.attach({ stops.withLock { $0 += 1 } }, to: id)
        state.cancel(id)?.stop?()
        state.cancel(id)?.stop?()
        #expect(stops.snapshot == 1, "the task is stopped once")
    }

    @Test func workInsertedWithItsSignalIsStoppedThroughIt() {
        var state = RegistryState()
        let (id, request) = work(4)
        let signal = EngineCancellation()
        _ = state.insert(id, request, stop: .signal(signal))
        #expect(!signal.isCancelled)
        state.cancel(id)?.stop?()
        #expect(signal.isCancelled, "the cancel reached the signal given with the work, with no attach step")
        let again = state.cancel(id)
        #expect(again == nil, "and finds nothing the second time")
        let wasCancelled = state.finish(id)?.cancelled
        #expect(wasCancelled == true, "the outcome becomes .cancelled")
    }

    @Test func cancellingByTagReachesOnlyThatTag() {
        var state = RegistryState()
        let tagged = [work(10, tag: "feed"), work(11, tag: "feed"), work(12, tag: "profile"), work(13)]
        for (id, request) in tagged { _ = state.insert(id, request) }
        let found = state.cancel { $0.tag == "feed" }
        #expect(Set(found.compactMap { $0.work.id.rawValue }) == [10, 11])
        #expect(state.work(for: RequestID(rawValue: 12)) != nil)
        #expect(state.work(for: RequestID(rawValue: 13)) != nil)
        let again = state.cancel { $0.tag == "feed" }
        #expect(again.isEmpty, "cancelled work is not cancelled twice")
    }

    @Test func workWithAnOwnerIsWatchedUntilItFinishes() {
        final class Owner {}
        let owner = Owner()
        var state = RegistryState()
        var first = Request { $0.api = "a" }
        first.id = RequestID(rawValue: 20)
        first.owner = owner
        var second = first
        second.id = RequestID(rawValue: 21)
        second.owner = nil
        let firstHasOwner = state.insert(first.id, .single(first))
        let secondHasOwner = state.insert(second.id, .single(second))
        #expect(firstHasOwner, "the registry starts its owner checks for this one")
        #expect(!secondHasOwner)
        #expect(state.hasOwners, "running work still has an owner")
        _ = state.cancel(first.id)
        #expect(!state.hasOwners, "cancelled work needs no watching")
        _ = state.finish(first.id)
        _ = state.finish(second.id)
        #expect(!state.hasOwners, "nothing left to watch")
        withExtendedLifetime(owner) {}
    }

    @Test func anUpdateReplacesTheWorkOnRecordAndHandsBackTheOldOne() {
        var state = RegistryState()
        let (id, original) = work(20, tag: "feed")
        #expect(state.update(id, original) == nil, "nothing on record yet: nothing replaced, nothing inserted")
        #expect(state.work(for: id) == nil)
        _ = state.insert(id, original)
        var merged = Request {
            $0.api = "items/20/merged"
            $0.tag = "feed-merged"
        }
        merged.id = id
        let replaced = state.update(id, .single(merged))
        guard case .single(let old) = replaced, case .single(let now) = state.work(for: id) else {
            Issue.record("expected the original handed back and the merged one on record")
            return
        }
        #expect(old.api == "items/20", "the caller gets the replaced work, to release outside the lock")
        #expect(now.api == "items/20/merged")
        #expect(state.cancel(where: { $0.tag == "feed" }).isEmpty, "the tag is the one of the work on record")
        _ = state.cancel(where: { $0.tag == "feed-merged" })
        #expect(state.work(for: id) == nil, "cancelled by the tag of the work on record")
        let finished = state.finish(id)
        #expect(finished?.cancelled == true, "finish hands back the removed entry")
        #expect(state.finish(id) == nil, "and finds nothing the second time")
    }

    @Test func aFailureIsTakenOnceForRetryAndRunsAgain() {
        var state = RegistryState()
        var memory = RetryMemory()
        let (id, request) = work(30)
        guard case .single(let single) = request else { return }
        memory.remember(id, failure: .single(single), limit: 10)
        let (lookup, _) = state.takeForRetry(id, from: &memory)
        guard case .failed = lookup else {
            Issue.record("the failure should be found, got \(lookup)")
            return
        }
        #expect(state.work(for: id) != nil, "taken and running again, in one step")
        let (second, _) = state.takeForRetry(id, from: &memory)
        guard case .running = second else {
            Issue.record("a retry while it runs should find it running, got \(second)")
            return
        }
        _ = state.finish(id)
        let (third, _) = state.takeForRetry(id, from: &memory)
        guard case .unknown = third else {
            Issue.record("the record was taken; nothing is left, got \(third)")
            return
        }
    }

    @Test func aFailureTakenBackWithAnOwnerIsWatchedAgain() {
        final class Owner {}
        let owner = Owner()
        var state = RegistryState()
        var memory = RetryMemory()
        var request = Request { $0.api = "owned" }
        request.id = RequestID(rawValue: 35)
        request.owner = owner
        memory.remember(request.id, failure: .single(request), limit: 10)
        let (lookup, hasOwner) = state.takeForRetry(request.id, from: &memory)
        guard case .failed = lookup else {
            Issue.record("the failure should be found, got \(lookup)")
            return
        }
        #expect(hasOwner, "work running again with an owner restarts the owner checks")
        #expect(state.hasOwners)
        withExtendedLifetime(owner) {}
    }

    @Test func theOldestOutcomesAreForgottenFirst() {
        var state = RegistryState()
        var memory = RetryMemory()
        for raw in UInt64(40)..<43 { memory.remember(RequestID(rawValue: raw), failure: nil, limit: 2) }
        let (oldest, _) = state.takeForRetry(RequestID(rawValue: 40), from: &memory)
        let (newest, _) = state.takeForRetry(RequestID(rawValue: 42), from: &memory)
        guard case .unknown = oldest, case .succeeded = newest else {
            Issue.record("expected the oldest success forgotten and the newest kept: \(oldest), \(newest)")
            return
        }
    }

    /// Long past the point where the order is compacted, the newest `limit` outcomes are the ones kept.
    @Test func aLongRunKeepsExactlyTheNewestOutcomes() {
        var state = RegistryState()
        var memory = RetryMemory()
        for raw in UInt64(1000)..<3000 { memory.remember(RequestID(rawValue: raw), failure: nil, limit: 100) }
        var kept: [UInt64] = []
        for raw in UInt64(1000)..<3000 {
            if case .succeeded = state.takeForRetry(RequestID(rawValue: raw), from: &memory).0 { kept.append(raw) }
        }
        #expect(kept == Array(2900..<3000))
    }

    @Test func aFailureReplacesTheSuccessOfTheSameIdentifierAndTheOldestFailureGoesFirst() {
        var state = RegistryState()
        var memory = RetryMemory()
        let (id, request) = work(60)
        guard case .single(let single) = request else { return }
        memory.remember(id, failure: nil, limit: 2)
        memory.remember(id, failure: .single(single), limit: 2)
        for raw in UInt64(61)..<63 {
            memory.remember(RequestID(rawValue: raw), failure: .single(single), limit: 2)
        }
        let (first, _) = state.takeForRetry(id, from: &memory)
        let (last, _) = state.takeForRetry(RequestID(rawValue: 62), from: &memory)
        guard case .unknown = first, case .failed = last else {
            Issue.record(
                "expected the first failure forgotten (not its earlier success) and the last kept: \(first), \(last)")
            return
        }
    }

    @Test func nothingIsRememberedWithALimitOfZero() {
        var state = RegistryState()
        var memory = RetryMemory()
        memory.remember(RequestID(rawValue: 50), failure: nil, limit: 0)
        let (lookup, _) = state.takeForRetry(RequestID(rawValue: 50), from: &memory)
        guard case .unknown = lookup else {
            Issue.record("expected nothing remembered, got \(lookup)")
            return
        }
    }
}

/// The registry's table against a dictionary: the same values after any sequence of sets, changes and removals,
/// with identifiers in sequence (as one stripe gets them: every sixteenth), scattered, and colliding at one home.
@Suite struct IDTableTests {
    static let sequences: [[UInt64]] = [
        (0..<600).map { (index: UInt64) in index * 16 + 3 },
        (0..<600).map { (index: UInt64) in index &* 0x2545_F491_4F6C_DD1D },
        (0..<600).map { (index: UInt64) in index << 58 },
    ]

    @Test(arguments: sequences)
    func theTableReadsAsADictionaryDoes(ids: [UInt64]) {
        var table = IDTable<String>()
        var model: [UInt64: String] = [:]
        var generator = SystemRandomNumberGenerator()
        func check() {
            #expect(table.count == model.count)
            for raw in ids {
                #expect(table[RequestID(rawValue: raw)] == model[raw])
                #expect(table.contains(RequestID(rawValue: raw)) == (model[raw] != nil))
            }
        }
        for (step, raw) in ids.enumerated() {
            table.set("v\(raw)", for: RequestID(rawValue: raw))
            model[raw] = "v\(raw)"
            // Remove about a third as it goes, some at once and some later, and change some in place.
            if step % 3 == 2, let victim = model.keys.randomElement(using: &generator) {
                #expect(table.remove(RequestID(rawValue: victim)) == model.removeValue(forKey: victim))
            }
            if step % 5 == 0, let changed = model.keys.randomElement(using: &generator) {
                #expect(table.modify(RequestID(rawValue: changed)) { $0 += "!" } != nil)
                model[changed]! += "!"
            }
            if step % 97 == 0 { check() }
        }
        check()
        #expect(table.remove(RequestID(rawValue: UInt64.max)) == nil)
        #expect(table.modify(RequestID(rawValue: UInt64.max)) { _ in 1 } == nil)
        table.modifyAll { $0 += "*" }
        for key in model.keys { model[key]! += "*" }
        #expect(table.contains { $0.hasSuffix("!*") } == model.values.contains { $0.hasSuffix("!*") })
        for raw in ids.shuffled() where model[raw] != nil {
            #expect(table.remove(RequestID(rawValue: raw)) == model.removeValue(forKey: raw))
        }
        check()
        #expect(table.count == 0)
    }
}
