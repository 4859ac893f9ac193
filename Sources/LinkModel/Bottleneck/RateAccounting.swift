// What a bottleneck charges a packet, and so what its rate, its byte queue limit and its burst count.
//
// Under `payload` a packet is charged the bytes the application wrote: a 1448-byte TCP segment costs 1448 bytes.
// Under `frames` it is charged the Ethernet frame that carries it, as tc's qdiscs (netem, tbf, htb, bfifo) count
// skb->len on an Ethernet device: from the MAC header on, without preamble, inter-frame gap or FCS.
//
//     TCP segment of n payload bytes   n + 66   (Ethernet 14 + IPv4 20 + TCP 20 + timestamp option 12)
//     UDP datagram of n payload bytes  n + 42   (Ethernet 14 + IPv4 20 + UDP 8)
//     IP packet of n bytes (exec)      n + 14   (Ethernet 14; its IP and transport headers are in n)
//
// A full 1448-byte segment is a 1514-byte frame, so at the same rate `payload` moves 1514/1448 (4.6 %) more
// payload than `frames`. Headers are IPv4's; over IPv6 a real frame is 20 bytes longer.

/// What a direction's rate counts: payload bytes, or the Ethernet frames around them as tc counts them.
public enum RateAccounting: String, Hashable, Sendable, CaseIterable {
    /// The bytes the application reads and writes; headers cost nothing.
    case payload
    /// Whole Ethernet frames from the MAC header, as netem, tbf and htb count them.
    case frames

    /// Ethernet, IPv4, TCP and the timestamp option Linux puts on every segment: 14 + 20 + 20 + 12 bytes.
    public static let tcpFrameOverhead = 66
    /// Ethernet, IPv4 and UDP headers: 14 + 20 + 8 bytes.
    public static let udpFrameOverhead = 42
    /// The Ethernet header alone, for a packet that carries its own IP header.
    public static let ethernetHeader = 14

    /// Bytes charged beyond the payload of a unit of `segments` TCP segments: each segment is its own frame.
    public func overhead(tcpSegments segments: Int) -> Int {
        self == .frames ? segments * Self.tcpFrameOverhead : 0
    }

    /// Bytes charged beyond the size of one datagram of `kind`.
    public func overhead(datagram kind: DatagramKind) -> Int {
        guard self == .frames else { return 0 }
        return kind == .udpPayload ? Self.udpFrameOverhead : Self.ethernetHeader
    }

    /// Bytes one delivery opportunity of a trace carries: mahimahi's 1500-byte packet, counted as payload or as
    /// the 1514-byte frame it is on Ethernet, so that a full-size segment takes one opportunity either way.
    public var traceOpportunityBytes: Int {
        self == .frames ? DeliveryTrace.opportunityBytes + Self.ethernetHeader : DeliveryTrace.opportunityBytes
    }
}

/// What the sizes a datagram link is given stand for.
public enum DatagramKind: Hashable, Sendable {
    /// A UDP datagram's payload, as a UDP listener or the DNS forwarder relays it.
    case udpPayload
    /// A whole IP packet, headers included, as `exec` carries its program's packets.
    case ipPacket
}
