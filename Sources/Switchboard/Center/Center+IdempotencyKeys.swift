extension Result<Response, HTTPError> {
    /// The idempotency key that the attempts ending in this failure were sent with, if they carried one: kept for
    /// `Center.retry(_:)`, which sends the same operation again.
    func sentIdempotencyKey(_ configuration: Center.Configuration) -> IdempotencyKey? {
        guard case .failure(let error) = self, let sent = error.request,
            let header = sent.idempotencyKeyHeader(in: configuration), let key = sent.headers[header]
        else { return nil }
        return IdempotencyKey(header: header, key: key)
    }
}

extension BatchRequest {
    /// The batch with each failed member carrying the idempotency key its attempts were sent with.
    func carryingIdempotencyKeys(
        of results: [Result<Response, HTTPError>], _ configuration: Center.Configuration
    ) -> BatchRequest {
        var batch = self
        for (index, result) in zip(members.indices, results) {
            batch.members[index] = members[index].carrying(result.sentIdempotencyKey(configuration))
        }
        return batch
    }
}

extension ChainRequest {
    /// The chain with the idempotency key each failed step was sent with: a step is built again when the chain is
    /// retried, and `ChainRequest.step(_:at:)` gives it its key.
    func carryingIdempotencyKeys(
        of results: [Result<Response, HTTPError>], _ configuration: Center.Configuration
    ) -> ChainRequest {
        var chain = self
        for (index, result) in results.enumerated() {
            chain.idempotencyKeys[index] = result.sentIdempotencyKey(configuration)
        }
        return chain
    }
}
