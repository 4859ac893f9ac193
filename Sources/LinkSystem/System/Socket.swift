import CLinuxShims
import Glibc
import LinkModel
import Synchronization

/// A non-blocking, close-on-exec socket descriptor. A plain value: whoever created it closes it, exactly once.
public struct Socket: Hashable, Sendable {
    public let descriptor: Int32

    package init(descriptor: Int32) { self.descriptor = descriptor }

    /// Opens a non-blocking TCP socket for `family` (`AF_INET` or `AF_INET6`).
    package static func tcp(family: Int32) throws(SystemError) -> Socket {
        try marked(
            Socket(descriptor: try syscall("socket") { clinux_socket_nonblocking(family, Int32(SOCK_STREAM.rawValue)) })
        )
    }

    /// The firewall mark (SO_MARK) every TCP and UDP socket linkcond opens carries, 0 for none.
    ///
    /// `linkcond attach` sets it once, before any thread opens sockets, so that the nftables rules redirecting its
    /// namespace's connections to linkcond let linkcond's own upstream connections and DNS queries through:
    /// without it they would be redirected to linkcond again, a loop. A mark is the process's own, whoever the
    /// user: matching by socket owner (`meta skuid`) would also exempt an app that runs as the same user (root in
    /// many containers), and a cgroup match depends on how the container engine lays out cgroups.
    private static let outgoingMark = Atomic<UInt32>(0)

    /// Marks every socket opened from now on with `mark` (needs CAP_NET_ADMIN).
    public static func markEverySocket(_ mark: UInt32) {
        outgoingMark.store(mark, ordering: .releasing)
    }

    /// `socket`, carrying the outgoing mark when one is set; closed when setting it fails.
    static func marked(_ socket: Socket) throws(SystemError) -> Socket {
        let mark = outgoingMark.load(ordering: .acquiring)
        guard mark != 0 else { return socket }
        do {
            try socket.setOption(SOL_SOCKET, SO_MARK, Int32(bitPattern: mark), name: "SO_MARK")
        } catch {
            socket.close()
            throw error
        }
        return socket
    }

    /// Opens a non-blocking TCP socket bound to `address` and listening, with SO_REUSEADDR.
    package static func listening(on address: SocketAddress, backlog: Int32 = 1024) throws(SystemError) -> Socket {
        let socket = try tcp(family: address.family)
        do {
            try socket.setOption(SOL_SOCKET, SO_REUSEADDR, 1, name: "SO_REUSEADDR")
            if address.isIPv6 { try socket.setOption(Int32(IPPROTO_IPV6), IPV6_V6ONLY, 1, name: "IPV6_V6ONLY") }
            try address.withSockAddr { (pointer, length) throws(SystemError) in
                _ = try syscall("bind \(address)") { bind(socket.descriptor, pointer, length) }
            }
            _ = try syscall("listen \(address)") { listen(socket.descriptor, backlog) }
        } catch {
            socket.close()
            throw error
        }
        return socket
    }

    /// A second descriptor for the same socket, close-on-exec. A listener restarted on its own address takes one,
    /// so the address is never free for another socket to take between the old listener's close and the new one.
    package func duplicate() throws(SystemError) -> Socket {
        Socket(descriptor: try syscall("fcntl F_DUPFD_CLOEXEC") { clinux_dup_cloexec(descriptor) })
    }

    /// Accepts one pending connection as a non-blocking socket, or reports that none is waiting.
    package func accept() throws(SystemError) -> IOResult<(Socket, SocketAddress)> {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let result = try nonBlockingSyscall("accept") { clinux_accept_nonblocking(descriptor, &storage, &length) }
        switch result {
        case .processed(let fd):
            return .processed((Socket(descriptor: fd), SocketAddress(storage: storage, length: length)))
        case .wouldBlock:
            return .wouldBlock
        }
    }

    /// Starts a non-blocking TCP connect; true when it completed at once, false when it is in progress (wait for
    /// writability). EINPROGRESS is the usual answer, so it is a result: no error (nor its message) is made for it.
    /// The socket is noted in `OwnConnections` until it closes.
    package func connect(to address: SocketAddress) throws(SystemError) -> Bool {
        let completed = try startConnect(to: address)
        if let local = try? localAddress() { OwnConnections.shared.add(descriptor, local: local, remote: address) }
        return completed
    }

    /// `connect(2)` alone, for a UDP socket too; true when it completed at once.
    func startConnect(to address: SocketAddress) throws(SystemError) -> Bool {
        let result = try address.withSockAddr { (pointer, length) throws(SystemError) in
            try nonBlockingSyscall("connect \(address)", pending: .inProgress) {
                Glibc.connect(descriptor, pointer, length)
            }
        }
        if case .processed = result { return true }
        return false
    }

