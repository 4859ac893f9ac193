import Foundation
import LoopbackPeers
import Testing

@testable import LinkConditioner

/// `blocked.ports` on the UDP relay: the upstream's port is matched, every datagram to and from it is dropped and
/// counted, whichever mode (a userspace relay cannot send the ICMP a refusing firewall sends), and other ports pass.
@Suite(.serialized)
struct DatagramBlockedPortFaultTests {
    private func status(_ proxy: ConditionedProxy) -> ListenerStatus { proxy.status()[0] }

    @Test(arguments: ["refuse", "blackhole"])
    func datagramsToABlockedUpstreamPortAreDroppedAndCountedOpeningNoFlow(_ mode: String) throws {
        let echo = try TestDatagramServer()
        defer { echo.stop() }
        let proxy = try ConditionedProxy.udpInFront(
            of: echo.port, profile: Profile(parsing: "blocked.ports = 1-79, \(echo.port)\nblocked.mode = \(mode)"))
        let client = try TestDatagramSocket(timeout: 0.2)
        defer {
            client.close()
            proxy.stop()
        }

        for number in 0..<5 { try client.send([UInt8(number)], to: proxy.port) }
        let counted = waitUntil(seconds: 10) { status(proxy).uplinkFaultDrops == 5 }

        #expect(counted, "\(status(proxy).uplinkFaultDrops) of 5 counted")
        #expect(echo.datagrams.isEmpty)
        #expect(status(proxy).connectionsAccepted == 0 && status(proxy).activeConnections == 0)
        #expect(client.receive() == nil)
    }

    @Test func blockingThePortOfAnOpenFlowStopsItBothWays() throws {
        let echo = try TestDatagramServer()
        defer { echo.stop() }
        let proxy = try ConditionedProxy.udpInFront(of: echo.port, profile: .none)
        let client = try TestDatagramSocket(timeout: 5)
        defer {
            client.close()
            proxy.stop()
        }
        try client.send([1], to: proxy.port)
        let before = client.receive()

        try proxy.set([("blocked.ports", "\(echo.port)")])
        try client.send([2], to: proxy.port)
        let counted = waitUntil(seconds: 10) { status(proxy).uplinkFaultDrops == 1 }

        #expect(before?.bytes == [1])
        #expect(counted)
        #expect(echo.datagrams == [[1]])
    }

    @Test func aPortOutsideTheListPasses() throws {
        let echo = try TestDatagramServer()
        defer { echo.stop() }
        let other = echo.port == 65535 ? echo.port - 1 : echo.port + 1
        let proxy = try ConditionedProxy.udpInFront(
            of: echo.port, profile: Profile(parsing: "blocked.ports = \(other)"))
        let client = try TestDatagramSocket(timeout: 5)
        defer {
            client.close()
            proxy.stop()
        }

        try client.send([7], to: proxy.port)

        #expect(client.receive()?.bytes == [7])
        #expect(status(proxy).uplinkFaultDrops == 0)
    }

    @Test func theModelMatchesTheUpstreamsPortAndNamesTheMode() throws {
        var faults = DatagramFlowFaults(opened: .zero, upstreamPort: 5353)
        let blackholed = try Profile(parsing: "blocked.ports = 53, 5000-6000\nblocked.mode = blackhole")
        let elsewhere = try Profile(parsing: "blocked.ports = 53")

        #expect(faults.admit(10, up: true, profile: blackholed, at: .zero) == .blocked(.blackhole))
        #expect(faults.admit(10, up: false, profile: blackholed, at: .zero) == .blocked(.blackhole))
        #expect(faults.admit(10, up: true, profile: elsewhere, at: .zero) == nil)
    }
}
