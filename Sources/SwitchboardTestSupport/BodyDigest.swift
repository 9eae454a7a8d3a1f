import Foundation
import Switchboard

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The SHA-256 of a body the loopback server receives, or of a file a test checks: by the system's OpenSSL
/// (`libcrypto`, loaded at run time) where it can be loaded, else by `SHA256Hasher`.
///
/// The suites run a debug build, in which `SHA256Hasher` hashes a few megabytes a second; the server hashed every
/// upload with it, and in the suites' first seconds, when the large uploads run beside every other test's start, that
/// took about a third of the machine. OpenSSL is an implementation apart from Switchboard's besides (`SHA256Tests`
/// holds it to `SHA256Hasher`).
public final class BodyDigest {
    /// OpenSSL's `SHA256_Init`, `SHA256_Update` and `SHA256_Final`, if `libcrypto` can be loaded here.
    private struct Library: @unchecked Sendable {
        // Safety: three C function pointers, set once and only called; OpenSSL's digest functions keep no state
        // outside the context each caller passes.
        typealias Initialize = @convention(c) (UnsafeMutableRawPointer) -> Int32
        typealias Update = @convention(c) (UnsafeMutableRawPointer, UnsafeRawPointer?, Int) -> Int32
        typealias Finish = @convention(c) (UnsafeMutablePointer<UInt8>, UnsafeMutableRawPointer) -> Int32
        let initialize: Initialize
        let update: Update
        let finish: Finish

        static let loaded: Library? = {
            #if os(Linux)
            let names = ["libcrypto.so.3", "libcrypto.so"]
            #else
            let names: [String] = []
            #endif
            for name in names {
                guard let handle = dlopen(name, RTLD_NOW | RTLD_LOCAL) else { continue }
                guard let initialize = dlsym(handle, "SHA256_Init"), let update = dlsym(handle, "SHA256_Update"),
                    let finish = dlsym(handle, "SHA256_Final")
                else { continue }
                return Library(
                    initialize: unsafeBitCast(initialize, to: Initialize.self),
                    update: unsafeBitCast(update, to: Update.self), finish: unsafeBitCast(finish, to: Finish.self))
            }
            return nil
        }()
    }

    /// OpenSSL's context (`SHA256_CTX`, 112 bytes; room for more), when the library is loaded.
    private let context: UnsafeMutableRawPointer?
    private var fallback = SHA256Hasher()

    /// Whether the digests are OpenSSL's (else `SHA256Hasher`'s).
    public static var usesOpenSSL: Bool { Library.loaded != nil }

    public init() {
        if let library = Library.loaded {
            let context = UnsafeMutableRawPointer.allocate(byteCount: 256, alignment: 16)
            if library.initialize(context) == 1 {
                self.context = context
                return
            }
            context.deallocate()
        }
        context = nil
    }

    deinit {
        context?.deallocate()
    }

    /// Adds bytes.
    public func update(_ data: Data) {
        guard let context, let library = Library.loaded else { return fallback.update(data) }
        data.withUnsafeBytes { _ = library.update(context, $0.baseAddress, $0.count) }
    }

    /// The digest as lower-case hex; add no bytes afterwards.
    public func hexDigest() -> String {
        guard let context, let library = Library.loaded else { return fallback.hexDigest() }
        var digest = [UInt8](repeating: 0, count: 32)
        _ = library.finish(&digest, context)
        return digest.map { String(format: "%02x", $0) }.joined()
    }

    /// The SHA-256 of `data`, as lower-case hex.
    public static func hex(_ data: Data) -> String {
        let digest = BodyDigest()
        digest.update(data)
        return digest.hexDigest()
    }

    /// The SHA-256 of a file's contents, as lower-case hex, read 1 MiB at a time.
    ///
    /// - Throws: the error reading the file.
    public static func hex(ofFile url: URL) throws -> String {
        let handle = try FileHandle(forReadingFrom: url)
        defer { try? handle.close() }
        let digest = BodyDigest()
        while let chunk = try handle.read(upToCount: 1 << 20), !chunk.isEmpty { digest.update(chunk) }
        return digest.hexDigest()
    }
}
