/// Values by request identifier: an open-addressing table (linear probing, at most half full) placed by the
/// identifier's number times a constant, without `Hasher`.
///
/// Every request is inserted, updated and removed once in the registry: hashing its identifier three times through
/// `Dictionary` cost more than the rest of the registry's work. Identifiers come in sequence, and one stripe holds
/// every sixteenth, which multiplying by an odd constant and keeping the top bits spreads evenly.
struct IDTable<Value> {
    /// The identifiers, apart from the values: a probe reads only these, and copies no value.
    private var ids: [RequestID?] = []
    private var values: [Value?] = []
    /// 64 less the bits of the capacity: a position is the top bits of the scrambled number.
    private var shift = 64
    private(set) var count = 0

    /// The value for `id`, or `nil`.
    subscript(id: RequestID) -> Value? {
        position(of: id).flatMap { values[$0] }
    }

    func contains(_ id: RequestID) -> Bool { position(of: id) != nil }

    /// Whether a value satisfies `predicate`.
    func contains(where predicate: (Value) -> Bool) -> Bool {
        values.contains { $0.map(predicate) ?? false }
    }

    /// Sets the value for `id`, replacing any.
    mutating func set(_ value: consuming Value, for id: RequestID) {
        if let position = position(of: id) {
            values[position] = value
            return
        }
        if (count + 1) * 2 > ids.count { grow() }
        var position = home(id)
        while ids[position] != nil { position = (position + 1) & (ids.count - 1) }
        ids[position] = id
        values[position] = value
        count += 1
    }

    /// Changes the value for `id` in place; returns what `body` returns, or `nil` when there is no value.
    mutating func modify<R>(_ id: RequestID, _ body: (inout Value) -> R) -> R? {
        guard let position = position(of: id) else { return nil }
        return body(&values[position]!)
    }

    /// Changes every value in place.
    mutating func modifyAll(_ body: (inout Value) -> Void) {
        for position in values.indices where ids[position] != nil { body(&values[position]!) }
    }

    /// Removes the value for `id`; returns it, or `nil` when there was none.
    mutating func remove(_ id: RequestID) -> Value? {
        guard var hole = position(of: id) else { return nil }
        var removed: Value?
        swap(&removed, &values[hole])
        ids[hole] = nil
        count -= 1
        // Backward shift: each later member of the run moves into the hole unless its home lies after the hole.
        let mask = ids.count - 1
        var next = (hole + 1) & mask
        while let nextID = ids[next] {
            let home = home(nextID)
            let staysPut = hole <= next ? (hole < home && home <= next) : (hole < home || home <= next)
            if !staysPut {
                ids.swapAt(hole, next)
                values.swapAt(hole, next)
                hole = next
            }
            next = (next + 1) & mask
        }
        return removed
    }

    private func home(_ id: RequestID) -> Int {
        Int(truncatingIfNeeded: (id.rawValue &* 0x9E37_79B9_7F4A_7C15) >> UInt64(shift))
    }

    private func position(of id: RequestID) -> Int? {
        guard count > 0 else { return nil }
        var position = home(id)
        while let found = ids[position] {
            if found == id { return position }
            position = (position + 1) & (ids.count - 1)
        }
        return nil
    }

    private mutating func grow() {
        let (oldIDs, oldValues) = (ids, values)
        let capacity = max(8, ids.count * 2)
        ids = Array(repeating: nil, count: capacity)
        values = Array(repeating: nil, count: capacity)
        shift = 64 - capacity.trailingZeroBitCount
        count = 0
        for (id, value) in zip(oldIDs, oldValues) {
            if let id, let value { set(value, for: id) }
        }
    }
}
