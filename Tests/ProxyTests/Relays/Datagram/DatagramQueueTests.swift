import Foundation
import LinkConditioner
import LoopbackPeers
import Testing

/// Queue disciplines on the UDP relay, end to end on loopback.
@Suite(.serialized)
struct DatagramQueueTests {
    private func wait(seconds: Double, until condition: () -> Bool) {
        let deadline = Date().addingTimeInterval(seconds)
        while !condition() && Date() < deadline { usleep(10_000) }
    }

    @Test func codelDropsRelayedDatagramsThatStandInTheQueueAndCountsThem() throws {
        let sink = try TestDatagramServer { _ in nil }
        defer { sink.stop() }
        var profile = Profile.none
        profile.uplink.bandwidth = .mbps(1)
        profile.uplink.queue = .mib(1)
        profile.uplink.queueManagement = QueueManagement(CoDelQueue.self)
        let proxy = try ConditionedProxy.udpInFront(of: sink.port, profile: profile)
        let client = try TestDatagramSocket()
        defer {
            client.close()
            proxy.stop()
        }

        // 300 datagrams of 1000 bytes: 2.4 s of queue at 1 Mbit/s, far beyond CoDel's 5 ms target.
        for number in 0..<300 {
            try client.send(
                [UInt8](repeating: UInt8(truncatingIfNeeded: number), count: 1000), to: proxy.listeners[0].address.port)
            if number % 50 == 49 { usleep(1000) }
        }
        func settled() -> Bool {
            let uplink = proxy.status()[0].uplink
            return uplink.datagramsEnqueued > 0 && uplink.queuedBytes == 0
                && sink.datagrams.count + uplink.codelDrops + uplink.tailDrops == uplink.datagramsEnqueued
        }
        wait(seconds: 30, until: settled)
        let uplink = proxy.status()[0].uplink

        #expect(settled())
        #expect(uplink.codelDrops > 0)
        #expect(uplink.tailDrops == 0)
        #expect(sink.datagrams.count == uplink.datagramsDelivered)
    }
}
