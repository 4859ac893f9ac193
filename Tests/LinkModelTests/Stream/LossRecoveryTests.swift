import LinkProfiles
import Testing

@testable import LinkModel

/// How the emulated sender repairs losses: fast recovery within about a round trip when later segments get
/// through, a tail loss probe when none follow, and a retransmission timeout with backoff when nothing gets through.
@Suite(.timeLimit(.minutes(5)))
struct LossRecoveryTests {
    private let oneWay = Duration.milliseconds(50)

    @Test func aSingleLossIsRepairedOneRoundTripAfterLaterSegmentsArriveWhileDataKeepsFlowing() {
        let link = modelLink(oneWay: oneWay)
        let lostSeq = UInt64(segments(30))
        var droppedOnce = false
        link.lossDecision = { packet in
            guard packet.tag == lostSeq, !droppedOnce else { return false }
            droppedOnce = true
            return true
        }
        let flow = link.makeFlow(at: .zero, emulatingHandshake: false)

        let result = transfer(segments(400), over: link, flow: flow, from: .zero)

        // Round 3 (segments 30-69) leaves at 200 ms and arrives at 250 ms without segment 30: nothing is released
        // (head-of-line blocking). The SACKs are back at 300 ms, segment 30 is resent at once and arrives at
        // 350 ms: one round trip after the hole was seen, with new data sent alongside.
        #expect(result.released(at: .ms(250)) == 0)
        #expect(result.released(at: .ms(350)) > segments(40))
        #expect(flow.transport.recoveries == 1)
        #expect(flow.transport.timeouts == 0)
        #expect(flow.transport.retransmissions == 1)
        #expect(result.lastByteAt != nil)
    }

    @Test func aTailSentBeforeARepairIsFoundLostWhenTheRepairIsAcknowledged() {
        let profile = linkProfile(
            down: .mbps(10), up: .mbps(10), downDelay: .milliseconds(100), upDelay: .milliseconds(100))
        let connection = VirtualConnection(profile: profile)
        var lost: Set<UInt64> = [UInt64(segments(8)), UInt64(segments(20))]
        connection.downlink.lossDecision = { packet in lost.remove(packet.tag) != nil }

        let lastByte = connection.fetch(response: 30_000, at: .zero)

        // Segment 8 is found lost once its successors arrive, and resent. The tail, segment 20, left before that
        // repair; when the repair is acknowledged, RACK (which orders by send time, not sequence) marks the tail
        // lost and resends it at once, where waiting for the retransmission timer would cost a timeout.
        let sender = connection.serverFlow.sender
        #expect(lastByte != nil)
        #expect(sender.timeouts == 0)
        #expect(sender.retransmissions == 2)
        #expect(sender.recoveries == 1)
    }

    @Test func resendingTheOldestSegmentRestartsTheRetransmissionTimer() {
        var sender = TCPSender()
        sender.write(segments(10), now: .zero)
        let flight = (0..<10).compactMap { _ in sender.nextSegment(now: .zero) }
        // Segment 0 is lost; the other nine are SACKed one round trip later, so RACK marks it lost at once.
        sender.receive(
            TCPAck(cumulative: 0, sacked: flight[1].seq..<flight[9].end, window: 1 << 20), now: .ms(100))

        let resent = sender.nextSegment(now: .ms(150))

        // Linux restarts the timer when it resends the oldest outstanding segment (tcp_xmit_retransmit_queue):
        // one timeout (srtt 100 ms + rttvar 200 ms) from the resend, not from the original transmission.
        #expect(resent == TCPSegment(seq: flight[0].seq, length: TCPSender.mss, isRetransmission: true))
        #expect(sender.timer.rto == .milliseconds(300))
        #expect(sender.nextTimer == .ms(150) + .milliseconds(300))
    }

    @Test func sacksOfDataSentBeforeAResentHeadKeepItsTimerFromFiring() {
        let link = modelLink(oneWay: .milliseconds(100), bandwidth: .mbps(1), queue: .mib(1))
        link.lossDecision = dropping(segmentAt: segments(40), times: 2)
        let flow = link.makeFlow(at: .zero, emulatingHandshake: false)

        let result = transfer(segments(300), over: link, flow: flow, from: .zero)

        // At 1 Mbit/s the queue holds more than a second of segments. Segment 40's resend waits behind them, and is
        // lost too; while SACKs of what was sent before it keep arriving, each restarts the timer
        // (tcp_clean_rtx_queue's FLAG_SET_XMIT_TIMER), so RACK finds the lost resend once a later segment is SACKed,
        // as the guest's kernel does (TCPLostRetransmit, no TCPTimeouts).
        #expect(result.lastByteAt != nil)
        #expect(flow.transport.retransmissions == 2)
        #expect(flow.transport.timeouts == 0)
    }

