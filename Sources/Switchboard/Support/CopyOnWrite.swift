/// A value kept in one heap box that copies share until one of them changes it: for the large structs the pipeline
/// copies at every step (`Request`, `CenterConfiguration`), so that a copy costs one reference, not every field.
struct CopyOnWrite<Value: Sendable>: Sendable {
    final class Box: @unchecked Sendable {
        // Safety: `value` is written only through `CopyOnWrite.value`'s `_modify` or the box `unique()` returns,
        // both of which first give the writer a box of its own when `isKnownUniquelyReferenced` says the box is
        // shared (and the box is used for that one access, never kept). A box reachable from more than one
        // copy, and so from more than one thread, is therefore only ever read, as with the standard library's
        // copy-on-write collections.
        //
        // Not checked for exclusivity at run time: a `Request` or `Configuration` is a value, so the compiler already
        // refuses overlapping accesses to one copy, and a shared box is never written. The run-time check cost a
        // thread-local lookup on every property read.
        @exclusivity(unchecked) var value: Value

        init(_ value: Value) {
            self.value = value
        }
    }

    private var box: Box

    init(_ value: Value) {
        box = Box(value)
    }

    /// The value, copied into a box of this copy's own before a change when the box is shared.
    var value: Value {
        get { box.value }
        _modify {
            yield &unique().value
        }
    }

    /// This copy's box, made its own first when shared: for changing one field in place, as
    /// `_modify { yield &storage.unique().value.field }`. A property's `_modify` that goes through another `_modify`
    /// (`value`, then the field) nests two coroutines, and Swift allocates the inner one's frame on the heap: two
    /// allocations for every property a configuration closure sets. A public property has a `set` besides, which
    /// plain assignments from other modules use: across a module boundary even a single `_modify` coroutine keeps its
    /// frame on the heap, one allocation per `request.api = ...` in app code.
    mutating func unique() -> Box {
        if !isKnownUniquelyReferenced(&box) { box = copy() }
        return box
    }

    /// A new box holding a copy of the value. Never inlined: the copy passes through temporaries as large as the
    /// value, and in an `async` function the compiler keeps those in the function's frame (allocated for every call)
    /// for every place a property is set.
    @inline(never)
    private func copy() -> Box {
        Box(box.value)
    }
}
