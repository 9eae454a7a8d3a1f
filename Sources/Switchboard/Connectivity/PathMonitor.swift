import Foundation

#if os(Linux)
import Glibc

/// Follows the network path on Linux from the kernel's routing socket (netlink), with no dependency: a thread of its
/// own waits for the kernel's notice of any change to links, addresses or routes, then reads the tables whole again
/// and judges the path (`RouteTable.path`).
enum PathMonitor {
    /// `RTMGRP_LINK`, `RTMGRP_IPV4_IFADDR`, `RTMGRP_IPV4_ROUTE`, `RTMGRP_IPV6_IFADDR`, `RTMGRP_IPV6_ROUTE`.
    private static let groups: UInt32 = 0x1 | 0x10 | 0x40 | 0x100 | 0x400

    /// `sockaddr_nl`.
    private struct Address {
        var family = UInt16(AF_NETLINK)
        var pad: UInt16 = 0
        var pid: UInt32 = 0
        var groups: UInt32 = 0
    }

    /// Starts following; `update` gets the first path at once, then each change. Without a routing socket (a
    /// sandbox that refuses one), the path reads as usable and never changes: nothing waits on what cannot be known.
    static func start(_ update: @escaping @Sendable (NetworkPath) -> Void) {
        let events = open(groups: groups)
        guard events >= 0 else {
            update(NetworkPath(isUsable: true))
            return
        }
        update(current())
        let thread = Thread {
            var buffer = [UInt8](repeating: 0, count: 1 << 16)
            while true {
                let count = buffer.withUnsafeMutableBytes { recv(events, $0.baseAddress, $0.count, 0) }
                // ENOBUFS: notices were lost; the tables are read whole again anyway.
                if count < 0, errno != EINTR, errno != ENOBUFS { break }
                update(current())
            }
            close(events)
        }
        thread.name = "Switchboard.PathMonitor"
        thread.start()
    }

    /// The path now, from a dump of the links, addresses and routes.
    static func current() -> NetworkPath {
        let socket = open(groups: 0)
        guard socket >= 0 else { return NetworkPath(isUsable: true) }
        defer { close(socket) }
        var table = RouteTable()
        for (sequence, (type, header)) in [
            (RouteTable.getLink, 16), (RouteTable.getAddress, 8), (RouteTable.getRoute, 12),
        ]
        .enumerated() {
            guard dump(type, headerLength: header, sequence: UInt32(sequence + 1), on: socket, into: &table) else {
                return NetworkPath(isUsable: true)
            }
        }
        return table.path { name in FileManager.default.fileExists(atPath: "/sys/class/net/\(name)/wireless") }
    }

    private static func open(groups: UInt32) -> Int32 {
        let descriptor = socket(AF_NETLINK, Int32(SOCK_RAW.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else { return -1 }
        var address = Address(groups: groups)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(descriptor, $0, socklen_t(MemoryLayout<Address>.size))
            }
        }
        guard bound == 0 else {
            close(descriptor)
            return -1
        }
        return descriptor
    }

    /// Asks for a dump (`NLM_F_REQUEST | NLM_F_DUMP`) of one kind, with an empty family header, and reads it whole.
    private static func dump(
        _ type: UInt16, headerLength: Int, sequence: UInt32, on socket: Int32, into table: inout RouteTable
    ) -> Bool {
        var request = [UInt8](repeating: 0, count: 16 + headerLength)
        request.withUnsafeMutableBytes { bytes in
            bytes.storeBytes(of: UInt32(bytes.count), toByteOffset: 0, as: UInt32.self)
            bytes.storeBytes(of: type, toByteOffset: 4, as: UInt16.self)
            bytes.storeBytes(of: UInt16(0x1 | 0x300), toByteOffset: 6, as: UInt16.self)
            bytes.storeBytes(of: sequence, toByteOffset: 8, as: UInt32.self)
        }
        let sent = request.withUnsafeBytes { send(socket, $0.baseAddress, $0.count, 0) }
        guard sent == request.count else { return false }
        var buffer = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let count = buffer.withUnsafeMutableBytes { recv(socket, $0.baseAddress, $0.count, 0) }
            if count < 0, errno == EINTR { continue }
            guard count > 0 else { return false }
            if buffer.withUnsafeBytes({ table.read(UnsafeRawBufferPointer(rebasing: $0[0..<count])) }) { return true }
        }
    }
}
#elseif canImport(Network)
import Network

/// Follows the network path on Apple platforms with `NWPathMonitor`: `satisfied` is usable, and the interface is the
/// first the path uses.
enum PathMonitor {
    private static let monitor = NWPathMonitor()

    static func start(_ update: @escaping @Sendable (NetworkPath) -> Void) {
        monitor.pathUpdateHandler = { path in
            let interface = path.availableInterfaces.first { path.usesInterfaceType($0.type) }
            let kind: NetworkPath.Interface? =
                switch interface?.type {
                case .wifi: .wifi
                case .cellular: .cellular
                case .wiredEthernet: .wiredEthernet
                case .loopback: .loopback
                case .other: .other
                default: nil
                }
            update(NetworkPath(isUsable: path.status == .satisfied, interface: kind, interfaceName: interface?.name))
        }
        monitor.start(queue: DispatchQueue(label: "Switchboard.PathMonitor"))
    }
}
#else
/// No monitor on this platform: the path reads as usable.
enum PathMonitor {
    static func start(_ update: @escaping @Sendable (NetworkPath) -> Void) {
        update(NetworkPath(isUsable: true))
    }
}
#endif
