import Foundation
import Glibc
import LinkConditioner

/// 127.0.0.1:`port` as a socket address; port 0 lets `bind` pick a free one.
public func loopbackAddress(port: UInt16 = 0) -> sockaddr_in {
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = port.bigEndian
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    return address
}

/// A blocking TCP socket for tests and the benchmark, with receive and send timeouts so a hung proxy fails the test instead of hanging it.
public final class TestConnection: @unchecked Sendable {
    public let fd: Int32

    public init(fd: Int32, timeout: Double = 20) {
        self.fd = fd
        var tv = timeval(tv_sec: Int(timeout), tv_usec: Int((timeout - Double(Int(timeout))) * 1e6))
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        var one: Int32 = 1
        setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
    }

    /// Connects to 127.0.0.1:`port` (or [::1] when `ipv6`).
    public static func connect(port: UInt16, ipv6: Bool = false, timeout: Double = 20) throws -> TestConnection {
        let fd = socket(ipv6 ? AF_INET6 : AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw TestError("socket: \(errno)") }
        let result: Int32
        if ipv6 {
            var address = sockaddr_in6()
            address.sin6_family = sa_family_t(AF_INET6)
            address.sin6_port = port.bigEndian
            address.sin6_addr = in6addr_loopback
            result = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in6>.size))
                }
            }
        } else {
            var address = loopbackAddress(port: port)
            result = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
        }
        guard result == 0 else {
            let code = errno
            Glibc.close(fd)
            throw TestError("connect to port \(port): \(String(cString: strerror(code)))")
        }
        return TestConnection(fd: fd, timeout: timeout)
    }

    public func send(_ bytes: [UInt8]) throws {
        var offset = 0
        while offset < bytes.count {
            let n = bytes.withUnsafeBytes {
                Glibc.send(fd, $0.baseAddress! + offset, bytes.count - offset, Int32(MSG_NOSIGNAL))
            }
            guard n > 0 else { throw TestError("send: \(String(cString: strerror(errno)))") }
            offset += n
        }
    }

    /// Reads up to `max` bytes; an empty array is end of stream.
    public func receive(max: Int = 65536) throws -> [UInt8] {
        var buffer = [UInt8](repeating: 0, count: max)
        let n = buffer.withUnsafeMutableBytes { Glibc.recv(fd, $0.baseAddress!, max, 0) }
        guard n >= 0 else { throw TestError("recv: \(String(cString: strerror(errno)))") }
        return Array(buffer[0..<n])
    }

    /// Reads exactly `count` bytes or throws.
    public func receive(exactly count: Int) throws -> [UInt8] {
        var result: [UInt8] = []
        result.reserveCapacity(count)
        while result.count < count {
            let chunk = try receive(max: min(65536, count - result.count))
            guard !chunk.isEmpty else { throw TestError("end of stream after \(result.count) of \(count) bytes") }
            result += chunk
        }
        return result
    }

    /// Reads until end of stream; returns the byte count and a checksum, without keeping the data.
    public func drain() throws -> (count: Int, checksum: UInt64) {
        var digest = StreamDigest()
        try drain(into: &digest)
        return (digest.count, digest.value)
    }

    /// Reads until end of stream, adding every byte to `digest` (which may already hold the stream's start).
    public func drain(into digest: inout StreamDigest) throws {
        while true {
            let chunk = try receive(max: 262_144)
            if chunk.isEmpty { return }
            digest.add(chunk)
        }
    }

    /// Receives into `digest` until it has counted `total` bytes, never reading past them; throws if the stream
    /// ends first.
    public func receive(until total: Int, into digest: inout StreamDigest) throws {
        while digest.count < total {
            let chunk = try receive(max: min(65_536, total - digest.count))
            guard !chunk.isEmpty else { throw TestError("the stream ended after \(digest.count) of \(total) bytes") }
            digest.add(chunk)
        }
    }

    public func shutdownWrite() { Glibc.shutdown(fd, Int32(SHUT_WR)) }

    public func close() { Glibc.close(fd) }

    /// Closes with a reset (SO_LINGER 0) instead of a FIN: the peer learns at once that the client is gone for good.
    public func closeWithReset() {
        var option = linger(l_onoff: 1, l_linger: 0)
        setsockopt(fd, SOL_SOCKET, SO_LINGER, &option, socklen_t(MemoryLayout<linger>.size))
        Glibc.close(fd)
    }
}

public struct TestError: Error, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}

/// FNV-1a over a byte stream, order-sensitive, so reordered or altered bytes change it.
public struct StreamDigest: Sendable {
    public init() {}
    public private(set) var value: UInt64 = 0xcbf2_9ce4_8422_2325
    public private(set) var count = 0

    public mutating func add(_ bytes: [UInt8]) {
        for byte in bytes {
            value = (value ^ UInt64(byte)) &* 0x100_0000_01b3
        }
        count += bytes.count
    }
}

/// Deterministic pseudo-random payload, generated in blocks so 64 MiB does not need to be held at once.
public struct Payload: Sendable {
    public let size: Int
    public let seed: UInt64

    public init(size: Int, seed: UInt64) {
        self.size = size
        self.seed = seed
    }