    @Test func fastRecoveryCutsTheWindowByCubicsBeta() {
        var sender = TCPSender()
        sender.write(segments(100), now: .zero)
        let flight = (0..<10).compactMap { _ in sender.nextSegment(now: .zero) }
        #expect(flight.count == 10)

        // Segment 0 is lost; segments 1, 2 and 3 arrive and are SACKed 100 ms later.
        for index in 1...3 {
            let block = flight[index].seq..<flight[index].end
            sender.receive(TCPAck(cumulative: 0, sacked: block, window: 1 << 20), now: .ms(100))
        }

        // SACKs acknowledge no new data, so they leave the window at 10 (tcp_may_raise_cwnd); the third makes
        // segment 0 lost.
        #expect(sender.state == .recovery)
        #expect(sender.ssthresh == 10 * 717 / 1024)
        let repair = sender.nextSegment(now: .ms(100))
        #expect(repair == TCPSegment(seq: 0, length: TCPSender.mss, isRetransmission: true))
    }

    @Test func renoHalvesTheWindowOnALoss() {
        var sender = TCPSender(settings: TCPSettings(congestion: .reno))
        sender.write(segments(100), now: .zero)
        let flight = (0..<10).compactMap { _ in sender.nextSegment(now: .zero) }
        for index in 1...3 {
            sender.receive(
                TCPAck(cumulative: 0, sacked: flight[index].seq..<flight[index].end, window: 1 << 20), now: .ms(100))
        }

        #expect(sender.state == .recovery)
        #expect(sender.ssthresh == 5)
    }

    @Test func theWindowEndsRecoveryAtSsthresh() {
        var sender = TCPSender()
        sender.write(segments(100), now: .zero)
        let flight = (0..<10).compactMap { _ in sender.nextSegment(now: .zero) }
        for index in 1...9 {
            sender.receive(
                TCPAck(cumulative: 0, sacked: flight[index].seq..<flight[index].end, window: 1 << 20), now: .ms(100))
        }
        while sender.nextSegment(now: .ms(100)) != nil {}
        let ssthresh = sender.ssthresh

        sender.receive(TCPAck(cumulative: flight[9].end, window: 1 << 20), now: .ms(200))

        #expect(sender.state == .open)
        #expect(sender.cwnd >= ssthresh && sender.cwnd <= ssthresh + 1)
    }

    @Test func aLostTailIsProbedAfterTwoSmoothedRoundTrips() {
        var sender = TCPSender()
        sender.write(segments(4), now: .zero)
        let flight = (0..<4).compactMap { _ in sender.nextSegment(now: .zero) }
        // The first three arrive; the last is lost and nothing follows it.
        sender.receive(TCPAck(cumulative: flight[2].end, window: 1 << 20), now: .ms(100))

        // PTO = 2 · srtt + 200 ms with one segment out (the receiver may be delaying its ACK), but never later
        // than the retransmission timeout, here srtt + rttvar (twice the first sample, at least 200 ms) = 300 ms
        // after the ACK.
        #expect(sender.nextTimer == .ms(100) + .milliseconds(300))
        sender.timerFired(now: .ms(400))
        #expect(
            sender.nextSegment(now: .ms(400))
                == TCPSegment(seq: flight[3].seq, length: TCPSender.mss, isRetransmission: true))
        sender.receive(TCPAck(cumulative: flight[3].end, window: 1 << 20), now: .ms(500))

