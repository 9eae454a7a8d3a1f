import Testing
@testable import Switchboard

/// The rule by which CurlEngine's worker is woken: only when it waits, once for whatever comes while it does, and it
/// never waits with something in its inbox.
@Suite struct CurlInboxTests {
    @Test func aPostWakesTheWorkerOnlyWhenItWaits() {
        var inbox = CurlInbox<Int>()
        #expect(inbox.post { $0.starts.append(1) } == false, "the worker is awake: it takes the inbox before it waits")
        #expect(inbox.wait(stopSeen: false) == false, "something came since it took the inbox: it must not wait")
        inbox.starts.removeAll()  // taken
        #expect(inbox.wait(stopSeen: false) == true)
        #expect(inbox.post { $0.starts.append(2) } == true, "it waits: the first post wakes it")
        #expect(inbox.post { $0.cancels.append(2) } == false, "and the next ones need not, it is being woken")
        #expect(inbox.starts == [2] && inbox.cancels == [2])
    }

    @Test func aWorkerWokenBySomethingElseIsNotWokenAgain() {
        var inbox = CurlInbox<Int>()
        #expect(inbox.wait(stopSeen: false) == true)
        // libcurl's sockets end the wait: the worker takes the (empty) inbox.
        var starts: [Int] = []
        var cancels: [Int] = []
        var resumes: [Int] = []
        #expect(inbox.take(&starts, &cancels, &resumes) == false)
        #expect(inbox.post { $0.starts.append(1) } == false, "it is awake and takes the inbox before it waits")
        #expect(inbox.wait(stopSeen: false) == false)
        #expect(inbox.take(&starts, &cancels, &resumes) == false)
        #expect(starts == [1] && inbox.starts.isEmpty)
    }

    @Test func theWorkerDoesNotWaitWithAnythingInItsInbox() {
        for add: (inout CurlInbox<Int>) -> Void in [
            { $0.starts.append(1) }, { $0.cancels.append(1) }, { $0.resumes.append(1) }, { $0.stop = true },
        ] {
            var inbox = CurlInbox<Int>()
            _ = inbox.post(add)
            #expect(inbox.wait(stopSeen: false) == false)
            #expect(inbox.waiting == false)
        }
    }

    @Test func aStopTheWorkerHasSeenLetsItWaitForItsLastTransfers() {
        var inbox = CurlInbox<Int>()
        #expect(inbox.wait(stopSeen: false) == true)
        #expect(inbox.post { $0.stop = true } == true, "a stop wakes a waiting worker")
        #expect(inbox.wait(stopSeen: false) == false, "a stop it has not seen keeps it awake")
        #expect(inbox.wait(stopSeen: true) == true, "once seen, it waits for its running transfers to end")
    }
}
