import Foundation

/// When and how soon a failed request is sent again.
///
/// Retries wait with exponential backoff (with jitter, capped), or as long as the server's `Retry-After` says when
/// that is within `maxRetryAfter`. By default only idempotent methods are retried, only for statuses that say "try
/// again" (408, 429, 500, 502, 503, 504) and for transport failures (timed out, cannot connect, connection lost).
/// A cancelled request is never retried; decoding and business errors are not, unless you add their codes.
///
/// ```swift
/// center.setup { $0.retryPolicy = .default }              // 3 attempts in all
/// center.send { $0.api = "feed"; $0.retryCount = 5 }      // this one: 6 attempts
/// center.send { request in
///     request.api = "orders"
///     request.method = .post
///     request.retry = RetryPolicy(maxAttempts: 3, methods: [.post])   // POST retried, when you know it is safe
/// }
/// ```
///
/// The request keeps its `RequestID` across attempts, so `cancel` reaches it during a wait and ends it at once.
/// `onError` and the failure callbacks see only the final error; `Response.attempts` says how many it took.
public struct RetryPolicy: Sendable, Hashable {
    /// Attempts in all, the first included: 1 never retries.
    public var maxAttempts: Int
    /// The wait before the first retry, before jitter.
    public var initialDelay: Duration
    /// How much each wait grows over the previous one.
    public var multiplier: Double
    /// The longest wait between attempts, before jitter.
    public var maxDelay: Duration
    /// How much of each wait is random, from 0 (none) to 1: a wait of `d` becomes one between `d × (1 − jitter)`
    /// and `d`, so that clients that failed together do not retry together.
    public var jitter: Double
    /// The longest `Retry-After` to honour; a server asking for a longer wait gets the error reported instead.
    public var maxRetryAfter: Duration
    /// The methods that may be retried; idempotent ones by default.
    public var methods: Set<HTTPMethod>
    /// The statuses that may be retried.
    public var statusCodes: Set<Int>
    /// The error codes (other than `.unacceptableStatus`) that may be retried. `.cancelled` never is.
    public var errorCodes: Set<HTTPError.Code>
    /// The name of the header that carries an idempotency key (`"Idempotency-Key"`, as the IETF draft and Stripe
    /// name it), or `nil` (the default): no key is sent.
    ///
    /// With a name, every `POST` and `PATCH` request is sent with that header holding a key made for it (a UUID),
    /// unless it carries the header already (a key of your own, which is how to keep one key when you send a request
    /// again yourself: that is otherwise a new operation). The key is made once for the request and kept for
    /// each of its attempts: the retries, the replay after a token refresh, and `Center.retry(_:)`. A request that
    /// carries the header is retried whatever its method, as an idempotent one is: a server that honours the key
    /// performs the operation once, however many attempts reach it. Each request, batch member and chain step has
    /// a key of its own, so deduplication never takes two of them for one. A name that cannot be sent as a header
    /// fails such a request with `.encoding` before anything is sent.
    ///
    /// ```swift
    /// center.setup { $0.retryPolicy = RetryPolicy(idempotencyKey: "Idempotency-Key") }
    /// center.send { request in
    ///     request.api = "payments"
    ///     request.method = .post        // sent with Idempotency-Key: <UUID>, the same on every attempt
    /// }
    /// ```
    public var idempotencyKey: String?

    /// Creates a policy.
    public init(
        maxAttempts: Int = 3,
        initialDelay: Duration = .milliseconds(500),
        multiplier: Double = 2,
        maxDelay: Duration = .seconds(30),
        jitter: Double = 0.5,
        maxRetryAfter: Duration = .seconds(120),
        methods: Set<HTTPMethod> = [.get, .head, .put, .delete, .options, .trace],
        statusCodes: Set<Int> = [408, 429, 500, 502, 503, 504],
        errorCodes: Set<HTTPError.Code> = [.timedOut, .cannotConnect, .transport],
        idempotencyKey: String? = nil
    ) {
        self.maxAttempts = maxAttempts
        self.initialDelay = initialDelay
        self.multiplier = multiplier
        self.maxDelay = maxDelay
        self.jitter = jitter
        self.maxRetryAfter = maxRetryAfter
        self.methods = methods
        self.statusCodes = statusCodes
        self.errorCodes = errorCodes
        self.idempotencyKey = idempotencyKey
    }

    /// Never retries (the center's default).
    public static let never = RetryPolicy(maxAttempts: 1)

    /// Three attempts in all, waiting about 0.5 s then 1 s.
    public static let `default` = RetryPolicy()

