import Foundation

/// URLSessionEngine's temporary copies of multipart bodies (`switchboard-multipart-…`), told apart by a form field of
/// the test's own: suites running at the same time make copies of their own.
enum MultipartCopies {
    /// The temporary copies of multipart bodies whose first bytes hold `marker` (a form field of the test's own:
    /// fields come first in the body), so that copies made by tests running beside this one do not count.
    static func holding(_ marker: String) -> [String] {
        let directory = FileManager.default.temporaryDirectory
        let names = ((try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? [])
            .filter { $0.hasPrefix("switchboard-multipart-") }
        return names.filter { name in
            guard let handle = try? FileHandle(forReadingFrom: directory.appendingPathComponent(name)) else {
                return false
            }
            defer { try? handle.close() }
            let head = (try? handle.read(upToCount: 4096)) ?? Data()
            return String(decoding: head, as: UTF8.self).contains(marker)
        }
    }
}
