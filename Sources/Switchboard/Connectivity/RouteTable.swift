/// The kernel's links, addresses and routes as netlink (`NETLINK_ROUTE`) dumps them, and the network path they make:
/// read and judged without I/O (the monitor does the reading).
struct RouteTable: Sendable {
    struct Link: Sendable, Hashable {
        var name: String
        /// `ARPHRD_*`: 1 Ethernet, 772 loopback.
        var hardware: UInt16
        /// `IFF_*`: 0x1 up, 0x8 loopback, 0x40 running.
        var flags: UInt32
    }

    struct Route: Sendable, Hashable {
        var family: UInt8
        var destinationLength: UInt8
        var table: UInt32
        /// `RTN_*`: 1 unicast.
        var type: UInt8
        var outputInterface: Int32?
    }

    var links: [Int32: Link] = [:]
    /// The families of the global addresses each interface holds.
    var addresses: [Int32: Set<UInt8>] = [:]
    var routes: [Route] = []

    // Message types and attributes (linux/rtnetlink.h, linux/netlink.h).
    static let done: UInt16 = 3, error: UInt16 = 2
    static let newLink: UInt16 = 16, newAddress: UInt16 = 20, newRoute: UInt16 = 24
    static let getLink: UInt16 = 18, getAddress: UInt16 = 22, getRoute: UInt16 = 26

    /// Adds what these messages describe (the bytes of one `recv`); returns whether they end a dump (`NLMSG_DONE` or
    /// `NLMSG_ERROR`). Malformed bytes end the reading, never the process.
    mutating func read(_ bytes: UnsafeRawBufferPointer) -> Bool {
        var offset = 0
        while offset + 16 <= bytes.count {
            let length = Int(Self.u32(bytes, offset))
            let type = Self.u16(bytes, offset + 4)
            guard length >= 16, offset + length <= bytes.count else { return true }
            let body = UnsafeRawBufferPointer(rebasing: bytes[(offset + 16)..<(offset + length)])
            switch type {
            case Self.done, Self.error: return true
            case Self.newLink: readLink(body)
            case Self.newAddress: readAddress(body)
            case Self.newRoute: readRoute(body)
            default: break
            }
            offset += (length + 3) & ~3
        }
        return false
    }

    /// `ifinfomsg` (16 bytes), then attributes: `IFLA_IFNAME` (3).
    private mutating func readLink(_ body: UnsafeRawBufferPointer) {
        guard body.count >= 16 else { return }
        let index = Int32(bitPattern: Self.u32(body, 4))
        var name = ""
        Self.attributes(body, from: 16) { type, value in
            if type == 3 { name = String(decoding: value.prefix { $0 != 0 }, as: UTF8.self) }
        }
        links[index] = Link(name: name, hardware: Self.u16(body, 2), flags: Self.u32(body, 8))
    }

    /// `ifaddrmsg` (8 bytes): family, prefix length, flags, scope (0 global), interface index.
    private mutating func readAddress(_ body: UnsafeRawBufferPointer) {
        guard body.count >= 8, body[3] == 0 else { return }
        addresses[Int32(bitPattern: Self.u32(body, 4)), default: []].insert(body[0])
    }

    /// `rtmsg` (12 bytes), then attributes: `RTA_OIF` (4), `RTA_TABLE` (15).
    private mutating func readRoute(_ body: UnsafeRawBufferPointer) {
        guard body.count >= 12 else { return }
        var route = Route(
            family: body[0], destinationLength: body[1], table: UInt32(body[4]), type: body[7], outputInterface: nil)
        Self.attributes(body, from: 12) { type, value in
            if type == 4, value.count >= 4 { route.outputInterface = Int32(bitPattern: Self.u32(value, 0)) }
            if type == 15, value.count >= 4 { route.table = Self.u32(value, 0) }
        }
        routes.append(route)
    }

    /// The path these tables make: usable when a default unicast route of the main table goes out through a link
    /// that is up and running, is not the loopback, and holds a global address of the route's family.
    func path(isWireless: (String) -> Bool = { _ in false }) -> NetworkPath {
        for route in routes where route.destinationLength == 0 && route.table == 254 && route.type == 1 {
            guard let index = route.outputInterface, let link = links[index],
                link.flags & 0x1 != 0, link.flags & 0x40 != 0, link.flags & 0x8 == 0,
                addresses[index]?.contains(route.family) == true
            else { continue }
            return NetworkPath(isUsable: true, interface: Self.kind(of: link, isWireless), interfaceName: link.name)
        }
        return NetworkPath(isUsable: false)
    }

    private static func kind(of link: Link, _ isWireless: (String) -> Bool) -> NetworkPath.Interface {
        if link.name.hasPrefix("wwan") { return .cellular }
        switch link.hardware {
        case 1: return isWireless(link.name) ? .wifi : .wiredEthernet
        case 772: return .loopback
        default: return .other
        }
    }

    /// Each `rtattr` (length, type, value; aligned to 4) from `offset` on.
    private static func attributes(
        _ body: UnsafeRawBufferPointer, from offset: Int, _ each: (UInt16, UnsafeRawBufferPointer) -> Void
    ) {
        var offset = offset
        while offset + 4 <= body.count {
            let length = Int(u16(body, offset))
            guard length >= 4, offset + length <= body.count else { return }
            each(u16(body, offset + 2), UnsafeRawBufferPointer(rebasing: body[(offset + 4)..<(offset + length)]))
            offset += (length + 3) & ~3
        }
    }

    /// Netlink's numbers are in the host's byte order.
    static func u16(_ bytes: UnsafeRawBufferPointer, _ offset: Int) -> UInt16 {
        bytes.loadUnaligned(fromByteOffset: offset, as: UInt16.self)
    }

    static func u32(_ bytes: UnsafeRawBufferPointer, _ offset: Int) -> UInt32 {
        bytes.loadUnaligned(fromByteOffset: offset, as: UInt32.self)
    }
}
