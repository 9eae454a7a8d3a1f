import Testing
@testable import Switchboard

/// URLSessionEngine's decisions at the end of a task and at a redirect, as values: no session, no sockets.
@Suite struct SessionDecisionTests {
    private func completion(
        stopped: Bool = false, challenged: Bool = false, redirects: Int = 0, heldRedirect: Bool = false,
        taskFailed: Bool = false
    ) -> SessionDecision.Completion {
        SessionDecision.completion(
            stopped: stopped, challenged: challenged, redirects: redirects, heldRedirect: heldRedirect,
            taskFailed: taskFailed)
    }

    @Test func aStopWinsOverEverything() {
        #expect(completion(stopped: true) == .stopped)
        #expect(
            completion(
                stopped: true, challenged: true, redirects: Redirects.maximum + 1, heldRedirect: true, taskFailed: true)
                == .stopped)
    }

    @Test func aChallengedFourOhOneIsTheAnswerEvenWhenTheTaskFailed() {
        // On Linux the task of a refused Basic challenge ends with an error (or never, which the engine prevents):
        // the 401 is what the caller gets, as on CurlEngine.
        #expect(completion(challenged: true, taskFailed: true) == .challenged)
        #expect(completion(challenged: true, redirects: Redirects.maximum + 1) == .challenged)
    }

    @Test func passingTheRedirectLimitFails() {
        #expect(completion(redirects: Redirects.maximum) == .answered)
        #expect(completion(redirects: Redirects.maximum + 1) == .tooManyRedirects)
        #expect(completion(redirects: Redirects.maximum + 1, heldRedirect: true) == .tooManyRedirects)
    }

    @Test func aHeldRedirectIsResentUnlessTheTaskFailed() {
        #expect(completion(heldRedirect: true) == .resend)
        #expect(completion(heldRedirect: true, taskFailed: true) == .failed)
    }

    @Test func otherwiseTheTaskErrorOrTheResponseDecides() {
        #expect(completion(taskFailed: true) == .failed)
        #expect(completion() == .answered)
    }

    @Test func aRedirectWithABodyIsHeldOnlyForThreeOhSevenAndThreeOhEight() {
        for status in [307, 308] {
            #expect(SessionDecision.redirect(status: status, redirects: 1, hasBody: true) == .holdToResend)
            #expect(SessionDecision.redirect(status: status, redirects: 1, hasBody: false) == .follow)
        }
        for status in [301, 302, 303] {
            #expect(
                SessionDecision.redirect(status: status, redirects: 1, hasBody: true) == .follow,
                "URLSession turns these into a GET without body, as browsers do")
        }
    }

    @Test func aRedirectPastTheLimitIsNotFollowed() {
        #expect(SessionDecision.redirect(status: 302, redirects: Redirects.maximum, hasBody: false) == .follow)
        #expect(SessionDecision.redirect(status: 302, redirects: Redirects.maximum + 1, hasBody: false) == .refuse)
        #expect(SessionDecision.redirect(status: 307, redirects: Redirects.maximum + 1, hasBody: true) == .refuse)
    }
}
