import Foundation
import LoopbackPeers
import Testing

@testable import LinkConditioner

/// `cut.after` on the UDP relay: a flow stops relaying, both ways, after a direction's bytes (whole datagrams only)
/// or a time after it opened; the drops are counted, and once the cut flow has idled out a new flow opens.
@Suite(.serialized)
struct DatagramCutFaultTests {
    private func status(_ proxy: ConditionedProxy) -> ListenerStatus { proxy.status()[0] }

    @Test func anUplinkCutPassesTheWholeDatagramsUnderTheLimitThenNothing() throws {
        let sink = try TestDatagramServer(reply: { _ in nil })
        defer { sink.stop() }
        let proxy = try ConditionedProxy.udpInFront(
            of: sink.port, profile: Profile(parsing: "uplink.cut.after = 250 B"))
        let client = try TestDatagramSocket()
        defer {
            client.close()
            proxy.stop()
        }

        for size in [100, 100, 100, 10] {
            try client.send([UInt8](repeating: UInt8(size), count: size), to: proxy.port)
        }
        let counted = waitUntil(seconds: 10) { status(proxy).uplinkFaultDrops == 2 }

        #expect(counted, "\(status(proxy).uplinkFaultDrops) of 2 counted")
        #expect(waitUntil(seconds: 10) { sink.datagrams.count == 2 })
        #expect(sink.datagrams.map(\.count) == [100, 100])
    }

    @Test func aDownlinkCutStopsTheAnswersAndThenTheFlow() throws {
        let echo = try TestDatagramServer()
        defer { echo.stop() }
        let proxy = try ConditionedProxy.udpInFront(
            of: echo.port, profile: Profile(parsing: "downlink.cut.after = 200 B"))
        let client = try TestDatagramSocket(timeout: 5)
        defer {
            client.close()
            proxy.stop()
        }

        var answers: [Int] = []
        for _ in 0..<2 {
            try client.send([UInt8](repeating: 1, count: 100), to: proxy.port)
            if let answer = client.receive() { answers.append(answer.bytes.count) }
        }
        try client.send([UInt8](repeating: 2, count: 100), to: proxy.port)
        let answerCut = waitUntil(seconds: 10) { status(proxy).downlinkFaultDrops == 1 }
        try client.send([UInt8](repeating: 3, count: 100), to: proxy.port)
        let flowCut = waitUntil(seconds: 10) { status(proxy).uplinkFaultDrops == 1 }

        #expect(answers == [100, 100])
        #expect(answerCut && flowCut)
        #expect(echo.datagrams.count == 3)
    }

    @Test func aTimeCutDropsDatagramsOnceItsTimeHasPassed() throws {
        let echo = try TestDatagramServer()
        defer { echo.stop() }
        let proxy = try ConditionedProxy.udpInFront(of: echo.port, profile: Profile(parsing: "cut.after = 1 s"))
        let client = try TestDatagramSocket(timeout: 5)
        defer {
            client.close()
            proxy.stop()
        }

        try client.send([1], to: proxy.port)
        let first = client.receive()
        usleep(1_200_000)
        try client.send([2], to: proxy.port)
        let cut = waitUntil(seconds: 10) { status(proxy).uplinkFaultDrops == 1 }

        #expect(first?.bytes == [1])
        #expect(cut)
        #expect(echo.datagrams == [[1]])
    }

    @Test func aCutFlowIdlesOutAndTheClientsNextDatagramOpensAFreshOne() throws {
        let echo = try TestDatagramServer()
        defer { echo.stop() }
        let proxy = try ConditionedProxy.udpInFront(
            of: echo.port, profile: Profile(parsing: "uplink.cut.after = 100 B"),
            options: ProxyOptions(udpIdleTimeout: .seconds(2)))
        let client = try TestDatagramSocket(timeout: 5)
        defer {
            client.close()
            proxy.stop()
        }

        try client.send([UInt8](repeating: 1, count: 100), to: proxy.port)
        let first = client.receive()
        try client.send([2], to: proxy.port)
        let cut = waitUntil(seconds: 10) { status(proxy).uplinkFaultDrops == 1 }
        let forgotten = waitUntil(seconds: 10) { status(proxy).activeConnections == 0 }
        try client.send([UInt8](repeating: 3, count: 100), to: proxy.port)
        let fresh = client.receive()

        #expect(first?.bytes.count == 100)
        #expect(cut && forgotten)
        #expect(fresh?.bytes == [UInt8](repeating: 3, count: 100))
        #expect(echo.sourcePorts.count == 2, "the new flow has its own upstream port")
    }

    @Test func theModelCutsOnTheDatagramThatWouldCrossTheLimitAndStaysCut() throws {
        var faults = DatagramFlowFaults(opened: .zero, upstreamPort: 9)
        let profile = try Profile(parsing: "uplink.cut.after = 1000 B\ndownlink.cut.after = 5 s")

        let underLimit = faults.admit(1000, up: true, profile: profile, at: .zero)
        let crossing = faults.admit(1, up: true, profile: profile, at: .zero)
        let answerAfter = faults.admit(1, up: false, profile: profile, at: .zero)

        #expect(underLimit == nil)
        #expect(crossing == .cut)
        #expect(answerAfter == .cut)
    }

    @Test func theModelCutsATimeAfterTheFlowOpenedAndNeverBefore() throws {
        var faults = DatagramFlowFaults(opened: Instant(nanoseconds: 1_000_000_000), upstreamPort: 9)
        let profile = try Profile(parsing: "downlink.cut.after = 5 s")
        let justBefore = Instant(nanoseconds: 5_999_999_999)

        let before = faults.admit(100, up: true, profile: profile, at: justBefore)
        let at = faults.admit(100, up: true, profile: profile, at: Instant(nanoseconds: 6_000_000_000))

        #expect(before == nil)
        #expect(at == .cut)
    }

    @Test func anUpstreamThatKeepsSendingDoesNotKeepACutFlowAlive() throws {
        let upstream = try TestDatagramSocket(timeout: 5)
        defer { upstream.close() }
        let proxy = try ConditionedProxy.udpInFront(
            of: upstream.port, profile: Profile(parsing: "downlink.cut.after = 10 B"),
            options: ProxyOptions(udpIdleTimeout: .seconds(1)))
        let client = try TestDatagramSocket(timeout: 5)
        defer {
            client.close()
            proxy.stop()
        }
        try client.send([1], to: proxy.port)
        let flowPort = try #require(upstream.receive()?.port)

        var sent = 0
        let forgotten = waitUntil(seconds: 10) {
            try? upstream.send([UInt8](repeating: 9, count: 10), to: flowPort)
            sent += 1
            return status(proxy).activeConnections == 0
        }

        #expect(forgotten, "the flow stayed while its upstream sent \(sent) datagrams")
        #expect(client.receive()?.bytes.count == 10, "the answers under the limit crossed")
        #expect(status(proxy).downlinkFaultDrops >= 1)
    }
}
