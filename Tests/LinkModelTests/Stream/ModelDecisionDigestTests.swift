import LinkProfiles
import Testing

@testable import LinkModel

/// The proof that work on the model's cost changed none of its decisions: for each profile, a digest of every
/// event instant, every release (flow, instant, bytes), each sender's state after every instant (cwnd, ssthresh,
/// snd_una, snd_nxt, packets in flight, repairs, its next timer, srtt and rto), each receiver's head-of-line
/// changes, the write batching's `nextRelease` bound, and the link's counters at the end. The expected values were
/// taken from the model as it stood before its hot path was reworked (56bb5d8), segment by segment, which
/// `tcp.segmentation-offload = off` keeps; any departure, arrival, loss, ACK, window or timer that moves changes
/// them. The last tests pin the same profiles sent in units (the default), for later work on the model's cost. The
/// lossy profiles pin each segment's loss drawn as it enters the bottleneck (`LossDrawTests`).
@Suite(.timeLimit(.minutes(5)))
struct ModelDecisionDigestTests {
    /// Every segment alone, as the model sent them before it sent units.
    static let segmentBySegment = TCPSettings(segmentationOffload: false)

    /// FNV-1a over 64-bit words, in the order they were added.
    private struct Digest {
        private(set) var value: UInt64 = 0xcbf2_9ce4_8422_2325
        private(set) var releases = 0
        /// Segments the link lost (queue drops and loss draws), so a profile shows it exercised loss.
        var segmentsLost = 0

        mutating func add(_ word: UInt64) {
            var rest = word
            for _ in 0..<8 {
                value = (value ^ (rest & 0xff)) &* 0x0000_0100_0000_01b3
                rest >>= 8
            }
        }

        mutating func add(_ word: Int) { add(UInt64(bitPattern: Int64(word))) }
        mutating func add(_ instant: Instant?) { add(UInt64(bitPattern: instant?.nanoseconds ?? -1)) }
        mutating func add(_ duration: Duration?) { add(UInt64(truncatingIfNeeded: duration?.attoseconds ?? -1)) }

        mutating func addRelease(flow: Int, at: Instant, bytes: Int) {
            add(flow)
            add(at)
            add(bytes)
            releases += 1
        }

        mutating func add(_ sender: TCPSender) {
            for word in [
                sender.cwnd, sender.ssthresh, Int(sender.sndUna), Int(sender.sndNxt), sender.packetsInFlight,
                sender.retransmissions, sender.recoveries, sender.timeouts, sender.probes,
            ] {
                add(word)
            }
            add(sender.nextTimer)
            add(sender.timer.srtt)
            add(sender.timer.rto)
        }
    }

    /// Sends `size` bytes on each of `flows` flows over `profile`, its ACKs back over `reverse` (the same delay,
    /// lossless, when nil), writing as the send buffers take them, and digests everything the model decided until
    /// all bytes are delivered.
    private func digest(
        _ profile: DirectionProfile, reverse: DirectionProfile? = nil, flows count: Int = 1, size: Int,
        seed: UInt64 = 11, settings: TCPSettings = Self.segmentBySegment
    ) -> Digest {
        let link = StreamLink(
            side: .acceptor, profile: profile, reverse: reverse ?? DirectionProfile(delay: profile.delay),
            settings: settings, seed: seed)
        let flows = (0..<count).map { _ in link.makeFlow(at: .zero, emulatingHandshake: false) }
        var written = Array(repeating: 0, count: count)
        var delivered = 0
        var result = Digest()
        var now = Instant.zero
        for _ in 0..<5_000_000 {
            result.add(now)
            for flow in link.advance(to: now) {
                let bytes = flow.takeDeliverable(at: now)
                guard let index = flows.firstIndex(where: { $0 === flow }) else { continue }
                for change in flow.takeLossBlockChanges() {
                    result.add(change.at)
                    result.add(change.blocked ? 1 : 0)
                }
                guard bytes > 0 else { continue }
                delivered += bytes
                result.addRelease(flow: index, at: now, bytes: bytes)
            }
            for (index, flow) in flows.enumerated() {
                while written[index] < size && link.canAccept(flow) {
                    let chunk = min(64 * 1024, size - written[index])
                    link.enqueue(chunk, on: flow, at: now)
                    written[index] += chunk
                }
                result.add(flow.sender)
                result.add(link.nextRelease(of: flow))
            }
            guard delivered < count * size, let next = link.nextServiceTime else { break }
            now = max(now, next)
        }
        #expect(delivered == count * size)
        let counters = link.counters
        result.segmentsLost = counters.segmentsLost
        for word in [
            counters.bytesEnqueued, counters.bytesDelivered, counters.transmissions, counters.segmentsLost,
            counters.acksLost, counters.queuedBytes, counters.inFlightBytes,
        ] {
            result.add(word)
        }
        return result
    }