        #expect(sender.timeouts == 0)
        #expect(sender.packetsOut == 0)
    }

    @Test func aLostTailInTheFirstFlightOfALongPathIsProbedThreeRoundTripsAfterTheLastAck() {
        var sender = TCPSender()
        sender.write(segments(7), now: .zero)
        let flight = (0..<7).compactMap { _ in sender.nextSegment(now: .zero) }

        // Six of seven arrive, acknowledged in pairs one round trip (200 ms) later; the seventh is lost.
        for index in [1, 3, 5] {
            sender.receive(TCPAck(cumulative: flight[index].end, window: 1 << 20), now: .ms(200))
        }

        // rttvar keeps the first sample's 400 ms for the whole round (tcp_rtt_estimator), so the timeout is
        // 600 ms and the probe's 2 · srtt + 200 ms fits within it. Smoothing rttvar per sample (RFC 6298) would
        // have cut the timeout, and with it the probe, to about 425 ms.
        #expect(sender.timer.rto == .milliseconds(600))
        #expect(sender.nextTimer == .ms(800))
    }

    @Test func onTheKernelsTimerWheelTheLongPathsProbeFiresAGranuleAfterItsDueJiffy() {
        var sender = TCPSender()
        sender.timerWheel = TimerWheel(phase: .zero)
        sender.write(segments(7), now: .zero)
        let flight = (0..<7).compactMap { _ in sender.nextSegment(now: .zero) }

        for index in [1, 3, 5] {
            sender.receive(TCPAck(cumulative: flight[index].end, window: 1 << 20), now: .ms(200))
        }

        // Armed in jiffy 50 for 150 jiffies: due in jiffy 200, on the 8-jiffy level, so it fires at jiffy 208.
        #expect(sender.nextTimer == .ms(832))
    }

    @Test func aTimeoutWithoutAnyRoundTripSampleWaitsOneSecondThenBacksOffExponentially() {
        var sender = TCPSender()
        sender.write(segments(1), now: .zero)
        #expect(sender.nextSegment(now: .zero) != nil)

        var expirations: [Instant] = []
        for _ in 0..<4 {
            guard let deadline = sender.nextTimer else { break }
            expirations.append(deadline)
            sender.timerFired(now: deadline)
            #expect(sender.nextSegment(now: deadline)?.isRetransmission == true)
        }

        #expect(expirations == [.ms(1_000), .ms(3_000), .ms(7_000), .ms(15_000)])
        #expect(sender.timeouts == 4)
        #expect(sender.cwnd == 1)
        #expect(sender.state == .loss)
    }

    @Test func aPathChangeRestartsABackedOffTimerAtOneTimeout() {
        var sender = TCPSender()
        sender.write(segments(1), now: .zero)
        #expect(sender.nextSegment(now: .zero) != nil)
        for _ in 0..<3 {
            guard let deadline = sender.nextTimer else { break }
            sender.timerFired(now: deadline)
            _ = sender.nextSegment(now: deadline)
        }
        #expect(sender.nextTimer == .ms(15_000), "backed off three times: 1 + 2 + 4 s, then 8 s more")

        sender.pathChanged(now: .ms(8_000))

        // The live profile switch's restart: one timeout (1 s without a sample) from the switch, not the backoff.
        #expect(sender.nextTimer == .ms(9_000))
    }

    @Test func aTimeoutCutsSsthreshOnceAndRestartsFromOneSegment() {
        var sender = TCPSender()
        sender.write(segments(100), now: .zero)
        let flight = (0..<10).compactMap { _ in sender.nextSegment(now: .zero) }
        sender.receive(TCPAck(cumulative: flight[0].end, window: 1 << 20), now: .ms(100))
        while sender.nextSegment(now: .ms(100)) != nil {}
        // srtt 100 ms, rttvar max(2 · 100, 200) = 200 ms: rto = 300 ms; the tail probe at 2 · srtt comes first.
        let probeAt = sender.nextTimer!
        sender.timerFired(now: probeAt)
        _ = sender.nextSegment(now: probeAt)
        let cwndBefore = sender.cwnd

        let timeoutAt = sender.nextTimer!
        sender.timerFired(now: timeoutAt)

        #expect(sender.timeouts == 1)
        #expect(sender.cwnd == 1)
        #expect(sender.ssthresh == cwndBefore * 717 / 1024)
        #expect(
            sender.nextSegment(now: timeoutAt)
                == TCPSegment(seq: flight[1].seq, length: TCPSender.mss, isRetransmission: true))
        #expect(sender.nextSegment(now: timeoutAt) == nil)
    }

    @Test func aTailWhoseProbeIsAlsoLostEndsInATimeout() {
        let link = modelLink(oneWay: oneWay)
        link.lossDecision = dropping(segmentAt: segments(6), times: 2)
        let flow = link.makeFlow(at: .zero, emulatingHandshake: false)

        let result = transfer(segments(7), over: link, flow: flow, from: .zero)

        #expect(flow.transport.timeouts == 1)
        // The ACKs of segments 0-5 are back at 100 ms (srtt 100 ms, rto 300 ms). The probe, due at
        // min(2 · srtt + 200 ms, rto) = 400 ms, is lost too; the timeout re-armed then fires one rto later, at
        // 700 ms, and its retransmission arrives at 750 ms.
        #expect(result.lastByteAt == .ms(750))
    }
}

