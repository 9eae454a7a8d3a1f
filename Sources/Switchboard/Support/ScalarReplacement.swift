extension String {
    /// The text with each scalar that `replacement` gives text for replaced by that text, one scalar at a time.
    ///
    /// For escaping: `replacingOccurrences(of:with:)` compares characters, and a `"`, `'` or line break that a
    /// combining mark follows (U+0301) is one character with the mark, so it was left unescaped. A `'` so left in a
    /// logged cURL command ended its quoting, and what followed it ran as shell code when the command was pasted.
    func replacingScalars(_ replacement: (Unicode.Scalar) -> String?) -> String {
        var result = ""
        result.reserveCapacity(utf8.count)
        for scalar in unicodeScalars {
            if let text = replacement(scalar) {
                result.unicodeScalars.append(contentsOf: text.unicodeScalars)
            } else {
                result.unicodeScalars.append(scalar)
            }
        }
        return result
    }
}
