/// What a `SessionTransfer` does at each turn, decided as values without I/O (the transfer holds the state under
/// its lock and does what these say).
enum SessionDecision {
    /// What a finished task means for the exchange. The order is the rule: a stop (cancel, deadline, a failure the
    /// transfer raised) wins over everything; then a `401` that URLSession turned into an authentication challenge
    /// (Linux would otherwise wait forever, or report a bare error), which is the answer; then too many redirects;
    /// then a `307`/`308` held back to be re-sent with its body, unless the task failed; then the task's own error;
    /// and only then the response.
    enum Completion: Equatable {
        /// Fail with the reason the transfer was stopped; what arrived is dropped from the sink.
        case stopped
        /// The `401` is the answer, with the body that came before the challenge.
        case challenged
        /// Fail: the redirect limit was passed.
        case tooManyRedirects
        /// Send the held-back redirect, with the original method and body.
        case resend
        /// Fail with the task's error; a resumable download keeps what arrived.
        case failed
        /// The response is the answer (or the next segment of a download follows).
        case answered
    }

    /// `limit`: the most redirects the request follows (`RedirectPolicy.maxRedirects`).
    static func completion(
        stopped: Bool, challenged: Bool, redirects: Int, limit: Int, heldRedirect: Bool, taskFailed: Bool
    ) -> Completion {
        if stopped { return .stopped }
        if challenged { return .challenged }
        if redirects > limit { return .tooManyRedirects }
        if heldRedirect && !taskFailed { return .resend }
        if taskFailed { return .failed }
        return .answered
    }

    /// What to do with a redirect URLSession proposes (after the URL and origin checks).
    enum Redirect: Equatable {
        /// Let URLSession follow it.
        case follow
        /// Hold it: URLSession would drop the body of a `307`/`308`, or send a stream body it has read already, so
        /// the transfer re-sends it by hand when the task completes.
        case holdToResend
        /// Do not follow: the redirect limit is passed (the completion reports it).
        case refuse
    }

    /// - Parameters:
    ///   - redirects: how many redirects the exchange has followed, counting this one; `limit`, how many it may.
    ///   - hasBody: whether the request being redirected still has a body.
    ///   - method: its method.
    static func redirect(status: Int, redirects: Int, limit: Int, hasBody: Bool, method: HTTPMethod) -> Redirect {
        if redirects > limit { return .refuse }
        if hasBody && Redirects.keepsBody(status: status, method: method) { return .holdToResend }
        return .follow
    }
}
