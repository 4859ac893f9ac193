// The few IP packets `linkcond exec` reads or makes itself: UDP datagrams (relayed from the host's sockets, so
// replies are built here) and the TCP reset that refuses a connection while offline.
//
// Checksums are RFC 1071's ones'-complement sum of 16-bit words; UDP and TCP add the pseudo-header (addresses,
// protocol, length). IPv6 extension headers are not followed: such packets are passed on unparsed.

/// The addresses and ports of a UDP or TCP packet, and where its payload starts.
struct IPPacketHeader: Hashable {
    static let tcp: UInt8 = 6
    static let udp: UInt8 = 17

    var source: [UInt8]
    var destination: [UInt8]
    var sourcePort: UInt16
    var destinationPort: UInt16
    var transport: UInt8
    /// Offset of the transport header in the packet.
    var transportOffset: Int

    var isIPv6: Bool { source.count == 16 }

    /// Parses an IPv4 or IPv6 packet carrying TCP or UDP; nil for anything else or anything truncated.
    init?(parsing packet: [UInt8]) {
        guard let first = packet.first else { return nil }
        switch first >> 4 {
        case 4:
            let headerLength = Int(first & 0x0f) * 4
            guard headerLength >= 20, packet.count >= headerLength + 8 else { return nil }
            let fragment = UInt16(packet[6] & 0x1f) << 8 | UInt16(packet[7])
            guard fragment == 0 else { return nil }
            (transport, source, destination, transportOffset) = (
                packet[9], Array(packet[12..<16]), Array(packet[16..<20]), headerLength
            )
        case 6:
            guard packet.count >= 48 else { return nil }
            (transport, source, destination, transportOffset) = (
                packet[6], Array(packet[8..<24]), Array(packet[24..<40]), 40
            )
        default:
            return nil
        }
        guard transport == Self.tcp || transport == Self.udp else { return nil }
        sourcePort = UInt16(packet[transportOffset]) << 8 | UInt16(packet[transportOffset + 1])
        destinationPort = UInt16(packet[transportOffset + 2]) << 8 | UInt16(packet[transportOffset + 3])
    }

    /// The UDP payload of `packet`, nil when its length field disagrees with the packet.
    func udpPayload(of packet: [UInt8]) -> ArraySlice<UInt8>? {
        guard transport == Self.udp else { return nil }
        let length = Int(packet[transportOffset + 4]) << 8 | Int(packet[transportOffset + 5])
        guard length >= 8, transportOffset + length <= packet.count else { return nil }
        return packet[(transportOffset + 8)..<(transportOffset + length)]
    }

    /// Whether a TCP packet opens a connection (SYN without ACK).
    func isConnectionRequest(_ packet: [UInt8]) -> Bool {
        guard transport == Self.tcp, packet.count >= transportOffset + 14 else { return false }
        return packet[transportOffset + 13] & 0x12 == 0x02
    }

    /// The sequence number of a TCP packet.
    func sequenceNumber(_ packet: [UInt8]) -> UInt32 {
        packet[(transportOffset + 4)..<(transportOffset + 8)].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
    }
}

/// Builds the IP packets linkcond sends into the program's namespace.
enum IPPacketBuilder {
    /// A UDP datagram from `source`:`sourcePort` to `destination`:`destinationPort` (4- or 16-byte addresses).
    static func udp(
        from source: [UInt8], port sourcePort: UInt16, to destination: [UInt8], port destinationPort: UInt16,
        payload: ArraySlice<UInt8>
    ) -> [UInt8] {
        var segment = [UInt8]()
        segment.reserveCapacity(8 + payload.count)
        append16(&segment, sourcePort)
        append16(&segment, destinationPort)
        append16(&segment, UInt16(truncatingIfNeeded: 8 + payload.count))
        append16(&segment, 0)
        segment += payload
        let sum = checksum(
            segment,
            initial: pseudoHeaderSum(
                source, destination, transport: IPPacketHeader.udp,
                length: segment.count))
        let value = sum == 0 ? 0xffff : sum
        segment[6] = UInt8(value >> 8)
        segment[7] = UInt8(value & 0xff)
        return ipHeader(source, destination, transport: IPPacketHeader.udp, payloadLength: segment.count) + segment
    }

