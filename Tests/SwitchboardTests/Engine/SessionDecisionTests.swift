import Testing
@testable import Switchboard

/// URLSessionEngine's decisions at the end of a task and at a redirect, as values: no session, no sockets.
@Suite struct SessionDecisionTests {
    private func completion(
        stopped: Bool = false, challenged: Bool = false, redirects: Int = 0, heldRedirect: Bool = false,
        taskFailed: Bool = false
    ) -> SessionDecision.Completion {
        SessionDecision.completion(
            stopped: stopped, challenged: challenged, redirects: redirects, limit: RedirectPolicy.maximum,
            heldRedirect: heldRedirect, taskFailed: taskFailed)
    }

    @Test func aStopWinsOverEverything() {
        #expect(completion(stopped: true) == .stopped)
        #expect(
            completion(
                stopped: true, challenged: true, redirects: RedirectPolicy.maximum + 1, heldRedirect: true,
                taskFailed: true)
                == .stopped)
    }

    @Test func aChallengedFourOhOneIsTheAnswerEvenWhenTheTaskFailed() {
        // On Linux the task of a refused Basic challenge ends with an error (or never, which the engine prevents):
        // the 401 is what the caller gets, as on CurlEngine.
        #expect(completion(challenged: true, taskFailed: true) == .challenged)
        #expect(completion(challenged: true, redirects: RedirectPolicy.maximum + 1) == .challenged)
    }

    @Test func passingTheRedirectLimitFails() {
        #expect(completion(redirects: RedirectPolicy.maximum) == .answered)
        #expect(completion(redirects: RedirectPolicy.maximum + 1) == .tooManyRedirects)
        #expect(completion(redirects: RedirectPolicy.maximum + 1, heldRedirect: true) == .tooManyRedirects)
    }

    @Test func aHeldRedirectIsResentUnlessTheTaskFailed() {
        #expect(completion(heldRedirect: true) == .resend)
        #expect(completion(heldRedirect: true, taskFailed: true) == .failed)
    }

    @Test func otherwiseTheTaskErrorOrTheResponseDecides() {
        #expect(completion(taskFailed: true) == .failed)
        #expect(completion() == .answered)
    }

    /// A redirect that keeps the body is re-sent by hand; one that drops it (as browsers do) is followed.
    @Test func aRedirectIsHeldWhenItKeepsABody() {
        for status in [307, 308] {
            for method: HTTPMethod in [.post, .put] {
                #expect(
                    SessionDecision.redirect(
                        status: status, redirects: 1, limit: RedirectPolicy.maximum, hasBody: true, method: method)
                        == .holdToResend)
                #expect(
                    SessionDecision.redirect(
                        status: status, redirects: 1, limit: RedirectPolicy.maximum, hasBody: false, method: method)
                        == .follow)
            }
        }
        for status in [301, 302] {
            #expect(
                SessionDecision.redirect(
                    status: status, redirects: 1, limit: RedirectPolicy.maximum, hasBody: true, method: .put)
                    == .holdToResend,
                "a PUT keeps its method and body")
            #expect(
                SessionDecision.redirect(
                    status: status, redirects: 1, limit: RedirectPolicy.maximum, hasBody: true, method: .post)
                    == .follow,
                "a POST becomes a GET without body")
        }
        for method: HTTPMethod in [.post, .put] {
            #expect(
                SessionDecision.redirect(
                    status: 303, redirects: 1, limit: RedirectPolicy.maximum, hasBody: true, method: method) == .follow,
                "a 303 is followed with a GET")
        }
    }

    @Test func aRedirectPastTheLimitIsNotFollowed() {
        // A policy's own limit.
        #expect(SessionDecision.redirect(status: 302, redirects: 3, limit: 3, hasBody: false, method: .get) == .follow)
        #expect(SessionDecision.redirect(status: 302, redirects: 4, limit: 3, hasBody: false, method: .get) == .refuse)
        #expect(
            SessionDecision.completion(
                stopped: false, challenged: false, redirects: 4, limit: 3, heldRedirect: false, taskFailed: false)
                == .tooManyRedirects)
        #expect(
            SessionDecision.redirect(
                status: 302, redirects: RedirectPolicy.maximum, limit: RedirectPolicy.maximum, hasBody: false,
                method: .get)
                == .follow
        )
        #expect(
            SessionDecision.redirect(
                status: 302, redirects: RedirectPolicy.maximum + 1, limit: RedirectPolicy.maximum, hasBody: false,
                method: .get)
                == .refuse)
        #expect(
            SessionDecision.redirect(
                status: 307, redirects: RedirectPolicy.maximum + 1, limit: RedirectPolicy.maximum, hasBody: true,
                method: .post)
                == .refuse)
    }
}
