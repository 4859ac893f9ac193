import Foundation

/// The TCP connections linkcond itself opened (the upstream sockets of relays, Toxiproxy proxies and the DNS
/// forwarder), by their two addresses, so that an endpoint serving only its owner's programs can tell when its
/// client is one of linkcond's own sockets: a relay whose upstream is that endpoint relays whoever reached the
/// relay, of any user, and the kernel lists the relay's socket as linkcond's user's.
///
/// Process-wide and thread-safe: relays connect and close on every loop thread, under `lock`. `Socket.connect`
/// notes each socket and `Socket.close` forgets it, so the table holds live sockets only.
final class OwnConnections: @unchecked Sendable {
    static let shared = OwnConnections()

    /// The two ends of a connection, each as canonical address bytes (an IPv4-mapped IPv6 address as its IPv4
    /// bytes) and a port, so that both spellings of one host compare equal.
    struct Ends: Hashable {
        var local: [UInt8]
        var localPort: UInt16
        var remote: [UInt8]
        var remotePort: UInt16

        init(local: SocketAddress, remote: SocketAddress) {
            self.local = local.canonicalAddressBytes
            localPort = local.port
            // A connect to an unspecified address (0.0.0.0, ::) reaches loopback, where the server sees that address.
            let remoteBytes = remote.canonicalAddressBytes
            self.remote =
                remoteBytes.allSatisfy { $0 == 0 }
                ? (remoteBytes.count == 4 ? [127, 0, 0, 1] : [UInt8](repeating: 0, count: 15) + [1])
                : remoteBytes
            remotePort = remote.port
        }
    }

    private let lock = NSLock()
    private var endsByDescriptor: [Int32: Ends] = [:]
    /// How many live sockets have each pair of ends (more than one only while a closed socket's descriptor is reused).
    private var count: [Ends: Int] = [:]

    /// Notes that `descriptor` connects from `local` to `remote`.
    func add(_ descriptor: Int32, local: SocketAddress, remote: SocketAddress) {
        let ends = Ends(local: local, remote: remote)
        lock.withLock {
            if let previous = endsByDescriptor.updateValue(ends, forKey: descriptor) { release(previous) }
            count[ends, default: 0] += 1
        }
    }

    /// Forgets `descriptor`, which is being closed; nothing happens for a descriptor that was never noted.
    func remove(_ descriptor: Int32) {
        lock.withLock {
            if let ends = endsByDescriptor.removeValue(forKey: descriptor) { release(ends) }
        }
    }

    /// Whether one of linkcond's own sockets connects from `local` to `remote`: called by a server with its client's
    /// address as `local` and its own end as `remote`.
    func contains(local: SocketAddress, remote: SocketAddress) -> Bool {
        let ends = Ends(local: local, remote: remote)
        return lock.withLock { count[ends] != nil }
    }

    /// Called under `lock`.
    private func release(_ ends: Ends) {
        let remaining = count[ends, default: 1] - 1
        count[ends] = remaining > 0 ? remaining : nil
    }
}
