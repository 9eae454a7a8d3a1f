/// An idempotency key a request was sent with (see `RetryPolicy.idempotencyKey`): the header's name and the key.
struct IdempotencyKey: Sendable, Hashable {
    let header: String
    let key: String
}

extension Request {
    /// This request, carrying `key` (when there is one) as its own; a key it carries already is kept.
    func carrying(_ key: IdempotencyKey?) -> Request {
        guard let key, headers[key.header] == nil else { return self }
        var request = self
        request.headers[key.header] = key.key
        return request
    }
}
