import Testing

@testable import LinkConditioner

/// The destination table `linkcond exec` shows in `status`: counts per destination, bounded whatever the program does.
struct DestinationTallyTests {
    private func address(_ index: Int, port: UInt16 = 443) -> SocketAddress {
        SocketAddress(numericHost: "198.18.\(index / 256).\(index % 256)", port: port)!
    }

    @Test func countsConnectionsAndAddsLiveBytesToClosedOnes() {
        var tally = DestinationTally()
        tally.opened(address(1))
        tally.opened(address(1))
        tally.closed(address(1).description, bytesUp: 100, bytesDown: 1000)

        let rows = tally.report(live: [(address(1).description, 10, 20)])

        #expect(
            rows == [
                StatusReport.Destination(destination: "198.18.0.1:443", connections: 2, bytesUp: 110, bytesDown: 1020)
            ])
    }

    @Test func destinationsPastTheLimitShareTheOtherRow() {
        var tally = DestinationTally()
        for index in 0..<(DestinationTally.limit + 10) {
            tally.opened(address(index))
            tally.closed(address(index).description, bytesUp: 1, bytesDown: 1)
        }

        let rows = tally.report(live: [(address(DestinationTally.limit + 20).description, 5, 5)])

        #expect(rows.count == DestinationTally.limit + 1)
        let other = rows.first { $0.destination == DestinationTally.other }
        #expect(other == StatusReport.Destination(destination: "other", connections: 10, bytesUp: 15, bytesDown: 15))
    }

    @Test func aDestinationKeepsTheNameItsAddressWasAnsweredFor() {
        var tally = DestinationTally()
        var answer = DNSSummary(answer: [])
        answer.name = "files.test"
        answer.answers = ["198.18.0.2", "CNAME elsewhere.test"]
        tally.learned(answer)

        tally.opened(address(2, port: 8080))
        tally.opened(address(3, port: 8080))

        let hosts = Dictionary(uniqueKeysWithValues: tally.report(live: []).map { ($0.destination, $0.host) })
        #expect(hosts["198.18.0.2:8080"] == "files.test")
        #expect(hosts["198.18.0.3:8080"] == .some(nil))
    }

    @Test func rowsComeBusiestFirst() {
        var tally = DestinationTally()
        tally.opened(address(1))
        tally.opened(address(2))
        tally.closed(address(1).description, bytesUp: 1, bytesDown: 1)
        tally.closed(address(2).description, bytesUp: 1, bytesDown: 500)

        #expect(tally.report(live: []).map(\.destination) == ["198.18.0.2:443", "198.18.0.1:443"])
    }
}
