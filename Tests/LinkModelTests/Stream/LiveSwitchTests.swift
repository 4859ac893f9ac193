import LinkProfiles
import Testing

@testable import LinkModel

/// A live profile switch on a stream link: what the new queue has no room for is a loss for its flow.
@Suite(.timeLimit(.minutes(5)))
struct LiveSwitchTests {
    @Test func segmentsAShrunkQueueRefusesCountAsLostAndTheStreamStillArrivesWhole() {
        let slow = DirectionProfile(bandwidth: .mbps(1), delay: .milliseconds(10))
        let link = StreamLink(
            side: .acceptor, profile: slow, reverse: DirectionProfile(delay: .milliseconds(10)),
            settings: TCPSettings(), seed: 1)
        let flow = link.makeFlow(at: .zero, emulatingHandshake: false)
        link.enqueue(segments(10), on: flow, at: .zero)
        let queuedBeforeSwitch = link.counters.queuedBytes
        var small = slow
        small.queue = ByteCount(bytes: segments(2))

        link.update(
            profile: small, reverse: DirectionProfile(delay: .milliseconds(10)), settings: TCPSettings(),
            now: .ms(1))

        // Of the initial window of 10 segments, one is on the wire and nine wait; the new queue keeps two of them.
        #expect(queuedBeforeSwitch == segments(10))
        #expect(link.counters.segmentsLost == 7)
        var delivered = 0
        for _ in 0..<10_000 {
            guard let next = link.nextServiceTime else { break }
            for changed in link.advance(to: next) where changed === flow {
                delivered += changed.takeDeliverable(at: next)
            }
        }
        #expect(delivered == segments(10))
    }
}

/// `burst` means the same for TCP streams and datagrams: left unset (`auto`), every packet takes its serialisation
/// time, as on a wire and under netem's `rate`; set, an idle link sends that many bytes at once, as tbf does.
@Suite(.timeLimit(.minutes(5)))
struct BurstDefaultTests {
    @Test func anUnsetBurstSerialisesEvenTheFirstSegmentOfAnIdleLink() {
        var serializer = DirectionShape(bandwidth: .mbps(10)).makeSerializer()

        let end = serializer.transmissionEnd(bytes: TCPSender.mss, startingAt: .ms(1_000))

        // 1448 bytes at 10 Mbit/s take 1158.4 µs.
        #expect(end == .ms(1_000) + .nanoseconds(1_158_400))
    }

    @Test func aSetBurstLetsAnIdleLinkSendThatManyBytesAtOnce() {
        var serializer = DirectionShape(bandwidth: .mbps(10), burst: ByteCount(bytes: TCPSender.mss)).makeSerializer()

        let end = serializer.transmissionEnd(bytes: TCPSender.mss, startingAt: .ms(1_000))

        #expect(end == .ms(1_000))
    }

    @Test func anIdleDatagramLinkWithABurstSendsItAtOnce() {
        var profile = DirectionProfile(bandwidth: .mbps(100))
        profile.burst = ByteCount(bytes: 12_500)
        let link = DatagramLink(profile: profile, seed: 1)
        let flow = link.makeFlow()
        for _ in 0..<10 { link.enqueue(1_250, on: flow, at: .ms(1_000)) }

        _ = link.advance(to: .ms(1_000))

        // 12 500 bytes of credit: all ten 1250-byte datagrams leave at the instant they were offered.
        #expect(flow.takeDeliverableDatagrams(at: .ms(1_000)).count == 10)
    }

    @Test func anIdleDatagramLinkWithoutABurstSerialisesItsFirstDatagram() {
        let link = DatagramLink(profile: DirectionProfile(bandwidth: .mbps(100)), seed: 1)
        let flow = link.makeFlow()
        link.enqueue(1_250, on: flow, at: .ms(1_000))

        _ = link.advance(to: .ms(1_000))

        // 1250 bytes at 100 Mbit/s take 100 µs.
        #expect(flow.takeDeliverableDatagrams(at: .ms(1_000)).isEmpty)
        #expect(link.nextServiceTime == .ms(1_000) + .microseconds(100))
    }
}
