import LinkProfiles
import Testing

@testable import LinkModel

/// The model's decisions pinned: a digest of every release (flow, instant, bytes) for five profiles, recorded
/// from the model as it stands, so work on its hot path or on what observes it must leave them bit-identical.
/// Segment by segment (`tcp.segmentation-offload = off`), as they were recorded; `ModelDecisionDigestTests` pins
/// the units.
@Suite(.timeLimit(.minutes(5)))
struct ReleaseDigestTests {
    /// FNV-1a over the releases, in the order they happened.
    private struct ReleaseDigest {
        private(set) var value: UInt64 = 0xcbf2_9ce4_8422_2325
        var count = 0

        mutating func add(flow: Int, at: Instant, bytes: Int) {
            for word in [UInt64(flow), UInt64(bitPattern: at.nanoseconds), UInt64(bytes)] {
                var rest = word
                for _ in 0..<8 {
                    value = (value ^ (rest & 0xff)) &* 0x0000_0100_0000_01b3
                    rest >>= 8
                }
            }
            count += 1
        }
    }

    /// Sends `size` bytes on each of `flows` flows over `profile` (the reverse path with the same delay), writing
    /// as the send buffers take them, and digests every release until all are delivered.
    private func digest(_ profile: DirectionProfile, flows count: Int = 1, size: Int, seed: UInt64 = 7) -> ReleaseDigest
    {
        let link = StreamLink(
            side: .acceptor, profile: profile, reverse: DirectionProfile(delay: profile.delay),
            settings: TCPSettings(segmentationOffload: false), seed: seed)
        let flows = (0..<count).map { _ in link.makeFlow(at: .zero, emulatingHandshake: false) }
        var written = Array(repeating: 0, count: count)
        var delivered = 0
        var result = ReleaseDigest()
        var now = Instant.zero
        for _ in 0..<5_000_000 {
            for flow in link.advance(to: now) {
                let bytes = flow.takeDeliverable(at: now)
                guard bytes > 0, let index = flows.firstIndex(where: { $0 === flow }) else { continue }
                delivered += bytes
                result.add(flow: index, at: now, bytes: bytes)
            }
            for (index, flow) in flows.enumerated() {
                while written[index] < size && link.canAccept(flow) {
                    let chunk = min(64 * 1024, size - written[index])
                    link.enqueue(chunk, on: flow, at: now)
                    written[index] += chunk
                }
            }
            guard delivered < count * size, let next = link.nextServiceTime else { break }
            now = max(now, next)
        }
        #expect(delivered == count * size)
        return result
    }

    @Test func aGigabitWithoutDelay() {
        let result = digest(DirectionProfile(bandwidth: .gbps(1)), size: 4_000_000)
        #expect(
            result.value == 7_050_229_608_263_577_750 && result.count == 2763,
            "\(result.value) over \(result.count) releases")
    }

    @Test func aGigabitWithTenMillisecondsAndAFourMebibyteQueue() {
        let result = digest(
            DirectionProfile(bandwidth: .gbps(1), delay: .milliseconds(10), queue: ByteCount(bytes: 4 << 20)),
            size: 8_000_000)
        #expect(
            result.value == 16_604_641_516_708_622_958 && result.count == 5525,
            "\(result.value) over \(result.count) releases")
    }

    @Test func tenMegabitsWithTwentyFiveMillisecondsAndOnePercentLoss() {
        let result = digest(
            DirectionProfile(bandwidth: .mbps(10), delay: .milliseconds(25), loss: Percentage(1)),
            size: 1_000_000)
        #expect(
            result.value == 11_217_977_653_965_109_456 && result.count == 454,
            "\(result.value) over \(result.count) releases")
    }

    @Test func fiftyMegabitsWithJitterAndHalfAPercentLoss() {
        let result = digest(
            DirectionProfile(
                bandwidth: .mbps(50), delay: .milliseconds(20), jitter: .milliseconds(5),
                loss: Percentage(0.5)), size: 2_000_000)
        #expect(
            result.value == 4_569_091_364_983_500_784 && result.count == 426,
            "\(result.value) over \(result.count) releases")
    }

    @Test func threeFlowsThroughFQCoDelWithTwoPercentLoss() {
        var profile = DirectionProfile(bandwidth: .mbps(20), delay: .milliseconds(10), loss: Percentage(2))
        profile.queueManagement = QueueManagement(FQCoDelQueue.self)
        let result = digest(profile, flows: 3, size: 500_000)
        #expect(
            result.value == 1_645_940_570_904_548_220 && result.count == 562,
            "\(result.value) over \(result.count) releases")
    }
}