    @Test func aGigabitAlone() {
        let result = digest(DirectionProfile(bandwidth: .gbps(1)), size: 4_000_000)
        #expect(
            result.value == 5_393_238_168_797_834_030 && result.releases == 2763,
            "\(result.value) over \(result.releases) releases")
    }

    @Test func aGigabitWithTenMilliseconds() {
        let result = digest(
            DirectionProfile(bandwidth: .gbps(1), delay: .milliseconds(10), queue: ByteCount(bytes: 4 << 20)),
            size: 8_000_000)
        #expect(
            result.value == 4_328_233_631_224_367_348 && result.releases == 5525,
            "\(result.value) over \(result.releases) releases")
    }

    @Test func twoPercentLossBothWays() {
        let result = digest(
            DirectionProfile(bandwidth: .mbps(100), delay: .milliseconds(10), loss: Percentage(2)),
            reverse: DirectionProfile(delay: .milliseconds(10), loss: Percentage(2)), size: 2_000_000)
        #expect(result.segmentsLost > 0)
        #expect(
            result.value == 18_020_901_447_337_197_099 && result.releases == 1075,
            "\(result.value) over \(result.releases) releases")
    }

    @Test func burstLossWithJitter() {
        let result = digest(
            DirectionProfile(
                bandwidth: .mbps(50), delay: .milliseconds(15), jitter: .milliseconds(3),
                lossModel: .gilbertElliott), size: 1_000_000)
        #expect(result.segmentsLost > 0)
        #expect(
            result.value == 6_513_976_855_005_573_776 && result.releases == 175,
            "\(result.value) over \(result.releases) releases")
    }

    @Test func twoFlowsThroughCoDel() {
        var profile = DirectionProfile(bandwidth: .mbps(20), delay: .milliseconds(20), queue: ByteCount(bytes: 1 << 20))
        profile.queueManagement = QueueManagement(CoDelQueue.self)
        let result = digest(profile, flows: 2, size: 1_000_000)
        #expect(result.segmentsLost > 0)
        #expect(
            result.value == 16_415_877_631_182_854_408 && result.releases == 962,
            "\(result.value) over \(result.releases) releases")
    }

    @Test func threeFlowsThroughFQCoDelWithLoss() {
        var profile = DirectionProfile(bandwidth: .mbps(20), delay: .milliseconds(10), loss: Percentage(2))
        profile.queueManagement = QueueManagement(FQCoDelQueue.self)
        let result = digest(profile, flows: 3, size: 500_000)
        #expect(result.segmentsLost > 0)
        #expect(
            result.value == 11_859_684_435_515_150_625 && result.releases == 647,
            "\(result.value) over \(result.releases) releases")
    }

    @Test func aDeliveryTraceWithDelay() throws {
        var profile = DirectionProfile(delay: .milliseconds(5))
        profile.trace = try DeliveryTrace(parsing: Array("1\n1\n2\n3\n3\n3\n5\n8\n8\n".utf8), name: "bursty")
        let result = digest(profile, size: 300_000)
        #expect(
            result.value == 4_714_343_411_080_943_217 && result.releases == 112,
            "\(result.value) over \(result.releases) releases")
    }

    @Test func aGigabitAloneInUnits() {
        let result = digest(DirectionProfile(bandwidth: .gbps(1)), size: 4_000_000, settings: TCPSettings())
        #expect(
            result.value == 4_140_717_337_768_273_388 && result.releases == 70,
            "\(result.value) over \(result.releases) releases")
    }

    @Test func aGigabitWithTenMillisecondsInUnits() {
        let result = digest(
            DirectionProfile(bandwidth: .gbps(1), delay: .milliseconds(10), queue: ByteCount(bytes: 4 << 20)),
            size: 8_000_000, settings: TCPSettings())
        #expect(
            result.value == 12_885_832_096_562_987_419 && result.releases == 205,
            "\(result.value) over \(result.releases) releases")
    }

    @Test func twoPercentLossBothWaysInUnits() {
        let result = digest(
            DirectionProfile(bandwidth: .mbps(100), delay: .milliseconds(10), loss: Percentage(2)),
            reverse: DirectionProfile(delay: .milliseconds(10), loss: Percentage(2)), size: 2_000_000,
            settings: TCPSettings())
        #expect(result.segmentsLost > 0)
        #expect(
            result.value == 15_003_331_649_438_623_122 && result.releases == 1044,
            "\(result.value) over \(result.releases) releases")
    }

    @Test func burstLossWithJitterInUnits() {
        let result = digest(
            DirectionProfile(
                bandwidth: .mbps(50), delay: .milliseconds(15), jitter: .milliseconds(3),
                lossModel: .gilbertElliott), size: 1_000_000, settings: TCPSettings())
        #expect(result.segmentsLost > 0)
        #expect(
            result.value == 13_929_843_802_227_437_228 && result.releases == 131,
            "\(result.value) over \(result.releases) releases")
    }
}
