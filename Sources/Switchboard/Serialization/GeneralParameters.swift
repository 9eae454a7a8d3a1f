/// A center's `parameters`, converted to parameter values once, when the configuration sets them.
///
/// A request merged with its center keeps them apart from its own (`Request.Fields.generalParameters`) until
/// something reads or changes `Request.parameters`; encoding then merges the two sorted lists, the request's own
/// winning. Merging the center's dictionary into each request's, then converting and sorting the result, built and
/// hashed a dictionary and converted the center's values again for every request.
final class GeneralParameters: Sendable {
    /// The parameters as the configuration holds them.
    let values: [String: any Sendable]
    /// The same, converted and sorted by key; `nil` when one of them cannot be sent (a request then converts its
    /// merged parameters, so that its error names the key, unless its own value for that key replaces it).
    let members: [(key: String, value: ParameterValue)]?

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
    static func members(of request: Request) throws(HTTPError) -> [(key: String, value: ParameterValue)] {
        let own = request.fields.parameters
        guard let general = request.fields.generalParameters else { return try ParameterValue.object(from: own) }
        guard let generalMembers = general.members else { return try ParameterValue.object(from: request.parameters) }
        if own.isEmpty { return generalMembers }
        return merged(try ParameterValue.object(from: own), over: generalMembers)
    }

    /// Two lists sorted by key, merged in order; for a key in both, `own`'s member.
    static func merged(
        _ own: [(key: String, value: ParameterValue)], over general: [(key: String, value: ParameterValue)]
    ) -> [(key: String, value: ParameterValue)] {
        var result: [(key: String, value: ParameterValue)] = []
        result.reserveCapacity(own.count + general.count)
        var ownIndex = 0
        var generalIndex = 0
        while ownIndex < own.count, generalIndex < general.count {
            let ownKey = own[ownIndex].key
            let generalKey = general[generalIndex].key
            if ownKey < generalKey {
                result.append(own[ownIndex])
                ownIndex += 1
            } else if generalKey < ownKey {
                result.append(general[generalIndex])
                generalIndex += 1
            } else {
                result.append(own[ownIndex])
                ownIndex += 1
                generalIndex += 1
            }
        }
        // Member by member: `append(contentsOf:)` of a slice took longer than the merge.
        for member in own[ownIndex...] { result.append(member) }
        for member in general[generalIndex...] { result.append(member) }
        return result
    }
}
