extension UnsafeRawBufferPointer {
    /// Whether the bytes are well-formed UTF-8 (RFC 3629: no surrogates, no overlong forms, nothing past U+10FFFF).
    var isValidUTF8: Bool {
        var iterator = makeIterator()
        var decoder = UTF8()
        while true {
            switch decoder.decode(&iterator) {
            case .scalarValue: continue
            case .emptyInput: return true
            case .error: return false
            }
        }
    }
}
