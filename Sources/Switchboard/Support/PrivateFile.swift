import Foundation

/// Files only this user can read or write (mode 0600), for what Switchboard keeps on disk that may be personal or carry
/// credentials: cached responses, and a resumable download's record of its URL (a signed URL grants access by its
/// query). Made with the default mode (0644 under the usual umask), every account on the machine could read them.
enum PrivateFile {
    /// Writes `data` to a new file at `url` (none may be there), mode 0600.
    static func create(_ data: Data, at url: URL) -> Bool {
        let descriptor = open(url.path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { return false }
        let handle = FileHandle(fileDescriptor: descriptor, closeOnDealloc: true)
        do {
            try handle.write(contentsOf: data)
            try handle.close()
            return true
        } catch {
            try? handle.close()
            unlink(url.path)
            return false
        }
    }

    /// Replaces the file at `url` with `data`, mode 0600, all at once: written under a temporary name beside it, then
    /// renamed over it, so that a reader finds the old file or the new one, never half of one.
    @discardableResult
    static func replace(_ url: URL, with data: Data) -> Bool {
        let temporary = URL(fileURLWithPath: url.path + ".\(UUID().uuidString)")
        guard create(data, at: temporary) else { return false }
        guard rename(temporary.path, url.path) == 0 else {
            unlink(temporary.path)
            return false
        }
        return true
    }
}
