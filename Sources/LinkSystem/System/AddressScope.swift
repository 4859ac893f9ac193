extension SocketAddress {
    /// The address's bytes with an IPv4-mapped IPv6 address (`::ffff:a.b.c.d`) reduced to its 4 IPv4 bytes, so
    /// one comparison covers both spellings of the same host.
    public var canonicalAddressBytes: [UInt8] { AddressBytes.canonical(addressBytes) }

    /// Whether the address is on the loopback network: 127.0.0.0/8 (also IPv4-mapped) or `::1`.
    public var isLoopback: Bool { AddressBytes.isLoopback(addressBytes) }
}

extension AddressBytes {
    /// `bytes`, with an IPv4-mapped IPv6 address reduced to its 4 IPv4 bytes.
    public static func canonical(_ bytes: [UInt8]) -> [UInt8] {
        let mappedPrefix: [UInt8] = [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xFF, 0xFF]
        if bytes.count == 16 && Array(bytes.prefix(12)) == mappedPrefix { return Array(bytes.suffix(4)) }
        return bytes
    }

    /// Whether `bytes` is a loopback address: 127.0.0.0/8 (also IPv4-mapped) or `::1`.
    public static func isLoopback(_ bytes: [UInt8]) -> Bool {
        let canonical = canonical(bytes)
        return (canonical.count == 4 && canonical[0] == 127) || canonical == [UInt8](repeating: 0, count: 15) + [1]
    }
}
