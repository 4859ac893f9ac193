import CLinuxShims
import Glibc

extension Socket {
    /// Opens a non-blocking UDP socket for `family` (`AF_INET` or `AF_INET6`).
    static func udp(family: Int32) throws(SystemError) -> Socket {
        Socket(descriptor: try syscall("socket") { clinux_socket_nonblocking(family, Int32(SOCK_DGRAM.rawValue)) })
    }

    /// Opens a non-blocking UDP socket bound to `address` (port 0 picks a free port).
    static func datagram(boundTo address: SocketAddress) throws(SystemError) -> Socket {
        let socket = try udp(family: address.family)
        do {
            if address.isIPv6 { try socket.setOption(Int32(IPPROTO_IPV6), IPV6_V6ONLY, 1, name: "IPV6_V6ONLY") }
            try address.withSockAddr { (pointer, length) throws(SystemError) in
                _ = try syscall("bind \(address)") { bind(socket.descriptor, pointer, length) }
            }
        } catch {
            socket.close()
            throw error
        }
        return socket
    }

    /// Opens a non-blocking UDP socket connected to `address`: it sends there and receives only from there.
    static func datagram(connectedTo address: SocketAddress) throws(SystemError) -> Socket {
        let socket = try udp(family: address.family)
        do {
            _ = try socket.connect(to: address)
        } catch {
            socket.close()
            throw error
        }
        return socket
    }

    /// Receives one datagram into `buffer`; returns its length (cut to the buffer) and its sender.
    func receiveDatagram(into buffer: UnsafeMutableRawBufferPointer) throws(SystemError) -> IOResult<(Int, SocketAddress)> {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let result = try withUnsafeMutablePointer(to: &storage) { (pointer) throws(SystemError) -> IOResult<Int> in
            try pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { (address) throws(SystemError) -> IOResult<Int> in
                try nonBlockingSyscall("recvfrom") { recvfrom(descriptor, buffer.baseAddress, buffer.count, 0, address, &length) }
            }
        }
        switch result {
        case .processed(let count): return .processed((count, SocketAddress(storage: storage, length: length)))
        case .wouldBlock: return .wouldBlock
        }
    }

    /// Sends `buffer` as one datagram to `address`; `.wouldBlock` when the socket's send buffer is full.
    func sendDatagram(_ buffer: UnsafeRawBufferPointer, to address: SocketAddress) throws(SystemError) -> IOResult<Int> {
        try address.withSockAddr { (pointer, length) throws(SystemError) -> IOResult<Int> in
            try nonBlockingSyscall("sendto \(address)") {
                sendto(descriptor, buffer.baseAddress, buffer.count, Int32(MSG_NOSIGNAL), pointer, length)
            }
        }
    }
}
