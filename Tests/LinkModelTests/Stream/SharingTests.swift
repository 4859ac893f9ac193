import LinkProfiles
import Testing

@testable import LinkModel

/// Connections share a direction's one bottleneck as TCP flows share a router: through the queue and their own
/// congestion control, not by a scheduler of linkcond's.
@Suite(.timeLimit(.minutes(5)))
struct SharingTests {
    @Test func twoBulkFlowsThroughOneQueueEachGetAboutHalfTheRate() {
        let link = modelLink(oneWay: .milliseconds(20), bandwidth: .mbps(10), seed: 5)
        let first = link.makeFlow(at: .zero, emulatingHandshake: false)
        let second = link.makeFlow(at: .ms(2_000), emulatingHandshake: false)
        var received = [0, 0]
        var now = Instant.zero
        let end = Instant.ms(60_000)
        let measureFrom = Instant.ms(20_000)

        while now <= end {
            for flow in link.advance(to: now) {
                let count = flow.takeDeliverable(at: now)
                if now >= measureFrom { received[flow === first ? 0 : 1] += count }
            }
            for flow in [first, second] where now >= flow.opensAt {
                while link.canAccept(flow) { link.enqueue(45 * TCPSender.mss, on: flow, at: now) }
            }
            guard let next = link.nextServiceTime else { break }
            now = max(now, next)
        }

        let rates = received.map { Double($0) * 8 / 40 }
        let total = rates.reduce(0, +)
        // The link stays busy, and neither flow starves: over 40 s each gets within 35 % of an even share
        // (drop-tail CUBIC flows converge slowly; Jain's index above 0.9).
        #expect(total > 0.95 * 10e6, "\(total / 1e6) Mbit/s in all")
        #expect(rates.allSatisfy { abs($0 / (total / 2) - 1) < 0.35 }, "\(rates.map { $0 / 1e6 }) Mbit/s")
        let jain = total * total / (2 * rates.map { $0 * $0 }.reduce(0, +))
        #expect(jain > 0.9, "Jain's index \(jain)")
    }
}