    /// XMNetworking's `retryCount`, for code ported from it: `retryCount` more attempts after any failure, whatever
    /// the method (`POST` included) and the status (`404` included), decoding and business errors too, each 2
    /// seconds after the last, without backoff or jitter.
    ///
    /// ```swift
    /// center.send { request in
    ///     request.api = "orders"
    ///     request.method = .post
    ///     request.retry = .xmNetworking(retryCount: 2)   // as `request.retryCount = 2` did in XMNetworking
    /// }
    /// ```
    ///
    /// What it keeps from Switchboard rather than XMNetworking: a cancelled request is never sent again (XMNetworking
    /// resent it 2 s later), the request keeps its identifier across attempts (so `cancel` still reaches it), a
    /// server's `Retry-After` up to `maxRetryAfter` is honoured, and `onError` sees only the final error. Switchboard's
    /// own `Request.retryCount` is not this: it adds attempts to the request's retry policy, which by default retries
    /// only idempotent methods, for statuses and errors that say "try again".
    public static func xmNetworking(retryCount: Int) -> RetryPolicy {
        RetryPolicy(
            maxAttempts: attempts(retrying: retryCount), initialDelay: .seconds(2), multiplier: 1,
            maxDelay: .seconds(2), jitter: 0,
            methods: [.get, .post, .head, .delete, .put, .patch, .options, .trace, .connect],
            statusCodes: Set(100...599), errorCodes: HTTPError.Code.builtIn.subtracting([.cancelled]))
    }

    /// Whether a request sent with `method` gets an idempotency key when its policy names a header: `POST` and `PATCH`,
    /// the methods that are not idempotent.
    static func keys(_ method: HTTPMethod) -> Bool {
        method == .post || method == .patch
    }

    /// Attempts in all for `retryCount` retries after the first: none below zero, and `Int.max` for `Int.max` (a
    /// caller's "retry forever"; one more overflowed and stopped the process).
    static func attempts(retrying retryCount: Int) -> Int {
        retryCount < .max ? max(0, retryCount) + 1 : .max
    }

    /// The wait before the attempt after `attempt` (1 for the first), or `nil` when the error is final. `keyed`: the
    /// request carries an idempotency key (see `idempotencyKey`), so its method does not matter.
    func delay(after attempt: Int, for error: HTTPError, method: HTTPMethod, keyed: Bool = false) -> Duration? {
        guard attempt < maxAttempts, isRetryable(error, method: method, keyed: keyed) else { return nil }
        if let retryAfter = error.response.flatMap(RetryPolicy.retryAfter) {
            return retryAfter <= maxRetryAfter ? max(.zero, retryAfter) : nil
        }
        return backoff(after: attempt)
    }

    /// Whether an error is worth another attempt under this policy; `keyed` as for `delay`.
    func isRetryable(_ error: HTTPError, method: HTTPMethod, keyed: Bool = false) -> Bool {
        guard error.code != .cancelled, keyed || methods.contains(method) else { return false }
        if error.code == .unacceptableStatus {
            return error.status.map(statusCodes.contains) ?? false
        }
        return errorCodes.contains(error.code)
    }

    /// `initialDelay × multiplier^(attempt − 1)`, capped at `maxDelay`, less a random part of up to `jitter`.
    func backoff(after attempt: Int) -> Duration {
        let exponential = initialDelay.seconds * pow(multiplier, Double(max(0, attempt - 1)))
        let capped = min(exponential, maxDelay.seconds)
        let fraction = min(max(jitter, 0), 1)
        let jittered = capped * (1 - fraction * Double.random(in: 0..<1))
        // Bounded before it is converted: a delay or multiplier out of range (or not a number) trapped there.
        guard jittered.isFinite, jittered > 0 else { return .zero }
        return .nanoseconds(Int64(min(jittered, Duration.longestWait.seconds) * 1e9))
    }

    /// The wait a response asks for in `Retry-After`: seconds (digits only, RFC 9110 section 10.2.3), or an HTTP
    /// date. A sign is no number of seconds (`-1` was read as no wait at all, and the request sent again at once), and
    /// a number too large for an `Int64` is as long as forever, beyond any cap (it was read as no `Retry-After`, and
    /// the request was sent again after the policy's own backoff).
    static func retryAfter(_ response: Response) -> Duration? {
        guard let value = response.headers["Retry-After"]?.trimmingCharacters(in: .whitespaces) else { return nil }
        if !value.isEmpty, value.utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }) {
            return .seconds(Int64(value) ?? .max)
        }
        guard let date = httpDate(value) else { return nil }
        // Bounded before it is converted: a date parser that took a year of many digits would make a number no
        // `Int64` holds (a date in the past is no wait at all).
        let wait = min(max(date.timeIntervalSinceNow, 0), Duration.longestWait.seconds)
        return .milliseconds(Int64(wait * 1000))
    }

    /// Parses an IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`), the form RFC 9110 requires senders to use.
    ///
    /// Text outside printable ASCII is no HTTP date (RFC 9110 section 5.6.7), and never reaches the formatter:
    /// `DateFormatter` on Linux stopped the process ("Incorrect range") at text with a combining mark, such as a
    /// `Retry-After`, `Date`, `Expires` or `Last-Modified` field of `m` followed by U+0338.
    static func httpDate(_ text: String) -> Date? {
        guard text.utf8.allSatisfy({ $0 >= 0x20 && $0 < 0x7F }) else { return nil }
        return httpDateParser.withLock { $0.date(from: text) }
    }

    /// One formatter for every HTTP date (`Retry-After`, and the cache's `Date`, `Expires`, `Last-Modified`, read on
    /// every freshness check): making one costs more than the parse. A formatter is not safe to share unlocked.
    private static let httpDateParser: Locked<DateFormatter> = {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss zzz"
        return Locked(formatter)
    }()
}
