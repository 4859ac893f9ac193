import CLinuxShims
import Glibc

/// An IPv4 or IPv6 socket address (host and port), stored as the kernel's `sockaddr_storage`.
public struct SocketAddress: Hashable, Sendable, CustomStringConvertible {
    var storage: sockaddr_storage
    var length: socklen_t

    init(storage: sockaddr_storage, length: socklen_t) {
        self.storage = storage
        self.length = length
    }

    /// Makes an address from a numeric IPv4 or IPv6 host and a port; nil when the host is not numeric.
    public init?(numericHost host: String, port: UInt16) {
        var storage = sockaddr_storage()
        if let address = Self.parseIPv4(host) {
            withUnsafeMutableBytes(of: &storage) { raw in
                let sin = raw.baseAddress!.assumingMemoryBound(to: sockaddr_in.self)
                sin.pointee.sin_family = sa_family_t(AF_INET)
                sin.pointee.sin_port = port.bigEndian
                sin.pointee.sin_addr = address
            }
            self.init(storage: storage, length: socklen_t(MemoryLayout<sockaddr_in>.size))
        } else if let address = Self.parseIPv6(host) {
            withUnsafeMutableBytes(of: &storage) { raw in
                let sin6 = raw.baseAddress!.assumingMemoryBound(to: sockaddr_in6.self)
                sin6.pointee.sin6_family = sa_family_t(AF_INET6)
                sin6.pointee.sin6_port = port.bigEndian
                sin6.pointee.sin6_addr = address
            }
            self.init(storage: storage, length: socklen_t(MemoryLayout<sockaddr_in6>.size))
        } else {
            return nil
        }
    }

    private static func parseIPv4(_ host: String) -> in_addr? {
        var address = in_addr()
        return inet_pton(AF_INET, host, &address) == 1 ? address : nil
    }

    private static func parseIPv6(_ host: String) -> in6_addr? {
        var address = in6_addr()
        return inet_pton(AF_INET6, host, &address) == 1 ? address : nil
    }

    /// The address family, `AF_INET` or `AF_INET6`.
    public var family: Int32 { Int32(storage.ss_family) }

    public var isIPv6: Bool { family == AF_INET6 }
    /// True for an IPv4 or IPv6 address, false for a Unix-domain path.
    public var isInternet: Bool { family == AF_INET || family == AF_INET6 }

    /// The port in host byte order.
    public var port: UInt16 {
        withUnsafeBytes(of: storage) { raw in
            if family == AF_INET6 {
                return UInt16(bigEndian: raw.load(as: sockaddr_in6.self).sin6_port)
            }
            return UInt16(bigEndian: raw.load(as: sockaddr_in.self).sin_port)
        }
    }

    /// The numeric host, without brackets.
    public var host: String {
        var buffer = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN) + 1)
        withUnsafeBytes(of: storage) { raw in
            if family == AF_INET6 {
                var address = raw.load(as: sockaddr_in6.self).sin6_addr
                _ = inet_ntop(AF_INET6, &address, &buffer, socklen_t(buffer.count))
            } else {
                var address = raw.load(as: sockaddr_in.self).sin_addr
                _ = inet_ntop(AF_INET, &address, &buffer, socklen_t(buffer.count))
            }
        }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// `HOST:PORT`, with IPv6 hosts in brackets.
    public var description: String { isIPv6 ? "[\(host)]:\(port)" : "\(host):\(port)" }

    public static func == (lhs: SocketAddress, rhs: SocketAddress) -> Bool {
        lhs.identity == rhs.identity
    }

    public func hash(into hasher: inout Hasher) {
        let identity = self.identity
        hasher.combine(identity.family)
        hasher.combine(identity.port)
        hasher.combine(identity.high)
        hasher.combine(identity.low)
    }

    /// What tells two addresses apart, as their `description` does (family, host, port), read from the raw bytes
    /// without formatting: the UDP relay looks up a flow by address for every datagram.
    private var identity: (family: Int32, port: UInt16, high: UInt64, low: UInt64) {
        withUnsafeBytes(of: storage) { raw in
            if family == AF_INET6 {
                let address = raw.load(as: sockaddr_in6.self).sin6_addr
                return withUnsafeBytes(of: address) { bytes in
                    (
                        family, port, bytes.loadUnaligned(as: UInt64.self),
                        bytes.loadUnaligned(fromByteOffset: 8, as: UInt64.self)
                    )
                }
            }
            return (family, port, 0, UInt64(raw.load(as: sockaddr_in.self).sin_addr.s_addr))
        }
    }

    func withSockAddr<R>(_ body: (UnsafePointer<sockaddr>, socklen_t) throws(SystemError) -> R) throws(SystemError) -> R
    {
        var copy = storage
        let length = self.length
        return try withUnsafePointer(to: &copy) { (pointer) throws(SystemError) -> R in
            try pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { (address) throws(SystemError) -> R in
                try body(address, length)
            }
        }
    }
}

