import Foundation
import LinkConditioner
import LoopbackPeers

/// Round trips of small UDP pings while an unresponsive UDP bulk flow from another client fills a 5 Mbit/s
/// uplink at twice its rate: the working-latency (bufferbloat) picture under each queue discipline.
///
/// The bulk flow sends 1200-byte datagrams in bursts of 10 every 10 ms (about 9.6 Mbit/s); the upstream echoes
/// only datagrams of 64 bytes or less, so the bulk flow loads the uplink alone. Pings start after 1.5 s of bulk.
func benchmarkWorkingLatency(quick: Bool) throws {
    let pings = quick ? 20 : 60
    print("## Working latency: ping round trip under a UDP bulk flow, uplink 5 Mbit/s, queue 256 KiB, no added delay")
    let echo = try TestDatagramServer { $0.count <= 64 ? $0 : nil }
    defer { echo.stop() }
    for discipline in [FIFOQueue.self, CoDelQueue.self, FQCoDelQueue.self] as [any NamedQueueDiscipline.Type] {
        var profile = Profile.none
        profile.uplink.bandwidth = .mbps(5)
        profile.uplink.queueManagement = QueueManagement(discipline)
        let relay = try ConditionedProxy.udpInFront(of: echo.port, profile: profile)
        defer { relay.stop() }
        let port = relay.listeners[0].address.port
        let bulk = try TestDatagramSocket()
        defer { bulk.close() }
        let stop = ManagedFlag()
        let sender = Thread {
            let datagram = [UInt8](repeating: 0x17, count: 1200)
            while !stop.isSet {
                for _ in 0..<10 { try? bulk.send(datagram, to: port) }
                usleep(10_000)
            }
        }
        sender.start()
        usleep(1_500_000)
        let pinger = try TestDatagramSocket(timeout: 1)
        defer { pinger.close() }
        var samples: [Double] = []
        var lost = 0
        for _ in 0..<pings {
            let start = MonotonicClock().now()
            try pinger.send([UInt8](repeating: 0x01, count: 32), to: port)
            if pinger.receive() != nil { samples.append(secondsSince(start)) } else { lost += 1 }
            usleep(50_000)
        }
        stop.set()
        usleep(20_000)
        samples.sort()
        let uplink = relay.status()[0].uplink
        let median = samples.isEmpty ? .nan : quantile(samples, 0.5) * 1000
        let p90 = samples.isEmpty ? .nan : quantile(samples, 0.9) * 1000
        let name = discipline.name.padding(toLength: 9, withPad: " ", startingAt: 0)
        print(
            name
                + String(
                    format: "ping p50 %7.1f ms  p90 %7.1f ms  lost %2d/%d   uplink drops: tail %d, codel %d",
                    median, p90, lost, pings, uplink.tailDrops, uplink.codelDrops))
    }
    print("")
}

/// A flag one thread sets and another polls.
private final class ManagedFlag: @unchecked Sendable {
    private let lock = NSLock()
    private var value = false

    var isSet: Bool { lock.withLock { value } }

    func set() { lock.withLock { value = true } }
}