    /// Calls `body` with consecutive blocks of the payload.
    public func forEachBlock(blockSize: Int = 262_144, _ body: ([UInt8]) throws -> Void) rethrows {
        var state = seed | 1
        var produced = 0
        while produced < size {
            let count = min(blockSize, size - produced)
            var block = [UInt8](repeating: 0, count: count)
            for index in 0..<count {
                state ^= state << 13
                state ^= state >> 7
                state ^= state << 17
                block[index] = UInt8(truncatingIfNeeded: state)
            }
            try body(block)
            produced += count
        }
    }

    public var digest: StreamDigest {
        var digest = StreamDigest()
        forEachBlock { digest.add($0) }
        return digest
    }
}

/// A blocking TCP server on 127.0.0.1 port 0; each accepted connection runs `handler` on its own thread.
public final class TestServer: @unchecked Sendable {
    public let fd: Int32
    public let port: UInt16
    private let handler: @Sendable (TestConnection) -> Void
    private let acceptThreadDone = DispatchSemaphore(value: 0)

    public init(handler: @escaping @Sendable (TestConnection) -> Void) throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        self.fd = fd
        var one: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        var address = loopbackAddress()
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard bound == 0, listen(fd, 1024) == 0 else { throw TestError("bind/listen: \(errno)") }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        port = UInt16(bigEndian: address.sin_port)
        self.handler = handler
        let thread = Thread { [self] in
            while true {
                let client = accept(fd, nil, nil)
                if client < 0 { break }
                let connection = TestConnection(fd: client)
                let handler = self.handler
                Thread.detachNewThread { handler(connection) }
            }
            acceptThreadDone.signal()
        }
        thread.start()
    }

    /// Stops accepting; connections already handed to handlers finish on their own.
    public func stop() {
        Glibc.shutdown(fd, Int32(SHUT_RDWR))
        acceptThreadDone.wait()
        Glibc.close(fd)
    }

    /// A server that echoes every byte back and half-closes when the client does.
    public static func echo() throws -> TestServer {
        try TestServer { connection in
            defer { connection.close() }
            while let chunk = try? connection.receive(), !chunk.isEmpty {
                guard (try? connection.send(chunk)) != nil else { return }
            }
            connection.shutdownWrite()
        }
    }

    /// A server that sends `payload` to each client, half-closes, and closes once the client has.
    public static func sending(_ payload: Payload) throws -> TestServer {
        try TestServer { connection in
            defer { connection.close() }
            try? payload.forEachBlock { try connection.send($0) }
            connection.shutdownWrite()
            _ = try? connection.drain()
        }
    }
}

extension ConditionedProxy {
    /// A proxy on 127.0.0.1 port 0 in front of `upstreamPort`.
    public static func inFront(of upstreamPort: UInt16, profile: Profile, options: ProxyOptions = ProxyOptions()) throws
        -> ConditionedProxy
    {
        try ConditionedProxy(
            listeners: [
                ListenerSpec(
                    listen: Endpoint(host: "127.0.0.1", port: 0),
                    upstream: Endpoint(host: "127.0.0.1", port: upstreamPort))
            ],
            profile: profile, options: options)
    }

    public var port: UInt16 { listeners[0].address.port }
}

/// Seconds elapsed on the monotonic clock since `start`.
public func secondsSince(_ start: Instant) -> Double { (MonotonicClock().now() - start).seconds }

/// Waits until `condition` holds, polling every 10 ms for at most `seconds`; returns whether it held.
@discardableResult
public func waitUntil(seconds: Double, _ condition: () throws -> Bool) rethrows -> Bool {
    let deadline = Date().addingTimeInterval(seconds)
    while Date() < deadline {
        if try condition() { return true }
        usleep(10_000)
    }
    return try condition()
}

/// A value shared between a test and the threads it starts.
public final class LockedBox<Value>: @unchecked Sendable {
    private let lock = NSLock()
    private var stored: Value

    public init(_ value: Value) { stored = value }

    public var value: Value {
        get {
            lock.lock()
            defer { lock.unlock() }
            return stored
        }
        set {
            lock.lock()
            stored = newValue
            lock.unlock()
        }
    }

    public func mutate(_ body: (inout Value) -> Void) {
        lock.lock()
        body(&stored)
        lock.unlock()
    }
}

/// Sends `request` to 127.0.0.1:`port` from a process of uid 65534 (`setpriv`, as root) and returns everything
/// answered until the connection closes: a client that is not the owner, for the same-user checks.
public func exchangeAsAnotherUser(port: UInt16, _ request: String) throws -> String {
    let script = """
        import socket, sys
        s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=20)
        s.sendall(sys.argv[2].encode())
        data = b""
        while True:
            chunk = s.recv(65536)
            if not chunk: break
            data += chunk
        sys.stdout.write(data.decode())
        """
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/setpriv")
    process.arguments = [
        "--reuid=65534", "--regid=65534", "--clear-groups", "/usr/bin/python3", "-c", script, "\(port)", request,
    ]
    let output = Pipe()
    process.standardOutput = output
    try process.run()
    let answer = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    process.waitUntilExit()
    return answer
}