/// A `HOST:PORT` endpoint as a user writes it: the host may be a name, an IPv4 address or a bracketed IPv6 address.
public struct Endpoint: Hashable, Sendable, CustomStringConvertible {
    public var host: String
    public var port: UInt16

    public init(host: String, port: UInt16) {
        self.host = host
        self.port = port
    }

    /// Parses `HOST:PORT`, `[V6]:PORT` or `:PORT` (all interfaces is not assumed: an empty host is 127.0.0.1).
    public init?(parsing text: String) {
        let hostPart: Substring
        let portPart: Substring
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]"),
                text.index(after: close) < text.endIndex,
                text[text.index(after: close)] == ":"
            else { return nil }
            hostPart = text[text.index(after: text.startIndex)..<close]
            portPart = text[text.index(close, offsetBy: 2)...]
        } else {
            guard let colon = text.lastIndex(of: ":") else { return nil }
            hostPart = text[..<colon]
            portPart = text[text.index(after: colon)...]
            if hostPart.contains(":") { return nil }
        }
        guard let port = UInt16(portPart) else { return nil }
        self.host = hostPart.isEmpty ? "127.0.0.1" : String(hostPart)
        self.port = port
    }

    public var description: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }

    /// Resolves the host to socket addresses, never an empty list (numeric hosts without a lookup). Blocks: call
    /// off the event loop.
    public func resolve() throws(ResolutionError) -> [SocketAddress] {
        if let numeric = SocketAddress(numericHost: host, port: port) { return [numeric] }
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        hints.ai_family = AF_UNSPEC
        var results: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(host, String(port), &hints, &results)
        guard status == 0, let first = results else {
            throw ResolutionError(host: host, reason: String(cString: gai_strerror(status)))
        }
        defer { freeaddrinfo(first) }
        var addresses: [SocketAddress] = []
        var cursor: UnsafeMutablePointer<addrinfo>? = first
        while let entry = cursor {
            if let address = entry.pointee.ai_addr,
                entry.pointee.ai_family == AF_INET || entry.pointee.ai_family == AF_INET6
            {
                var storage = sockaddr_storage()
                withUnsafeMutableBytes(of: &storage) { raw in
                    raw.copyMemory(from: UnsafeRawBufferPointer(start: address, count: Int(entry.pointee.ai_addrlen)))
                }
                let resolved = SocketAddress(storage: storage, length: entry.pointee.ai_addrlen)
                if !addresses.contains(resolved) { addresses.append(resolved) }
            }
            cursor = entry.pointee.ai_next
        }
        if addresses.isEmpty { throw ResolutionError(host: host, reason: "no IPv4 or IPv6 address") }
        return addresses
    }
}

/// A host name that could not be turned into an address.
public struct ResolutionError: Error, Sendable, CustomStringConvertible {
    public var host: String
    public var reason: String
    public var description: String { "cannot resolve \"\(host)\": \(reason)" }

    package init(host: String, reason: String) {
        self.host = host
        self.reason = reason
    }
}
