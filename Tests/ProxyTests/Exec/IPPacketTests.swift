import Testing

@testable import LinkConditioner

/// The IP packets `linkcond exec` builds: what it writes into the program's namespace must parse and check.
struct IPPacketTests {
    /// RFC 1071: a packet whose checksum field is right sums to zero (0xffff before the complement).
    private func verifies(_ bytes: [UInt8], pseudoHeader: [UInt8]) -> Bool {
        IPPacketBuilder.checksum(pseudoHeader + bytes, initial: 0) == 0
    }

    @Test func aBuiltIPv4UDPDatagramParsesBackWithValidChecksums() throws {
        let packet = IPPacketBuilder.udp(
            from: [198, 18, 0, 2], port: 53, to: [198, 18, 0, 1], port: 40000, payload: [1, 2, 3][...])

        let header = try #require(IPPacketHeader(parsing: packet))

        #expect(header.source == [198, 18, 0, 2] && header.destination == [198, 18, 0, 1])
        #expect(header.sourcePort == 53 && header.destinationPort == 40000)
        #expect(header.udpPayload(of: packet) == [1, 2, 3][...])
        #expect(IPPacketBuilder.checksum(Array(packet[0..<20]), initial: 0) == 0, "IPv4 header checksum")
        let pseudo: [UInt8] = [198, 18, 0, 2, 198, 18, 0, 1, 0, 17, 0, 11]
        #expect(verifies(Array(packet[20...]), pseudoHeader: pseudo), "UDP checksum")
    }

    @Test func aBuiltIPv6UDPDatagramCarriesAValidChecksum() throws {
        let source = ExecNamespace.gatewayAddressV6
        let destination = ExecNamespace.programAddressV6
        let packet = IPPacketBuilder.udp(
            from: source, port: 443, to: destination, port: 50000, payload: [9, 8, 7, 6, 5][...])

        let header = try #require(IPPacketHeader(parsing: packet))

        #expect(header.isIPv6 && header.sourcePort == 443 && header.destinationPort == 50000)
        let pseudo = source + destination + [0, 0, 0, 13, 0, 0, 0, 17]
        #expect(verifies(Array(packet[40...]), pseudoHeader: pseudo), "UDP checksum")
    }

    @Test func aRefusalAnswersASYNWithAResetAcknowledgingIt() throws {
        let syn = IPPacketBuilder.udp(from: [198, 18, 0, 1], port: 1, to: [1, 2, 3, 4], port: 2, payload: [][...])
        var request = try #require(IPPacketHeader(parsing: syn))
        request.transport = IPPacketHeader.tcp

        let reset = IPPacketBuilder.reset(answering: request, sequence: 1000)
        let header = try #require(IPPacketHeader(parsing: reset))

        #expect(header.source == [1, 2, 3, 4] && header.destination == [198, 18, 0, 1])
        #expect(header.sourcePort == 2 && header.destinationPort == 1)
        #expect(reset[20 + 13] == 0x14, "RST and ACK")
        #expect(
            header.sequenceNumber(reset) == 0 && reset[28..<32] == [0, 0, 0x03, 0xe9][...], "acknowledges sequence + 1")
        let pseudo: [UInt8] = [1, 2, 3, 4, 198, 18, 0, 1, 0, 6, 0, 20]
        #expect(verifies(Array(reset[20...]), pseudoHeader: pseudo), "TCP checksum")
    }
}
