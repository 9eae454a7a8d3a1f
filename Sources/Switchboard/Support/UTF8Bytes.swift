extension String {
    /// Calls `body` with the string's UTF-8 bytes, read in place. `withUTF8` needs a mutable string, and the copy made
    /// for it counted the string's storage up and down at every call; only a string whose bytes are not contiguous
    /// (one bridged from Objective-C) is copied here.
    func withUTF8Bytes<R>(_ body: (UnsafeBufferPointer<UInt8>) throws -> R) rethrows -> R {
        if let result = try utf8.withContiguousStorageIfAvailable(body) { return result }
        var copy = self
        return try copy.withUTF8(body)
    }
}