    /// Reads into `buffer`; `.processed(0)` is end of stream.
    package func read(into buffer: UnsafeMutableRawBufferPointer) throws(SystemError) -> IOResult<Int> {
        let result = try nonBlockingSyscall("read") { Glibc.read(descriptor, buffer.baseAddress, buffer.count) }
        switch result {
        case .processed(let count): return .processed(count)
        case .wouldBlock: return .wouldBlock
        }
    }

    /// Asks the kernel to stamp what arrives on this socket with its receive time (SO_TIMESTAMPNS), which
    /// `readStamped` and `receiveDatagrams` return; `false` stops it.
    package func stampArrivals(_ on: Bool = true) throws(SystemError) {
        try setOption(SOL_SOCKET, SO_TIMESTAMPNS, on ? 1 : 0, name: "SO_TIMESTAMPNS")
    }

    /// Reads into `buffer` like `read`, with when the last byte read reached the socket, if the kernel stamped it.
    package func readStamped(into buffer: UnsafeMutableRawBufferPointer) throws(SystemError) -> (
        IOResult<Int>, arrival: Instant?
    ) {
        var arrival: Int64 = 0
        let result = try nonBlockingSyscall("recvmsg") {
            clinux_recv_stamped(descriptor, buffer.baseAddress, buffer.count, &arrival)
        }
        switch result {
        case .processed(let count): return (.processed(count), arrival > 0 ? Instant(nanoseconds: arrival) : nil)
        case .wouldBlock: return (.wouldBlock, nil)
        }
    }

    /// Writes from `buffer` without raising SIGPIPE; returns how many bytes the kernel took.
    package func write(_ buffer: UnsafeRawBufferPointer) throws(SystemError) -> IOResult<Int> {
        let result = try nonBlockingSyscall("write") {
            clinux_send_nosignal(descriptor, buffer.baseAddress, buffer.count)
        }
        switch result {
        case .processed(let count): return .processed(count)
        case .wouldBlock: return .wouldBlock
        }
    }

    /// Half-closes the sending side: the peer reads end of stream after the data already sent.
    package func shutdownWrite() throws(SystemError) {
        _ = try syscall("shutdown") { Glibc.shutdown(descriptor, Int32(SHUT_WR)) }
    }

    /// Disables Nagle's algorithm so small writes leave at once (the link model does the delaying).
    package func setNoDelay() throws(SystemError) {
        try setOption(Int32(IPPROTO_TCP), TCP_NODELAY, 1, name: "TCP_NODELAY")
    }

    /// Whether Nagle's algorithm is disabled (TCP_NODELAY).
    package func isNoDelay() throws(SystemError) -> Bool {
        var value: Int32 = 0
        var length = socklen_t(MemoryLayout<Int32>.size)
        _ = try syscall("getsockopt TCP_NODELAY") {
            getsockopt(descriptor, Int32(IPPROTO_TCP), TCP_NODELAY, &value, &length)
        }
        return value != 0
    }

    /// Makes the next `close` send a reset instead of a FIN.
    package func setResetOnClose() throws(SystemError) {
        var linger = Glibc.linger(l_onoff: 1, l_linger: 0)
        _ = try syscall("setsockopt SO_LINGER") {
            setsockopt(descriptor, SOL_SOCKET, SO_LINGER, &linger, socklen_t(MemoryLayout<Glibc.linger>.size))
        }
    }

    /// The pending error of a socket (how a non-blocking connect reports failure), or nil.
    package func pendingError() throws(SystemError) -> Errno? {
        var value: Int32 = 0
        var length = socklen_t(MemoryLayout<Int32>.size)
        _ = try syscall("getsockopt SO_ERROR") { getsockopt(descriptor, SOL_SOCKET, SO_ERROR, &value, &length) }
        return value == 0 ? nil : Errno(rawValue: value)
    }

    /// The address the socket is bound to (the real port when port 0 was asked).
    package func localAddress() throws(SystemError) -> SocketAddress {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        _ = try withUnsafeMutablePointer(to: &storage) { (pointer) throws(SystemError) -> Int32 in
            try pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { (address) throws(SystemError) -> Int32 in
                try syscall("getsockname") { getsockname(descriptor, address, &length) }
            }
        }
        return SocketAddress(storage: storage, length: length)
    }

    func setOption(_ level: Int32, _ option: Int32, _ value: Int32, name: String) throws(SystemError) {
        var value = value
        _ = try syscall("setsockopt \(name)") {
            setsockopt(descriptor, level, option, &value, socklen_t(MemoryLayout<Int32>.size))
        }
    }

    /// Closes the descriptor. Errors from close are not actionable for a socket and are ignored.
    package func close() {
        OwnConnections.shared.remove(descriptor)
        _ = Glibc.close(descriptor)
    }
}
