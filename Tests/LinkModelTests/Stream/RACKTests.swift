import LinkProfiles
import Testing

@testable import LinkModel

/// RACK's loss detection and reorder timer as Linux 6.1 runs them (net/ipv4/tcp_recovery.c), at HZ = 250.
@Suite(.timeLimit(.minutes(5)))
struct RACKTests {
    /// A sender with segments 0, 1 and 2 sent at 0, 10 and 20 ms and more data waiting.
    private func staggeredSender() -> (TCPSender, [TCPSegment]) {
        var sender = TCPSender()
        sender.write(segments(20), now: .zero)
        let flight = [0, 10, 20].map { sender.nextSegment(now: .ms($0))! }
        return (sender, flight)
    }

    @Test func theReorderTimerWaitsForTheLatestPendingSegmentPlusTwoMillisecondsInWholeJiffies() {
        var (sender, flight) = staggeredSender()

        // Segment 2 is SACKed 100 ms after it left: min_rtt 100 ms, so the reordering window is 25 ms. Segment 0 is
        // due at 0 + 100 + 25 = 125 ms, segment 1 at 135 ms: 15 ms remain for the latest, + 2 ms = 17 ms, rounded up
        // to 5 jiffies of 4 ms.
        sender.receive(TCPAck(cumulative: 0, sacked: flight[2].seq..<flight[2].end, window: 1 << 20), now: .ms(120))

        #expect(sender.nextTimer == .ms(140))
        #expect(sender.state == .open)
        sender.timerFired(now: .ms(140))
        // One expiry marks both lost (nothing is in flight any more) and starts the recovery with the oldest.
        #expect(sender.state == .recovery)
        #expect(sender.packetsInFlight == 0)
        #expect(
            sender.nextSegment(now: .ms(140))
                == TCPSegment(seq: flight[0].seq, length: flight[0].length, isRetransmission: true))
    }

    @Test func aLaterDeliveryOfAnOlderSegmentSetsRACKsRoundTripAndPostponesTheLoss() {
        var sender = TCPSender()
        sender.write(segments(10), now: .zero)
        let flight = (0..<5).map { _ in sender.nextSegment(now: .zero)! } + [sender.nextSegment(now: .ms(10))!]
        // Segment 5 (sent at 10 ms) is SACKed at 60 ms: the reference, with a 50 ms round trip and a 12.5 ms
        // reordering window, so segments 0-4 would be lost at 62.5 ms.
        sender.receive(TCPAck(cumulative: 0, sacked: flight[5].seq..<flight[5].end, window: 1 << 20), now: .ms(60))

        // Segment 3, sent before the reference, is SACKed at 65 ms (reordered): the reference stays, but RACK's
        // round trip becomes 65 ms, so the others are due at 0 + 65 + 12.5 ms, not overdue yet.
        sender.receive(TCPAck(cumulative: 0, sacked: flight[3].seq..<flight[3].end, window: 1 << 20), now: .ms(65))

        #expect(sender.state == .open)
        #expect(sender.packetsInFlight == 4)
        // 12.5 ms remain, + 2 ms, in 4 ms jiffies.
        #expect(sender.nextTimer == .ms(81))
    }

    @Test func theReorderTimerTakesTheRetransmissionTimersPlaceWhichThenCountsFromTheOldestSegment() {
        var sender = TCPSender()
        sender.write(segments(20), now: .zero)
        let flight = [0, 0, 10, 20].map { sender.nextSegment(now: .ms($0))! }

        // At 120 ms segment 0 is acknowledged and segment 3 SACKed: RACK's round trip is segment 0's 120 ms (the
        // last one the ACK delivered), the reordering window 25 ms, so segment 2 is due last, at 155 ms: the reorder
        // timer is set for 120 + 40 ms, in place of the retransmission timer, which the ACK does not restart.
        sender.receive(
            TCPAck(cumulative: flight[0].end, sacked: flight[3].seq..<flight[3].end, window: 1 << 20), now: .ms(120))
        #expect(sender.reorderDeadline == .ms(160))
        #expect(sender.retransmissionDeadline == nil)

        // Its expiry marks segments 1 and 2 lost and rearms the retransmission timer one timeout (srtt 100 ms +
        // 200 ms) after the oldest outstanding segment, segment 1, was sent; resending it restarts the timer.
        sender.timerFired(now: .ms(160))
        #expect(sender.state == .recovery)
        #expect(sender.reorderDeadline == nil)
        #expect(sender.retransmissionDeadline == .ms(300))
        #expect(
            sender.nextSegment(now: .ms(160))
                == TCPSegment(seq: flight[1].seq, length: flight[1].length, isRetransmission: true))
        #expect(sender.retransmissionDeadline == .ms(460))
    }

    @Test func aReorderTimeoutAfterARetransmissionTimeoutStartsAFastRecovery() {
        var sender = TCPSender()
        sender.write(segments(40), now: .zero)
        let flight = (0..<4).map { _ in sender.nextSegment(now: .zero)! }
        // Nothing comes back: the timeout (1 s before any RTT sample) marks all four lost and resends segment 0; its
        // ACK at 1.1 s opens the window to two, for segments 1 and 2.
        sender.timerFired(now: .ms(1_000))
        #expect(sender.state == .loss)
        #expect(sender.nextSegment(now: .ms(1_000))?.seq == flight[0].seq)
        sender.receive(TCPAck(cumulative: flight[0].end, window: 1 << 20), now: .ms(1_100))
        #expect(sender.nextSegment(now: .ms(1_100))?.seq == flight[1].seq)
        #expect(sender.nextSegment(now: .ms(1_100))?.seq == flight[2].seq)
        // At 1.2 s one ACK SACKs the resent segment 2 and the original segment 3, delayed 1.2 s: RACK's reference is
        // the resent segment 2, its round trip segment 3's 1.2 s, so the resent segment 1 is due at 2.3 s.
        sender.receive(
            TCPAck(cumulative: flight[0].end, sacked: flight[2].seq..<flight[3].end, window: 1 << 20), now: .ms(1_200))
        #expect(sender.reorderDeadline == .ms(2_304))

        sender.timerFired(now: .ms(2_304))

        // tcp_rack_reo_timeout enters recovery from any state but recovery itself, the loss state included.
        #expect(sender.state == .recovery)
        #expect(sender.recoveries == 1)
        #expect(
            sender.nextSegment(now: .ms(2_304))
                == TCPSegment(seq: flight[1].seq, length: flight[1].length, isRetransmission: true))
    }
}
