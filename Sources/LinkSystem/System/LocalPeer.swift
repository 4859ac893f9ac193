import CLinuxShims
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
    /// namespace): the peer's socket is the one whose local address is this connection's peer and whose remote
    /// address is this end. Asked of the kernel for that one socket (sock_diag), which costs a few system calls;
    /// where sock_diag is unavailable, the kernel's socket table (/proc/net/tcp, or tcp6) is read whole instead.
    /// Nil when no such socket exists (the peer is another host, or already gone).
    package func localPeerUserID() -> UInt32? {
        guard let local = try? localAddress(), let peer = try? peerAddress() else { return nil }
        switch Self.socketOwner(local: peer, remote: local) {
        case .found(let user): return user
        case .absent: return nil
        case .unanswered: return Self.tableOwner(local: peer, remote: local)
        }
    }

    /// `localPeerUserID` without its fallback: nil also where sock_diag cannot be asked, so that a caller on the data
    /// path (once per accepted connection) never reads the whole socket table.
    package func localPeerUserIDFromKernel() -> UInt32? {
        guard let local = try? localAddress(), let peer = try? peerAddress(),
            case .found(let user) = Self.socketOwner(local: peer, remote: local)
        else { return nil }
        return user
    }

    /// What sock_diag says of the TCP socket from `local` to `remote`.
    enum DiagnosedOwner: Equatable {
        case found(UInt32)
        /// The kernel has no such socket.
        case absent
        /// sock_diag could not be asked (no descriptor, no netlink in this sandbox).
        case unanswered
    }

    static func socketOwner(local: SocketAddress, remote: SocketAddress) -> DiagnosedOwner {
        let (localBytes, remoteBytes) = (local.addressBytes, remote.addressBytes)
        guard localBytes.count == remoteBytes.count else { return .unanswered }
        var user: UInt32 = 0
        let result = clinux_tcp_socket_owner(
            localBytes.count == 16 ? AF_INET6 : AF_INET, localBytes, local.port, remoteBytes, remote.port, &user)
        if result == 0 { return .found(user) }
        return result == -ENOENT ? .absent : .unanswered
    }

    /// The owner of the TCP socket from `local` to `remote` as the socket table lists it: reads the whole table.
    private static func tableOwner(local: SocketAddress, remote: SocketAddress) -> UInt32? {
        let wanted = (tableForm(of: local), tableForm(of: remote))
        let table = readProcFile(local.isIPv6 ? "/proc/net/tcp6" : "/proc/net/tcp")
        for line in table.split(separator: "\n").dropFirst() {
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            guard fields.count > 7, fields[1] == wanted.0, fields[2] == wanted.1 else { continue }
            return UInt32(fields[7])
        }
        return nil
    }

    /// Who holds the other end of this accepted TCP connection, for the endpoints that serve only linkcond's own
    /// user (and root): one of linkcond's own sockets (see `OwnConnections`) is told apart first, as the kernel
    /// lists it as linkcond's user's whoever it relays. Asks the kernel of the peer's socket; see `localPeerUserID`.
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