/// Loss models apply to stream segments as they do to datagrams.
@Suite(.timeLimit(.minutes(5)))
struct StreamLossModelTests {
    @Test func burstyGilbertElliottLossHitsSegmentsAndEveryByteStillArrives() {
        var forward = DirectionProfile(bandwidth: .mbps(10), delay: .milliseconds(10), lossModel: .gilbertElliott)
        forward.gilbertElliott = GilbertElliottParameters(goodToBad: Percentage(1), badToGood: Percentage(50))
        let link = StreamLink(
            side: .acceptor, profile: forward, reverse: DirectionProfile(delay: .milliseconds(10)),
            settings: TCPSettings(), seed: 3)
        let flow = link.makeFlow(at: .zero, emulatingHandshake: false)

        let result = transfer(2_000_000, over: link, flow: flow, from: .zero)

        #expect(result.releases.reduce(0) { $0 + $1.bytes } == 2_000_000)
        #expect(link.counters.segmentsLost > 0)
        #expect(flow.transport.recoveries > 0)
    }

    @Test func theSameSeedRepeatsTheSameSchedule() {
        func run() -> [Instant] {
            let link = modelLink(oneWay: .milliseconds(20), bandwidth: .mbps(5), loss: 0.02, seed: 99)
            let flow = link.makeFlow(at: .zero, emulatingHandshake: false)
            return transfer(500_000, over: link, flow: flow, from: .zero).releases.map(\.at)
        }

        #expect(run() == run())
    }
}

/// What a tail loss probe's ACK says: a D-SACK means the probed segment had arrived (nothing to cut); an ACK
/// beyond the probe without one means the probe repaired a loss, which cuts the window by β.
@Suite(.timeLimit(.minutes(5)))
struct TailLossProbeTests {
    /// Two segments sent at 0; the first ACKed at 100 ms (srtt 100 ms, rto 300 ms); the probe for the second
    /// fires at 400 ms and resends it.
    private func probedSender() -> (TCPSender, TCPSegment) {
        var sender = TCPSender()
        sender.write(segments(2), now: .zero)
        let first = sender.nextSegment(now: .zero)!
        let second = sender.nextSegment(now: .zero)!
        sender.receive(TCPAck(cumulative: first.end, window: 1 << 20), now: .ms(100))
        sender.timerFired(now: .ms(400))
        let probe = sender.nextSegment(now: .ms(400))
        #expect(probe == TCPSegment(seq: second.seq, length: second.length, isRetransmission: true))
        return (sender, second)
    }

    @Test func aDuplicateReportForTheProbeLeavesTheWindowAlone() {
        var (sender, second) = probedSender()

        sender.receive(TCPAck(cumulative: second.end, window: 1 << 20), now: .ms(420))
        sender.receive(
            TCPAck(cumulative: second.end, sacked: second.seq..<second.end, duplicate: true, window: 1 << 20),
            now: .ms(500))
        sender.write(segments(1), now: .ms(500))
        let next = sender.nextSegment(now: .ms(500))!
        sender.receive(TCPAck(cumulative: next.end, window: 1 << 20), now: .ms(600))

        #expect(sender.cwnd == 10)
        #expect(sender.ssthresh == CongestionWindow.infinite)
    }

    @Test func anAckBeyondARepairingProbeCutsTheWindowByBeta() {
        var (sender, second) = probedSender()

        sender.receive(TCPAck(cumulative: second.end, window: 1 << 20), now: .ms(500))
        sender.write(segments(1), now: .ms(500))
        let next = sender.nextSegment(now: .ms(500))!
        sender.receive(TCPAck(cumulative: next.end, window: 1 << 20), now: .ms(600))

        #expect(sender.ssthresh == 10 * 717 / 1024)
        #expect(sender.cwnd == sender.ssthresh)
    }
}
