import LinkSystem

/// One entry of a profile's `exclude` list: a destination whose connections bypass the emulated link.
///
/// Written as a host name (`api.internal`, matched without regard to case), a name with a leading `*.` or `.`
/// (`*.internal`, that name and every name under it), an IP address (`::1`) or a CIDR network (`10.0.0.0/8`).
public enum HostPattern: Hashable, Sendable, CustomStringConvertible {
    /// Exactly this host name, lowercased.
    case host(String)
    /// This domain and every name under it, lowercased, without the leading `*.`.
    case domain(String)
    /// Every address in this network (an IP address is a network of one).
    case network(IPNetwork)

    /// Reads one entry; nil when it is neither a name, an address nor a network.
    public init?(parsing text: String) {
        let lowered = text.lowercased()
        if let slash = lowered.firstIndex(of: "/") {
            guard let bytes = AddressBytes.parse(String(lowered[..<slash])),
                let length = Int(lowered[lowered.index(after: slash)...]),
                (0...(bytes.count * 8)).contains(length)
            else { return nil }
            self = .network(IPNetwork(bytes: bytes, prefixLength: length))
        } else if let bytes = AddressBytes.parse(lowered) {
            self = .network(IPNetwork(bytes: bytes, prefixLength: bytes.count * 8))
        } else if lowered.hasPrefix("*.") || lowered.hasPrefix(".") {
            let name = String(lowered.drop { $0 == "*" }.dropFirst())
            guard Self.isHostName(name) else { return nil }
            self = .domain(name)
        } else {
            guard Self.isHostName(lowered) else { return nil }
            self = .host(lowered)
        }
    }

    /// Letters, digits, `-`, `_` and dots, not starting or ending with a dot (a trailing root dot is dropped).
    private static func isHostName(_ name: String) -> Bool {
        !name.isEmpty && name.count <= 253 && !name.hasPrefix(".") && !name.hasSuffix(".") && !name.contains("..")
            && name.unicodeScalars.allSatisfy {
                $0.isASCII
                    && ($0.properties.isAlphabetic || ("0"..."9").contains($0) || "-_.".unicodeScalars.contains($0))
            }
    }

    /// The entry as the profile format writes it.
    public var description: String {
        switch self {
        case .host(let name): name
        case .domain(let name): "*." + name
        case .network(let network): network.description
        }
    }

    /// Whether a destination named `name` (a host name or a numeric address) matches without looking it up.
    public func matches(name: String) -> Bool {
        var lowered = name.lowercased()
        if lowered.hasSuffix(".") { lowered.removeLast() }
        switch self {
        case .host(let host): return lowered == host
        case .domain(let domain): return lowered == domain || lowered.hasSuffix("." + domain)
        case .network(let network): return AddressBytes.parse(lowered).map(network.contains) ?? false
        }
    }

    /// Whether the resolved address `bytes` (4 or 16 bytes) lies in this entry's network.
    public func matches(addressBytes bytes: [UInt8]) -> Bool {
        if case .network(let network) = self { return network.contains(bytes) }
        return false
    }
}

/// An IPv4 or IPv6 network: address bytes with every bit past the prefix cleared, and the prefix length.
public struct IPNetwork: Hashable, Sendable, CustomStringConvertible {
    public let bytes: [UInt8]
    public let prefixLength: Int

    /// Makes the network containing `bytes`, clearing the host bits so that `10.1.2.3/8` equals `10.0.0.0/8`.
    public init(bytes: [UInt8], prefixLength: Int) {
        self.prefixLength = prefixLength
        self.bytes = bytes.enumerated().map { index, byte in
            let kept = min(8, max(0, prefixLength - index * 8))
            return kept == 0 ? 0 : byte & UInt8(truncatingIfNeeded: 0xFF << (8 - kept))
        }
    }

    /// Whether `address` (same family, 4 or 16 bytes) is in the network; an IPv4-mapped IPv6 address counts as IPv4.
    public func contains(_ address: [UInt8]) -> Bool {
        var address = address
        if address.count == 16, bytes.count == 4, address[0..<10].allSatisfy({ $0 == 0 }), address[10] == 0xFF,
            address[11] == 0xFF
        {
            address = Array(address[12...])
        }
        guard address.count == bytes.count else { return false }
        return IPNetwork(bytes: address, prefixLength: prefixLength).bytes == bytes
    }

    /// `10.0.0.0/8`, or the bare address for a single host (`::1`).
    public var description: String {
        let address = AddressBytes.format(bytes)
        return prefixLength == bytes.count * 8 ? address : "\(address)/\(prefixLength)"
    }
}
