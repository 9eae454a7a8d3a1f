import Foundation

/// SHA-256 (FIPS 180-4), incremental: what Switchboard checks downloads with, public so that code on Linux (where
/// CryptoKit is missing) can compute the checksum a download is expected to have. Named so that a file importing
/// both Switchboard and CryptoKit can still write `SHA256` for CryptoKit's.
///
/// ```swift
/// var hasher = SHA256Hasher()
/// hasher.update(data)
/// let hex = hasher.hexDigest()
/// ```
public struct SHA256Hasher: Sendable {
    private var state: (UInt32, UInt32, UInt32, UInt32, UInt32, UInt32, UInt32, UInt32) = (
        0x6a09_e667, 0xbb67_ae85, 0x3c6e_f372, 0xa54f_f53a, 0x510e_527f, 0x9b05_688c, 0x1f83_d9ab, 0x5be0_cd19
    )
    private var pending: [UInt8] = []
    private var length: UInt64 = 0

    private static let k: [UInt32] = [
        0x428a_2f98, 0x7137_4491, 0xb5c0_fbcf, 0xe9b5_dba5, 0x3956_c25b, 0x59f1_11f1, 0x923f_82a4, 0xab1c_5ed5,
        0xd807_aa98, 0x1283_5b01, 0x2431_85be, 0x550c_7dc3, 0x72be_5d74, 0x80de_b1fe, 0x9bdc_06a7, 0xc19b_f174,
        0xe49b_69c1, 0xefbe_4786, 0x0fc1_9dc6, 0x240c_a1cc, 0x2de9_2c6f, 0x4a74_84aa, 0x5cb0_a9dc, 0x76f9_88da,
        0x983e_5152, 0xa831_c66d, 0xb003_27c8, 0xbf59_7fc7, 0xc6e0_0bf3, 0xd5a7_9147, 0x06ca_6351, 0x1429_2967,
        0x27b7_0a85, 0x2e1b_2138, 0x4d2c_6dfc, 0x5338_0d13, 0x650a_7354, 0x766a_0abb, 0x81c2_c92e, 0x9272_2c85,
        0xa2bf_e8a1, 0xa81a_664b, 0xc24b_8b70, 0xc76c_51a3, 0xd192_e819, 0xd699_0624, 0xf40e_3585, 0x106a_a070,
        0x19a4_c116, 0x1e37_6c08, 0x2748_774c, 0x34b0_bcb5, 0x391c_0cb3, 0x4ed8_aa4a, 0x5b9c_ca4f, 0x682e_6ff3,
        0x748f_82ee, 0x78a5_636f, 0x84c8_7814, 0x8cc7_0208, 0x90be_fffa, 0xa450_6ceb, 0xbef9_a3f7, 0xc671_78f2,
    ]

    /// Creates a hasher.
    public init() {}

    /// Adds bytes.
    public mutating func update(_ data: Data) {
        data.withUnsafeBytes { update($0) }
    }

    /// Adds bytes.
    public mutating func update(_ bytes: UnsafeRawBufferPointer) {
        length &+= UInt64(bytes.count)
        var input = bytes[...]
        if !pending.isEmpty {
            let take = min(64 - pending.count, input.count)
            pending += input.prefix(take)
            input = input.dropFirst(take)
            guard pending.count == 64 else { return }
            pending.withUnsafeBytes { compress(UnsafeRawBufferPointer(rebasing: $0[...])) }
            pending.removeAll(keepingCapacity: true)
        }
        // Whole blocks straight from the caller's bytes, by offset: no slice is made per block.
        var start = input.startIndex
        while input.endIndex &- start >= 64 {
            compress(UnsafeRawBufferPointer(rebasing: bytes[start..<(start &+ 64)]))
            start &+= 64
        }
        input = input[start...]
        pending += input
    }

    /// The 32-byte digest; do not add bytes afterwards.
    public mutating func finalize() -> [UInt8] {
        let bits = length &* 8
        var tail: [UInt8] = [0x80]
        let padding = (56 - (pending.count + 1) % 64 + 64) % 64
        tail += [UInt8](repeating: 0, count: padding)
        for shift in stride(from: 56, through: 0, by: -8) {
            tail.append(UInt8(truncatingIfNeeded: bits >> UInt64(shift)))
        }
        let savedLength = length
        tail.withUnsafeBytes { update($0) }
        length = savedLength
        let words = [state.0, state.1, state.2, state.3, state.4, state.5, state.6, state.7]
        return words.flatMap { word in (0..<4).map { UInt8(truncatingIfNeeded: word >> (24 - 8 * $0)) } }
    }

    /// The digest as lower-case hex; do not add bytes afterwards.
    public mutating func hexDigest() -> String {
        Self.lowercaseHex(finalize())
    }

