extension JSON {
    /// A JSON object's members, in the order they were read or added, each name once.
    ///
    /// It reads like a dictionary (`object["name"]`, `keys`, `values`, `updateValue(_:forKey:)`) and keeps the order
    /// of the text it was parsed from, so that what a server sent reads, prints and encodes again in its own order.
    /// Setting a name that is there already replaces its value in place (as a repeated name in JSON text does: the
    /// last value, at the first one's place). Two objects are equal when they hold the same members in any order, as
    /// JSON's objects are.
    ///
    /// ```swift
    /// var profile: JSON.Object = ["name": "Ada", "id": 1]
    /// profile["email"] = "ada@example.com"
    /// profile.keys        // ["name", "id", "email"]
    /// ```
    public struct Object: Sendable, Hashable, Sequence, ExpressibleByDictionaryLiteral {
        /// One member. A named type, not a tuple: an array of tuples is copied and destroyed by the runtime's generic
        /// code, member by member.
        struct Member: Sendable {
            var key: String
            var value: JSON
        }

        private var members: [Member] = []
        /// Each name with its member's position: kept once there are more than `indexedFrom` members, so that a large
        /// object (a hostile server's) is not read in quadratic time. Small objects, most of them, are searched.
        private var positions: [String: Int]?
        private static let indexedFrom = 16

        /// Creates an empty object.
        public init() {}

        /// Creates an object with a dictionary's members, in name order so that the result is deterministic.
        public init(_ dictionary: [String: JSON]) {
            members.reserveCapacity(dictionary.count)
            for key in dictionary.keys.sorted() { members.append(Member(key: key, value: dictionary[key]!)) }
            if members.count > Self.indexedFrom { index() }
        }

        /// Creates an object from a dictionary literal, in its order; a later duplicate name replaces the value.
        public init(dictionaryLiteral elements: (String, JSON)...) {
            for (key, value) in elements { updateValue(value, forKey: key) }
        }

        /// How many members there are.
        public var count: Int { members.count }

        /// Whether there are no members.
        public var isEmpty: Bool { members.isEmpty }

        /// The names, in order.
        public var keys: [String] { members.map(\.key) }

        /// The values, in the order of their names.
        public var values: [JSON] { members.map(\.value) }

        /// The value named `key`, or `nil`; setting `nil` removes the member.
        public subscript(key: String) -> JSON? {
            get { position(of: key).map { members[$0].value } }
            set {
                if let newValue {
                    updateValue(newValue, forKey: key)
                } else {
                    removeValue(forKey: key)
                }
            }
        }

        /// Sets the value named `key`, in place if the name is there already, else as the last member; returns the
        /// value it replaced, or `nil`.
        @discardableResult
        public mutating func updateValue(_ value: JSON, forKey key: String) -> JSON? {
            if let position = position(of: key) {
                var replaced = value
                swap(&members[position].value, &replaced)
                return replaced
            }
            // Room for a small object at once: growing from empty reallocates at the first few members.
            if members.isEmpty { members.reserveCapacity(4) }
            members.append(Member(key: key, value: value))
            if positions != nil {
                positions![key] = members.count - 1
            } else if members.count > Self.indexedFrom {
                index()
            }
            return nil
        }

        /// Removes the member named `key`; returns its value, or `nil` when there was none.
        @discardableResult
        public mutating func removeValue(forKey key: String) -> JSON? {
            guard let position = position(of: key) else { return nil }
            let removed = members.remove(at: position).value
            positions = nil
            if members.count > Self.indexedFrom { index() }
            return removed
        }

        private func position(of key: String) -> Int? {
            if let positions { return positions[key] }
            return members.firstIndex { $0.key == key }
        }

        private mutating func index() {
            var positions = [String: Int](minimumCapacity: members.count)
            for (position, member) in members.enumerated() { positions[member.key] = position }
            self.positions = positions
        }

        /// The members in order, as `(key, value)` pairs.
        public func makeIterator() -> Iterator { Iterator(members: members.makeIterator()) }

        /// Reads the members in order.
        public struct Iterator: IteratorProtocol {
            var members: IndexingIterator<[Member]>

            /// The next member, or `nil` past the last.
            public mutating func next() -> (key: String, value: JSON)? {
                members.next().map { ($0.key, $0.value) }
            }
        }

        /// Whether both hold the same members, in any order.
        public static func == (lhs: Object, rhs: Object) -> Bool {
            guard lhs.count == rhs.count else { return false }
            // Most objects compared are in one order: member by member, until the orders part.
            var position = 0
            while position < lhs.count, lhs.members[position].key == rhs.members[position].key {
                guard lhs.members[position].value == rhs.members[position].value else { return false }
                position += 1
            }
            return lhs.members[position...].allSatisfy { rhs[$0.key] == $0.value }
        }

        /// Hashes the members in a way their order does not change.
        public func hash(into hasher: inout Hasher) {
            var combined = 0
            for member in members {
                var memberHasher = Hasher()
                memberHasher.combine(member.key)
                memberHasher.combine(member.value)
                combined &+= memberHasher.finalize()
            }
            hasher.combine(members.count)
            hasher.combine(combined)
        }
    }
}

extension JSON.Object: Codable {
    /// Decodes an object, its members in name order (a decoder does not give the order of its text).
    public init(from decoder: any Decoder) throws {
        self.init(try [String: JSON](from: decoder))
    }

    /// Encodes the members in order.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: Name.self)
        for member in members { try container.encode(member.value, forKey: Name(stringValue: member.key)) }
    }

    /// A member's name as a coding key.
    private struct Name: CodingKey {
        let stringValue: String
        var intValue: Int? { nil }
        init(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }
}
