import CLinuxShims
import Glibc
import LinkModel

extension SocketAddress {
    /// A Unix-domain socket address for `path`; nil when the path does not fit `sun_path`.
    public init?(unixPath path: String) {
        var storage = sockaddr_storage()
        let bytes = Array(path.utf8)
        let capacity = MemoryLayout.size(ofValue: sockaddr_un().sun_path)
        guard !bytes.isEmpty, bytes.count < capacity else { return nil }
        withUnsafeMutableBytes(of: &storage) { raw in
            let address = raw.baseAddress!.assumingMemoryBound(to: sockaddr_un.self)
            address.pointee.sun_family = sa_family_t(AF_UNIX)
            withUnsafeMutableBytes(of: &address.pointee.sun_path) { pathBytes in
                pathBytes.copyBytes(from: bytes)
            }
        }
        self.init(storage: storage, length: socklen_t(MemoryLayout<sa_family_t>.size + bytes.count + 1))
    }

    public var isUnix: Bool { family == AF_UNIX }

    /// The filesystem path of a Unix-domain address, or nil for IP addresses.
    public var unixPath: String? {
        guard isUnix else { return nil }
        return withUnsafeBytes(of: storage) { raw in
            let address = raw.load(as: sockaddr_un.self)
            return withUnsafeBytes(of: address.sun_path) { path in
                String(decoding: path.prefix { $0 != 0 }, as: UTF8.self)
            }
        }
    }
}

extension Socket {
    /// Opens a non-blocking stream socket for `address`'s family (IPv4, IPv6 or Unix).
    static func stream(for address: SocketAddress) throws(SystemError) -> Socket {
        if address.isUnix {
            return Socket(
                descriptor: try syscall("socket") { clinux_socket_nonblocking(AF_UNIX, Int32(SOCK_STREAM.rawValue)) })
        }
        return try tcp(family: address.family)
    }

    /// Listens on a Unix-domain socket at `path`, replacing a stale socket file nobody answers on.
    package static func listening(unixPath path: String) throws(SystemError) -> Socket {
        guard let address = SocketAddress(unixPath: path) else {
            throw SystemError("bind \(path)", Errno(rawValue: ENAMETOOLONG))
        }
        if let probe = try? BlockingStream.connect(to: address, timeout: .milliseconds(200)) {
            probe.close()
            throw SystemError("bind \(path)", .addressInUse)
        }
        var existing = stat()
        if lstat(path, &existing) == 0 {
            guard existing.st_mode & S_IFMT == S_IFSOCK else {
                throw SystemError(
                    "bind \(path) (not a socket: linkcond replaces only a socket nobody listens on)",
                    Errno(rawValue: EEXIST))
            }
            _ = unlink(path)
        }
        let socket = try stream(for: address)
        do {
            try address.withSockAddr { (pointer, length) throws(SystemError) in
                _ = try syscall("bind \(path)") { bind(socket.descriptor, pointer, length) }
            }
            _ = try syscall("chmod \(path)") { chmod(path, 0o600) }
            _ = try syscall("listen \(path)") { listen(socket.descriptor, 64) }
        } catch {
            socket.close()
            throw error
        }
        return socket
    }

    /// Removes a Unix-domain socket's file; a no-op for a path that is already gone.
    package static func removeSocketFile(_ path: String) { _ = unlink(path) }
}

/// A blocking stream connection with timeouts, for short request/response exchanges off the event loop
/// (the command line talking to a running linkcond). Owns its descriptor.
public final class BlockingStream {
    private let socket: Socket

    private init(socket: Socket) { self.socket = socket }

    /// Connects to `address` (IPv4, IPv6 or Unix), waiting at most `timeout` for this and every later read or write.
    public static func connect(to address: SocketAddress, timeout: Duration) throws(SystemError) -> BlockingStream {
        let socket = try Socket.stream(for: address)
        do {
            _ = try syscall("fcntl") {
                clinux_fcntl_setfl(socket.descriptor, clinux_fcntl_getfl(socket.descriptor) & ~O_NONBLOCK)
            }
            let seconds = timeout.nanoseconds / 1_000_000_000
            var interval = timeval(tv_sec: Int(seconds), tv_usec: Int((timeout.nanoseconds % 1_000_000_000) / 1000))
            for option in [SO_RCVTIMEO, SO_SNDTIMEO] {
                _ = try syscall("setsockopt timeout") {
                    setsockopt(socket.descriptor, SOL_SOCKET, option, &interval, socklen_t(MemoryLayout<timeval>.size))
                }
            }
            try address.withSockAddr { (pointer, length) throws(SystemError) in
                _ = try syscall("connect \(address)") { Glibc.connect(socket.descriptor, pointer, length) }
            }
        } catch {
            socket.close()
            throw error
        }
        return BlockingStream(socket: socket)
    }

    /// Writes every byte of `bytes`.
    public func write(_ bytes: [UInt8]) throws {
        var offset = 0
        while offset < bytes.count {
            let written = try bytes.withUnsafeBytes { (raw) throws(SystemError) -> Int in
                let base = raw.baseAddress! + offset
                let count = raw.count - offset
                return try syscall("write") { clinux_send_nosignal(socket.descriptor, base, count) }
            }
            offset += written
        }
    }

    /// Reads until the peer closes, at most `limit` bytes.
    public func readToEnd(limit: Int = 16 << 20) throws -> [UInt8] {
        var result: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while result.count < limit {
            let count = try buffer.withUnsafeMutableBytes { (raw) throws(SystemError) -> Int in
                try syscall("read") { Glibc.read(socket.descriptor, raw.baseAddress, raw.count) }
            }
            if count == 0 { break }
            result += buffer[0..<count]
        }
        return result
    }

    public func close() { socket.close() }
}

/// The user this process runs as, for per-user paths.
package enum CurrentUser {
    package static var id: UInt32 { getuid() }
}
