import Glibc

extension Socket {
    /// The address of the other end of a connected socket (`getpeername`).
    func peerAddress() throws(SystemError) -> SocketAddress {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        _ = try withUnsafeMutablePointer(to: &storage) { (pointer) throws(SystemError) -> Int32 in
            try pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { (address) throws(SystemError) -> Int32 in
                try syscall("getpeername") { getpeername(descriptor, address, &length) }
            }
        }
        return SocketAddress(storage: storage, length: length)
    }

    /// The user who owns the other end of this TCP connection, when that end is on this machine (in this network
    /// namespace): the kernel's socket table (/proc/net/tcp, or tcp6) lists every socket with its owner, and the
    /// peer's is the one whose local address is this connection's peer and whose remote address is this end.
    /// Nil when no such socket is listed (the peer is another host, or already gone). Reads the whole table, so
    /// call it for rare requests only, after cheaper checks passed.
    func localPeerUserID() -> UInt32? {
        guard let local = try? localAddress(), let peer = try? peerAddress() else { return nil }
        let wanted = (Self.tableForm(of: peer), Self.tableForm(of: local))
        let table = Self.readProcFile(local.isIPv6 ? "/proc/net/tcp6" : "/proc/net/tcp")
        for line in table.split(separator: "\n").dropFirst() {
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            guard fields.count > 7, fields[1] == wanted.0, fields[2] == wanted.1 else { continue }
            return UInt32(fields[7])
        }
        return nil
    }

    /// Who holds the other end of this accepted TCP connection, for the endpoints that serve only linkcond's own
    /// user (and root): one of linkcond's own sockets (see `OwnConnections`) is told apart first, as the kernel
    /// lists it as linkcond's user's whoever it relays. Reads the socket table; see `localPeerUserID`.
    package func localClient() -> LocalClient {
        if let local = try? localAddress(), let peer = try? peerAddress(),
            OwnConnections.shared.contains(local: peer, remote: local)
        {
            return .linkcondItself
        }
        guard let user = localPeerUserID() else { return .unknown }
        return user == CurrentUser.id || user == 0 ? .owner(user) : .otherUser(user)
    }

    /// `address` as the socket table writes it: each 32-bit word of the address as the host stores it, in hex,
    /// then `:` and the port in hex (`0100007F:1F90` for 127.0.0.1:8080 on a little-endian machine).
    private static func tableForm(of address: SocketAddress) -> Substring {
        let bytes = address.addressBytes
        let words = stride(from: 0, to: bytes.count, by: 4).map { start in
            let word = bytes[start..<(start + 4)].withUnsafeBytes { $0.loadUnaligned(as: UInt32.self) }
            return hex(word, digits: 8)
        }
        return Substring(words.joined() + ":" + hex(UInt32(address.port), digits: 4))
    }

    private static func hex(_ value: UInt32, digits: Int) -> String {
        let text = String(value, radix: 16, uppercase: true)
        return String(repeating: "0", count: max(0, digits - text.count)) + text
    }

    /// The text of a file in /proc (whose size stat does not tell), read to its end; empty when it cannot be read.
    private static func readProcFile(_ path: String) -> String {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return "" }
        defer { _ = Glibc.close(descriptor) }
        var text: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let got = buffer.withUnsafeMutableBytes { raw in Glibc.read(descriptor, raw.baseAddress!, raw.count) }
            if got < 0 && Errno.current == .interrupted { continue }
            guard got > 0 else { break }
            text += buffer[..<got]
        }
        return String(decoding: text, as: UTF8.self)
    }
}

/// The other end of a connection to an endpoint that serves only linkcond's own user, as the kernel tells it.
package enum LocalClient: Equatable, CustomStringConvertible {
    /// A program of linkcond's own user, or of root: served.
    case owner(UInt32)
    /// A program of another user.
    case otherUser(UInt32)
    /// One of linkcond's own sockets: a relay or proxy whose upstream is this endpoint, relaying whoever reached it.
    case linkcondItself
    /// Not in this network namespace's socket table: another host, or a client already gone.
    case unknown

    package var isOwner: Bool {
        if case .owner = self { return true }
        return false
    }

    /// Who the client is, for a log line or a refusal.
    package var description: String {
        switch self {
        case .owner(let user): "user \(user)"
        case .otherUser(let user): "user \(user)"
        case .linkcondItself: "one of linkcond's own relays (a relay or proxy whose upstream is this endpoint)"
        case .unknown: "a client of unknown user"
        }
    }
}
