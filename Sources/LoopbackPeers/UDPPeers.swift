import Foundation
import Glibc
import LinkConditioner

/// A blocking UDP socket on 127.0.0.1 (port 0 unless given) with a receive timeout, for tests and the benchmark.
public final class TestDatagramSocket: @unchecked Sendable {
    public let fd: Int32
    public let port: UInt16

    /// Binds 127.0.0.1:`port`; `receive` gives up after `timeout` seconds.
    public init(port: UInt16 = 0, timeout: Double = 5) throws {
        let fd = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
        guard fd >= 0 else { throw TestError("socket: \(errno)") }
        var address = loopbackAddress(port: port)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard bound == 0 else {
            Glibc.close(fd)
            throw TestError("bind 127.0.0.1:\(port): \(String(cString: strerror(errno)))")
        }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        self.fd = fd
        self.port = UInt16(bigEndian: address.sin_port)
        setTimeout(timeout)
        // A large receive buffer, beyond net.core.rmem_max when running as root, so a test peer drops nothing.
        var size: Int32 = 4 << 20
        if setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &size, socklen_t(MemoryLayout<Int32>.size)) != 0 {
            setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        }
    }

    /// Changes how long `receive` waits.
    public func setTimeout(_ timeout: Double) {
        var tv = timeval(tv_sec: Int(timeout), tv_usec: Int((timeout - Double(Int(timeout))) * 1e6))
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
    }

    /// Sends one datagram to 127.0.0.1:`port`.
    public func send(_ bytes: [UInt8], to port: UInt16) throws {
        var address = loopbackAddress(port: port)
        let sent = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { target in
                bytes.withUnsafeBytes {
                    Glibc.sendto(fd, $0.baseAddress, bytes.count, 0, target, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
        }
        guard sent == bytes.count else { throw TestError("sendto port \(port): \(String(cString: strerror(errno)))") }
    }

    /// Receives one datagram and the port it came from, or nil when the timeout passes first.
    public func receive(max: Int = 65536) -> (bytes: [UInt8], port: UInt16)? {
        var buffer = [UInt8](repeating: 0, count: max)
        var address = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let count = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { source in
                buffer.withUnsafeMutableBytes { Glibc.recvfrom(fd, $0.baseAddress, max, 0, source, &length) }
            }
        }
        guard count >= 0 else { return nil }
        return (Array(buffer[0..<count]), UInt16(bigEndian: address.sin_port))
    }

    public func close() { Glibc.close(fd) }
}

/// A UDP server on 127.0.0.1 port 0 that answers each datagram with `reply(datagram)` to its sender on its own
/// thread; `stop` ends it. Counts what it received.
public final class TestDatagramServer: @unchecked Sendable {
    public let port: UInt16
    private let socket: TestDatagramSocket
    private let stopped = LockedBox(false)
    private let done = DispatchSemaphore(value: 0)
    private let received = LockedBox<[[UInt8]]>([])
    private let senders = LockedBox<Set<UInt16>>([])

    public init(reply: @escaping @Sendable ([UInt8]) -> [UInt8]? = { $0 }) throws {
        let socket = try TestDatagramSocket(timeout: 0.05)
        self.socket = socket
        self.port = socket.port
        let stopped = self.stopped
        let done = self.done
        let received = self.received
        let senders = self.senders
        Thread.detachNewThread {
            while !stopped.value {
                guard let (bytes, from) = socket.receive() else { continue }
                received.mutate { $0.append(bytes) }
                senders.mutate { _ = $0.insert(from) }
                if let answer = reply(bytes) { try? socket.send(answer, to: from) }
            }
            done.signal()
        }
    }

    /// Every datagram received so far, in arrival order.
    public var datagrams: [[UInt8]] { received.value }

    /// The distinct source ports datagrams came from: one per relayed flow.
    public var sourcePorts: Set<UInt16> { senders.value }

    public func stop() {
        stopped.value = true
        done.wait()
        socket.close()
    }
}

extension ConditionedProxy {
    /// A UDP relay on 127.0.0.1 port 0 in front of 127.0.0.1:`upstreamPort`.
    public static func udpInFront(of upstreamPort: UInt16, profile: Profile, options: ProxyOptions = ProxyOptions())
        throws -> ConditionedProxy
    {
        try ConditionedProxy(
            listeners: [
                ListenerSpec(
                    listen: Endpoint(host: "127.0.0.1", port: 0),
                    kind: .udp(upstream: Endpoint(host: "127.0.0.1", port: upstreamPort)))
            ],
            profile: profile, options: options)
    }
}