    /// Bytes as lower-case hex, two digits each. (`String(format: "%02x")` for each byte cost more than hashing a
    /// short key: most of the time a response cache took to open was spent there.)
    static func lowercaseHex(_ bytes: [UInt8]) -> String {
        let digits: StaticString = "0123456789abcdef"
        return String(unsafeUninitializedCapacity: bytes.count * 2) { text in
            digits.withUTF8Buffer { digits in
                for (index, byte) in bytes.enumerated() {
                    text[2 * index] = digits[Int(byte >> 4)]
                    text[2 * index + 1] = digits[Int(byte & 0x0f)]
                }
            }
            return bytes.count * 2
        }
    }

    /// The SHA-256 of a file's contents, as lower-case hex, read 1 MiB at a time.
    ///
    /// - Throws: the error reading the file.
    public static func hex(ofFile url: URL) throws -> String {
        let handle = try FileHandle(forReadingFrom: url)
        defer { try? handle.close() }
        var hasher = SHA256Hasher()
        while let chunk = try handle.read(upToCount: 1 << 20), !chunk.isEmpty { hasher.update(chunk) }
        return hasher.hexDigest()
    }

    /// HMAC-SHA256 (RFC 2104) of a message under a key: the 32-byte authentication code.
    ///
    /// ```swift
    /// let code = SHA256Hasher.hmac(key: Data("secret".utf8), message: Data("GET /users".utf8))
    /// ```
    public static func hmac(key: Data, message: Data) -> [UInt8] {
        var block = key.count > 64 ? Data(SHA256Hasher.digest(key)) : key
        block.append(Data(repeating: 0, count: 64 - block.count))
        var inner = SHA256Hasher()
        inner.update(Data(block.map { $0 ^ 0x36 }))
        inner.update(message)
        var outer = SHA256Hasher()
        outer.update(Data(block.map { $0 ^ 0x5c }))
        outer.update(Data(inner.finalize()))
        return outer.finalize()
    }

    /// The SHA-256 of some bytes: the 32-byte digest.
    public static func digest(_ data: Data) -> [UInt8] {
        var hasher = SHA256Hasher()
        hasher.update(data)
        return hasher.finalize()
    }

    /// The SHA-256 of some bytes, as lower-case hex.
    public static func hex(_ data: Data) -> String {
        var hasher = SHA256Hasher()
        hasher.update(data)
        return hasher.hexDigest()
    }

    private mutating func compress(_ block: UnsafeRawBufferPointer) {
        withUnsafeTemporaryAllocation(of: UInt32.self, capacity: 64) { w in
            for i in 0..<16 {
                let at = i &* 4
                w[i] =
                    UInt32(block[at]) &<< 24 | UInt32(block[at &+ 1]) &<< 16 | UInt32(block[at &+ 2]) &<< 8
                    | UInt32(block[at &+ 3])
            }
            for i in 16..<64 {
                let x = w[i - 15]
                let y = w[i - 2]
                let s0 = x.rotatedRight(7) ^ x.rotatedRight(18) ^ (x &>> 3)
                let s1 = y.rotatedRight(17) ^ y.rotatedRight(19) ^ (y &>> 10)
                w[i] = w[i - 16] &+ s0 &+ w[i - 7] &+ s1
            }
            var (a, b, c, d, e, f, g, h) = state
            SHA256Hasher.k.withUnsafeBufferPointer { k in
                for i in 0..<64 {
                    let s1 = e.rotatedRight(6) ^ e.rotatedRight(11) ^ e.rotatedRight(25)
                    let choice = (e & f) ^ (~e & g)
                    let t1 = h &+ s1 &+ choice &+ k[i] &+ w[i]
                    let s0 = a.rotatedRight(2) ^ a.rotatedRight(13) ^ a.rotatedRight(22)
                    let majority = (a & b) ^ (a & c) ^ (b & c)
                    let t2 = s0 &+ majority
                    (h, g, f, e, d, c, b, a) = (g, f, e, d &+ t1, c, b, a, t1 &+ t2)
                }
            }
            state = (
                state.0 &+ a, state.1 &+ b, state.2 &+ c, state.3 &+ d,
                state.4 &+ e, state.5 &+ f, state.6 &+ g, state.7 &+ h
            )
        }
    }
}

extension UInt32 {
    /// Rotated right by `count` bits (1 through 31).
    ///
    /// With the masking shifts (`&>>`, `&<<`), which are inlined even where nothing is optimized: the plain shifts
    /// are generic over the shift's type and, unoptimized, were called as such at every use, so that a debug build
    /// hashed at about 3.5 MB/s (a test suite uploading and checking files spent half of its CPU time here).
    @inline(__always)
    func rotatedRight(_ count: UInt32) -> UInt32 {
        (self &>> count) | (self &<< (32 &- count))
    }
}