    /// The reset a refused TCP connection request gets: from its destination, acknowledging its SYN.
    static func reset(answering request: IPPacketHeader, sequence: UInt32) -> [UInt8] {
        var segment = [UInt8]()
        append16(&segment, request.destinationPort)
        append16(&segment, request.sourcePort)
        append32(&segment, 0)
        append32(&segment, sequence &+ 1)
        segment += [0x50, 0x14, 0, 0, 0, 0, 0, 0]
        let sum = checksum(
            segment,
            initial: pseudoHeaderSum(
                request.destination, request.source,
                transport: IPPacketHeader.tcp, length: segment.count))
        segment[16] = UInt8(sum >> 8)
        segment[17] = UInt8(sum & 0xff)
        return ipHeader(
            request.destination, request.source, transport: IPPacketHeader.tcp, payloadLength: segment.count) + segment
    }

    private static func ipHeader(_ source: [UInt8], _ destination: [UInt8], transport: UInt8, payloadLength: Int)
        -> [UInt8]
    {
        var header = [UInt8]()
        if source.count == 16 {
            header += [0x60, 0, 0, 0]
            append16(&header, UInt16(truncatingIfNeeded: payloadLength))
            header += [transport, 64]
            return header + source + destination
        }
        header += [0x45, 0]
        append16(&header, UInt16(truncatingIfNeeded: 20 + payloadLength))
        header += [0, 0, 0x40, 0, 64, transport, 0, 0]
        header += source + destination
        let sum = checksum(header, initial: 0)
        header[10] = UInt8(sum >> 8)
        header[11] = UInt8(sum & 0xff)
        return header
    }

    private static func pseudoHeaderSum(_ source: [UInt8], _ destination: [UInt8], transport: UInt8, length: Int)
        -> UInt32
    {
        var words = source + destination
        if source.count == 16 {
            append32(&words, UInt32(length))
            words += [0, 0, 0, transport]
        } else {
            words += [0, transport]
            append16(&words, UInt16(truncatingIfNeeded: length))
        }
        return partialSum(words[...], initial: 0)
    }

    /// RFC 1071's checksum of `bytes` added to `initial` (an unfolded partial sum).
    static func checksum(_ bytes: [UInt8], initial: UInt32) -> UInt16 {
        var sum = partialSum(bytes[...], initial: initial)
        while sum >> 16 != 0 { sum = (sum & 0xffff) + (sum >> 16) }
        return ~UInt16(sum)
    }

    private static func partialSum(_ bytes: ArraySlice<UInt8>, initial: UInt32) -> UInt32 {
        var sum = initial
        var index = bytes.startIndex
        while index + 1 < bytes.endIndex {
            sum = sum &+ (UInt32(bytes[index]) << 8 | UInt32(bytes[index + 1]))
            if sum > 0xffff_0000 { sum = (sum & 0xffff) + (sum >> 16) }
            index += 2
        }
        if index < bytes.endIndex { sum = sum &+ UInt32(bytes[index]) << 8 }
        while sum >> 16 != 0 { sum = (sum & 0xffff) + (sum >> 16) }
        return sum
    }

    private static func append16(_ bytes: inout [UInt8], _ value: UInt16) {
        bytes += [UInt8(value >> 8), UInt8(value & 0xff)]
    }

    private static func append32(_ bytes: inout [UInt8], _ value: UInt32) {
        bytes += [UInt8(value >> 24), UInt8((value >> 16) & 0xff), UInt8((value >> 8) & 0xff), UInt8(value & 0xff)]
    }
}
