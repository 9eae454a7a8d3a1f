import Dispatch

/// Where a request's or group's callbacks run, what `Center.cancel(tag:)` finds it by, and who owns it.
struct WorkScope: Sendable {
    var callbackQueue: DispatchQueue?
    var tag: String?
    var owner: WeakOwner?
}

/// A weak reference to the object that owns a request or group (`Request.owner`).
final class WeakOwner: @unchecked Sendable {
    // Safety: `object` is a weak `let`, set once in `init` and never written again. The center only asks whether it
    // is still there (`isGone`); the Swift runtime loads weak references atomically, and nothing is ever called on
    // the object, so no non-Sendable state is shared between threads.
    weak let object: AnyObject?

    init(_ object: AnyObject) {
        self.object = object
    }

    /// Whether the owner has been deallocated.
    var isGone: Bool {
        object == nil
    }
}
