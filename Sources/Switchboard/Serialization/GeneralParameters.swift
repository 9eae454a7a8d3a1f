/// A center's `parameters`, converted to parameter values once, when the configuration sets them.
///
/// A request merged with its center keeps them apart from its own (`Request.Fields.generalParameters`) until
/// something reads or changes `Request.parameters`; encoding then reads the two sorted lists in merge order, the
/// request's own winning (`ParameterLayers`). Merging the center's dictionary into each request's, then converting
/// and sorting the result, built and hashed a dictionary and converted the center's values again for every request.
final class GeneralParameters: Sendable {
    /// The parameters as the configuration holds them.
    let values: [String: any Sendable]
    /// The same, converted and sorted by key; `nil` when one of them cannot be sent (a request then converts its
    /// merged parameters, so that its error names the key, unless its own value for that key replaces it).
    let members: [ParameterValue.Member]?

    /// The keys with a secret name (`access_token`): they go only to the center's own origins (`CredentialScope`).
    let secretKeys: [String]

    /// The converted parameters, or `nil` when there are none.
    init?(_ values: [String: any Sendable]) {
        guard !values.isEmpty else { return nil }
        self.values = values
        members = try? ParameterValue.object(from: values)
        secretKeys = values.keys.filter { SecretName.isSecret($0) }
    }

    /// A request's parameters with its center's under them, converted and sorted by key.
    ///
    /// - Throws: `.encoding`, naming the key path of a value that is not JSON-compatible.
    static func layers(of request: Request) throws(HTTPError) -> ParameterLayers {
        let own = request.fields.parameters
        guard let general = request.fields.generalParameters else {
            return ParameterLayers(own: try ParameterValue.object(from: own))
        }
        guard let generalMembers = general.members else {
            return ParameterLayers(own: try ParameterValue.object(from: request.parameters))
        }
        if own.isEmpty { return ParameterLayers(own: generalMembers) }
        return ParameterLayers(own: try ParameterValue.object(from: own), general: generalMembers)
    }
}

/// A request's parameters over its center's: two lists sorted by key, read in the order of their merge (for a key in
/// both, the request's member), without making the merged list: a query is written straight from them.
struct ParameterLayers: Sequence {
    var own: [ParameterValue.Member]
    var general: [ParameterValue.Member] = []

    var isEmpty: Bool { own.isEmpty && general.isEmpty }

    /// The merged list, for the encodings that need one.
    var merged: [ParameterValue.Member] {
        general.isEmpty ? own : own.isEmpty ? general : Array(self)
    }

    func makeIterator() -> Iterator { Iterator(own: own, general: general) }

    struct Iterator: IteratorProtocol {
        let own: [ParameterValue.Member]
        let general: [ParameterValue.Member]
        var ownIndex = 0
        var generalIndex = 0

        @inline(__always)  // read in the query writer's loop: a call per member cost more than the merge
        mutating func next() -> ParameterValue.Member? {
            if ownIndex < own.count {
                if generalIndex < general.count {
                    let (ownKey, generalKey) = (own[ownIndex].key, general[generalIndex].key)
                    if generalKey < ownKey {
                        defer { generalIndex += 1 }
                        return general[generalIndex]
                    }
                    if generalKey == ownKey { generalIndex += 1 }
                }
                defer { ownIndex += 1 }
                return own[ownIndex]
            }
            guard generalIndex < general.count else { return nil }
            defer { generalIndex += 1 }
            return general[generalIndex]
        }
    }
}
