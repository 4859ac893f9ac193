import Glibc

/// The raw bytes of IP addresses in network order, for host rules that compare networks without a lookup.
public enum AddressBytes {
    /// The 4 bytes of a numeric IPv4 host or the 16 of a numeric IPv6 host (without brackets); nil for anything else.
    public static func parse(_ text: String) -> [UInt8]? {
        var v4 = in_addr()
        if inet_pton(AF_INET, text, &v4) == 1 { return withUnsafeBytes(of: &v4) { Array($0) } }
        var v6 = in6_addr()
        if inet_pton(AF_INET6, text, &v6) == 1 { return withUnsafeBytes(of: &v6) { Array($0) } }
        return nil
    }

    /// The conventional text of 4 or 16 address bytes (`10.0.0.0`, `::1`).
    public static func format(_ bytes: [UInt8]) -> String {
        var buffer = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN) + 1)
        if bytes.count == 4 {
            var address = in_addr()
            withUnsafeMutableBytes(of: &address) { $0.copyBytes(from: bytes) }
            _ = inet_ntop(AF_INET, &address, &buffer, socklen_t(buffer.count))
        } else {
            var address = in6_addr()
            withUnsafeMutableBytes(of: &address) { $0.copyBytes(from: bytes.prefix(16)) }
            _ = inet_ntop(AF_INET6, &address, &buffer, socklen_t(buffer.count))
        }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}

extension SocketAddress {
    /// The address's bytes in network order: 4 for IPv4, 16 for IPv6, empty for other families.
    public var addressBytes: [UInt8] {
        withUnsafeBytes(of: storage) { raw in
            if family == AF_INET6 {
                var address = raw.load(as: sockaddr_in6.self).sin6_addr
                return withUnsafeBytes(of: &address) { Array($0) }
            }
            if family == AF_INET {
                var address = raw.load(as: sockaddr_in.self).sin_addr
                return withUnsafeBytes(of: &address) { Array($0) }
            }
            return []
        }
    }
}
