import Foundation

/// The public suffixes (`com`, `co.uk`, `github.io`: names under which anyone may register a name of their own), from
/// the Public Suffix List as the system's libpsl holds it, for the cookie rules of both engines: a response may not
/// set a cookie for a public suffix (RFC 6265 section 5.3, step 5), or `evil.co.uk` could set cookies that go with
/// every request to `bank.co.uk`, and one app on a shared host (`*.github.io`, `*.herokuapp.com`) could set them
/// for all the others.
///
/// On Linux, libpsl (`libpsl.so.5`) is loaded at run time, as `CurlEngine` loads libcurl (the package links neither):
/// libcurl and URLSession's libcurl depend on it on Debian, Ubuntu and Fedora. It reads the newest list the system
/// has (`/usr/share/publicsuffix`, updated with the system) or, failing that, its own built-in copy. Where libpsl is
/// missing, `isLoaded` is false and only a domain of one label (`com`) counts as a public suffix, which the cookie
/// rules refuse in any case. Apple platforms' cookie storage applies the list itself; this type holds none there.
enum PublicSuffixes {
    /// Whether a list was loaded: `isPublicSuffix` knows more than one-label names.
    static var isLoaded: Bool { list != nil }

    /// Whether `domain` (lower case, without a leading dot) is a public suffix: on the list, from the section of
    /// names registries hand out (`co.uk`) or of names companies hand out under their own (`github.io`), or a
    /// name of one label, which the list's default rule makes one (`com`, `localhost`).
    static func isPublicSuffix(_ domain: String) -> Bool {
        guard let list else { return !domain.utf8.contains(UInt8(ascii: ".")) }
        return domain.withCString { list.isPublicSuffix(list.context, $0, anyType) } == 1
    }

    /// libpsl's `PSL_TYPE_ICANN | PSL_TYPE_PRIVATE`, with the default rule (`*`) applied.
    private static let anyType: Int32 = 1 | 2

    private struct List: @unchecked Sendable {
        // Safety: `context` is created once, never changed and never freed; libpsl only reads it, and its lookups
        // may run on any number of threads at once (they keep no state between calls).
        typealias Lookup = @convention(c) (OpaquePointer?, UnsafePointer<CChar>?, Int32) -> Int32
        let context: OpaquePointer
        let isPublicSuffix: Lookup
    }

    private static let list: List? = load()

    private static func load() -> List? {
        #if os(Linux)
        guard let library = dlopen("libpsl.so.5", RTLD_NOW | RTLD_LOCAL),
            let latest = dlsym(library, "psl_latest"),
            let builtin = dlsym(library, "psl_builtin"),
            let lookup = dlsym(library, "psl_is_public_suffix2")
        else { return nil }
        typealias Latest = @convention(c) (UnsafePointer<CChar>?) -> OpaquePointer?
        typealias Builtin = @convention(c) () -> OpaquePointer?
        // `psl_latest(NULL)`: the newer of the system's list file and the built-in copy; the built-in copy alone
        // when there is no file to read.
        guard
            let context = unsafeBitCast(latest, to: Latest.self)(nil)
                ?? unsafeBitCast(builtin, to: Builtin.self)()
        else { return nil }
        return List(context: context, isPublicSuffix: unsafeBitCast(lookup, to: List.Lookup.self))
        #else
        return nil
        #endif
    }
}
