import Glibc

/// The IP addresses of this machine's interfaces (in linkcond's network namespace), read with `getifaddrs`.
package enum LocalInterfaces {
    /// Every interface address as 4 or 16 bytes, IPv4-mapped IPv6 ones reduced to IPv4; empty when the kernel
    /// will not list them. A connection to any of these reaches a listener bound to the unspecified address.
    package static func addresses() -> Set<[UInt8]> {
        var first: UnsafeMutablePointer<ifaddrs>?
        guard getifaddrs(&first) == 0, let first else { return [] }
        defer { freeifaddrs(first) }
        var found: Set<[UInt8]> = []
        var cursor: UnsafeMutablePointer<ifaddrs>? = first
        while let entry = cursor {
            if let address = entry.pointee.ifa_addr {
                switch Int32(address.pointee.sa_family) {
                case AF_INET:
                    var v4 = address.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { $0.pointee.sin_addr }
                    found.insert(withUnsafeBytes(of: &v4) { Array($0) })
                case AF_INET6:
                    var v6 = address.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { $0.pointee.sin6_addr }
                    found.insert(AddressBytes.canonical(withUnsafeBytes(of: &v6) { Array($0) }))
                default:
                    break
                }
            }
            cursor = entry.pointee.ifa_next
        }
        return found
    }
}
