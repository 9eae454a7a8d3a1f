extension Authenticator {
    /// Creates an authenticator.
    ///
    /// - Parameters:
    ///   - credential: the credential to start with, if there is one.
    ///   - apply: puts the credential on a request (a header, a parameter).
    ///   - refresh: gets a new credential from the current one; it may send requests through the center it is given.
    ///   - isStale: whether an error means the credential was refused; a 401 by default.
    ///   - needsRefresh: whether a credential should be refreshed before it is used (it is about to expire).
    public convenience init<Credential: Sendable>(
        credential: Credential?,
        apply: @escaping @Sendable (Credential, inout Request) -> Void,
        refresh: @escaping @Sendable (Credential?, Center) async throws -> Credential,
        isStale: @escaping @Sendable (HTTPError) -> Bool = { $0.status == 401 },
        needsRefresh: @escaping @Sendable (Credential) -> Bool = { _ in false }
    ) {
        self.init(
            credential: credential,
            apply: { credential, request in
                if let credential = credential as? Credential { apply(credential, &request) }
            },
            refresh: { credential, owner in
                // The pipeline hands over the center that sent the request; nothing else reaches here.
                guard let center = owner as? Center else {
                    throw HTTPError(.authentication, "the credential can be refreshed only for a center")
                }
                return try await refresh(credential as? Credential, center)
            },
            isStale: isStale,
            needsRefresh: { credential in (credential as? Credential).map(needsRefresh) ?? false })
    }
}

extension Center {
    /// The pipeline this center's requests run through: its registry, its deduplication, and itself for the
    /// authenticator's refresh. Made when asked (two references), so the center holds no cycle.
    var pipeline: Pipeline { Pipeline(registry: registry, inFlight: inFlight, owner: self) }
}
