/// Which IPv4 traffic a kernel conditioning applies to; everything else passes unshaped.
///
/// A port matches either end (source or destination), so one rule covers an app whether it is the
/// client or the server. A host or network is the remote end: destination on the uplink, source on
/// the downlink. Offsets assume IPv4 headers without options, as `tc filter … u32 match ip` does.
public enum TrafficMatch: Hashable, Sendable, CustomStringConvertible {
    case port(UInt16)
    /// An IPv4 network in host byte order; a host is a /32.
    case network(address: UInt32, prefixLength: Int)

    /// Parses "8080" for `.port`; used by the command line's `--port`.
    public init?(port text: String) {
        guard let port = UInt16(text), port > 0 else { return nil }
        self = .port(port)
    }

    /// Parses "198.18.0.2" or "198.18.0.0/15"; a bare address is a /32.
    public init?(network text: String) {
        let parts = text.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count <= 2, let address = Self.parseIPv4(String(parts[0])) else { return nil }
        var prefixLength = 32
        if parts.count == 2 {
            guard let length = Int(parts[1]), (0...32).contains(length) else { return nil }
            prefixLength = length
        }
        self = .network(address: address & Self.mask(prefixLength), prefixLength: prefixLength)
    }

    public var description: String {
        switch self {
        case .port(let port): return "port \(port)"
        case .network(let address, 32): return "host \(Self.text(address))"
        case .network(let address, let length): return "network \(Self.text(address))/\(length)"
        }
    }

    static func mask(_ prefixLength: Int) -> UInt32 {
        prefixLength == 0 ? 0 : UInt32.max << UInt32(32 - prefixLength)
    }

    static func parseIPv4(_ text: String) -> UInt32? {
        let octets = text.split(separator: ".", omittingEmptySubsequences: false)
        guard octets.count == 4 else { return nil }
        var address: UInt32 = 0
        for octet in octets {
            guard let value = UInt8(octet) else { return nil }
            address = address << 8 | UInt32(value)
        }
        return address
    }

    static func text(_ address: UInt32) -> String {
        (0..<4).map { String(address >> UInt32(24 - 8 * $0) & 0xff) }.joined(separator: ".")
    }

    /// The u32 key sets, one per filter, that select this traffic in `direction`.
    func keySets(for direction: TrafficDirection) -> [[U32Key]] {
        switch self {
        case .port(let port):
            return [
                [U32Key(value: UInt32(port) << 16, mask: 0xffff_0000, offset: 20)],
                [U32Key(value: UInt32(port), mask: 0x0000_ffff, offset: 20)],
            ]
        case .network(let address, let prefixLength):
            let offset = direction == .uplink ? 16 : 12
            return [[U32Key(value: address, mask: Self.mask(prefixLength), offset: offset)]]
        }
    }

    /// Recognises the key sets `keySets(for:)` builds, as read back from the kernel.
    init?(keySets: [[U32Key]], direction: TrafficDirection) {
        guard let first = keySets.first?.first else { return nil }
        switch (first.offset, first.mask) {
        case (20, 0xffff_0000): self = .port(UInt16(first.value >> 16))
        case (20, 0x0000_ffff): self = .port(UInt16(first.value & 0xffff))
        case (12, _), (16, _):
            self = .network(address: first.value, prefixLength: first.mask.nonzeroBitCount)
        default: return nil
        }
    }
}

/// The two directions of a conditioned device.
public enum TrafficDirection: String, Hashable, Sendable {
    /// Packets the device sends (its egress).
    case uplink
    /// Packets the device receives (its ingress, redirected to an ifb device and shaped on that device's egress).
    case downlink
}
