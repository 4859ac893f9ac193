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

        // Of the initial window of 10 segments, the first left at once on the burst credit, one is on the wire
        // and eight wait; the new queue keeps two of them.
        #expect(queuedBeforeSwitch == segments(9))
        #expect(link.counters.segmentsLost == 6)
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

/// `burst` means the same for TCP streams and datagrams: left unset (`auto`), an idle link sends one segment or
/// 1 ms of its rate at once, whichever is larger.
@Suite(.timeLimit(.minutes(5)))
struct BurstDefaultTests {
    @Test func anUnsetBurstIsTheSameAutomaticBurstForStreamsAndDatagrams() {
        let profile = DirectionShape(bandwidth: .mbps(10))
        var serializer = profile.makeSerializer()

        // 10 Mbit/s: 1 ms of rate is 1250 bytes, less than a segment, so one 1448-byte segment leaves at once.
        #expect(DirectionShape.automaticBurst(for: .mbps(10)) == ByteCount(bytes: TCPSender.mss))
        #expect(DirectionShape.automaticBurst(for: .mbps(100)) == ByteCount(bytes: 12_500))
        #expect(serializer.transmissionEnd(bytes: TCPSender.mss, startingAt: .ms(1_000)) == .ms(1_000))
    }

    @Test func anIdleDatagramLinkSendsItsAutomaticBurstAtOnce() {
        let link = DatagramLink(profile: DirectionProfile(bandwidth: .mbps(100)), seed: 1)
        let flow = link.makeFlow()
        for _ in 0..<10 { link.enqueue(1_250, on: flow, at: .ms(1_000)) }

        _ = link.advance(to: .ms(1_000))

        // 12 500 bytes of credit: all ten 1250-byte datagrams leave at the instant they were offered.
        #expect(flow.takeDeliverableDatagrams(at: .ms(1_000)).count == 10)
    }
}
