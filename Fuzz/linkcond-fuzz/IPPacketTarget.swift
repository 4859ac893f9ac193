@testable import LinkConditioner

/// IP packets the program under `linkcond exec` writes to its TUN device: `IPPacketHeader(parsing:)` and the
/// reads `ExecListener` makes of a parsed packet. The reset refusing a connection request and the UDP reply built
/// from a parsed header must parse back to the same flow, reversed.
enum IPPacketTarget {
    static func run(_ input: FuzzInput) {
        let packet = input.bytes
        guard let header = IPPacketHeader(parsing: packet) else { return }
        let payload = header.udpPayload(of: packet)
        if header.isConnectionRequest(packet) {
            let reset = IPPacketBuilder.reset(answering: header, sequence: header.sequenceNumber(packet))
            guard let parsed = IPPacketHeader(parsing: reset) else {
                preconditionFailure("a reset does not parse: \(reset)")
            }
            precondition(
                parsed.source == header.destination && parsed.destinationPort == header.sourcePort,
                "a reset is not addressed back to the connection's sender")
        }
        if let payload {
            let reply = IPPacketBuilder.udp(
                from: header.destination, port: header.destinationPort, to: header.source,
                port: header.sourcePort, payload: payload)
            guard let parsed = IPPacketHeader(parsing: reply) else {
                preconditionFailure("a UDP reply does not parse: \(reply)")
            }
            precondition(parsed.udpPayload(of: reply) == payload, "a UDP reply carries other bytes than it was given")
        }
    }
}
