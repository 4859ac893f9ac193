import LinkProfiles
import Testing

@testable import LinkModel

/// The retransmission timer's arithmetic (Linux's tcp_rtt_estimator: the variance term is the round's largest
/// deviation, at least 200 ms), CUBIC's window curve, and restart after idle.
@Suite(.timeLimit(.minutes(5)))
struct TimerAndWindowTests {
    @Test func theFirstSampleSetsSrttAndTwiceItAsTheVarianceTermAtLeast200Milliseconds() {
        var timer = RetransmissionTimer()
        #expect(timer.rto == .seconds(1))

        timer.sample(.milliseconds(200), sndUna: 0, sndNxt: 0)

        #expect(timer.srtt == .milliseconds(200))
        #expect(timer.rttvar == .milliseconds(400))
        #expect(timer.rto == .milliseconds(600))
    }

    @Test func aShortRoundTripsVarianceTermIsTheFloorOf200Milliseconds() {
        var timer = RetransmissionTimer()

        timer.sample(.milliseconds(10), sndUna: 0, sndNxt: 0)

        #expect(timer.rttvar == .milliseconds(200))
        #expect(timer.rto == .milliseconds(210))
    }

    @Test func samplesWithinARoundSmoothSrttButLeaveTheVarianceTermAtTheRoundsLargest() {
        var timer = RetransmissionTimer()
        timer.sample(.milliseconds(200), sndUna: 0, sndNxt: 10_000)

        for _ in 0..<5 { timer.sample(.milliseconds(200), sndUna: 5_000, sndNxt: 10_000) }

        #expect(timer.srtt == .milliseconds(200))
        #expect(timer.deviation < .milliseconds(400))
        #expect(timer.rttvar == .milliseconds(400))
        #expect(timer.rto == .milliseconds(600))
    }

    @Test func aRoundOfSteadySamplesBringsTheVarianceTermAQuarterOfTheWayDownTo200Milliseconds() {
        var timer = RetransmissionTimer()
        timer.sample(.milliseconds(200), sndUna: 0, sndNxt: 10_000)
        timer.sample(.milliseconds(200), sndUna: 10_000, sndNxt: 20_000)
        // The first round ends here; its largest deviation was the first sample's 400 ms.
        timer.sample(.milliseconds(200), sndUna: 20_000, sndNxt: 30_000)
        timer.sample(.milliseconds(200), sndUna: 30_000, sndNxt: 40_000)
        #expect(timer.rttvar == .milliseconds(400))

        // The next round ends: its deviations stayed below 200 ms, so the term falls by (400 − 200) / 4.
        timer.sample(.milliseconds(200), sndUna: 40_000, sndNxt: 50_000)

        #expect(timer.rttvar == .milliseconds(350))
        #expect(timer.rto == .milliseconds(550))
    }

    @Test func aSampleBelowSrttAddsOnlyAnEighthOfItsExcessToTheDeviation() {
        var timer = RetransmissionTimer()
        timer.sample(.milliseconds(100), sndUna: 0, sndNxt: 10_000)

        timer.sample(.milliseconds(20), sndUna: 5_000, sndNxt: 10_000)

        // The error is 80 ms below srtt, 30 ms beyond a quarter of the deviation (200 ms / 4): the deviation takes an
        // eighth of that, 3.75 ms, and being the round's largest it raises the variance term with it. srtt falls by
        // 80 / 8. (RFC 6298 would take a quarter of the whole error into rttvar: rto 320 ms.)
        #expect(timer.srtt == .milliseconds(90))
        #expect(timer.deviation == .microseconds(203_750))
        #expect(timer.rttvar == .microseconds(203_750))
        #expect(timer.rto == .microseconds(293_750))
    }

    @Test func backoffDoublesTheTimeoutUpToTwoMinutesAndASampleClearsIt() {
        var timer = RetransmissionTimer()
        timer.sample(.milliseconds(100), sndUna: 0, sndNxt: 0)
        for _ in 0..<3 { timer.backOff() }
        #expect(timer.timeout == .milliseconds(2_400))
        for _ in 0..<20 { timer.backOff() }
        #expect(timer.timeout == .seconds(120))

        timer.sample(.milliseconds(100), sndUna: 0, sndNxt: 0)

        #expect(timer.backoff == 0)
    }

    @Test func cubicsWindowFollowsTheCubicCurveAfterALoss() {
        var cubic = CubicWindow()
        var window = CongestionWindow(cwnd: 100)
        let rtt = Duration.milliseconds(100)
        cubic.acked(AckSample(rtt: rtt, now: .zero, sndUna: 0, sndNxt: 0), window: &window)
        window.ssthresh = cubic.ssthreshAfterLoss(window: window)
        window.cwnd = window.ssthresh
        #expect(window.cwnd == 70)

        // One ACK per segment, spread evenly over each 100 ms round trip, for 8 s.
        var samples: [(seconds: Double, cwnd: Int)] = []
        var roundStart = Instant.zero
        for _ in 0..<80 {
            let acks = window.cwnd
            for index in 0..<acks {
                cubic.increase(acked: 1, now: roundStart + rtt * index / acks, window: &window)
            }
            roundStart = roundStart + rtt
            samples.append(((roundStart - .zero).seconds, window.cwnd))
        }

        // W(t) = C (t − K)³ + Wmax, with t counted from the epoch's first ACK plus the minimum RTT.
        let kSeconds = cubeRoot(30 / 0.4)
        for sample in samples where sample.seconds.truncatingRemainder(dividingBy: 1) < 0.05 && sample.seconds >= 1 {
            let t = sample.seconds + rtt.seconds
            let expected = 0.4 * (t - kSeconds) * (t - kSeconds) * (t - kSeconds) + 100
            // The window trails the curve by at most about one round trip's growth.
            let growthPerRoundTrip = 3 * 0.4 * (t - kSeconds) * (t - kSeconds) * rtt.seconds
            #expect(
                abs(Double(sample.cwnd) - expected) <= 2 + growthPerRoundTrip,
                "at \(sample.seconds) s the window is \(sample.cwnd), the curve \(expected)")
        }
        #expect(cubic.originPoint == 100)
        #expect(abs(cubic.k - kSeconds) < 1e-9)
    }

    @Test func anIdleSenderRestartsFromTheInitialWindow() {
        var sender = grownSender(settings: TCPSettings())
        #expect(sender.cwnd > 10)

        sender.write(segments(10), now: .ms(3_000))

        #expect(sender.cwnd == 10)
    }

    @Test func withoutSlowStartAfterIdleTheWindowSurvivesThePause() {
        var sender = grownSender(settings: TCPSettings(slowStartAfterIdle: false))
        let grown = sender.cwnd

        sender.write(segments(10), now: .ms(3_000))

        #expect(sender.cwnd == grown)
    }

    @Test func aShortPauseBelowOneTimeoutKeepsTheWindow() {
        var sender = grownSender(settings: TCPSettings())
        let grown = sender.cwnd

        sender.write(segments(10), now: .ms(1_000 + 200))

        #expect(sender.cwnd == grown)
    }

    @Test func anIdleRestartAfterALossRaisesSsthreshToThreeQuartersOfTheWindow() throws {
        // A timeout makes ssthresh finite; then whole flights, each ACKed 100 ms later, grow the window in
        // congestion avoidance to twice that ssthresh, with everything written acknowledged.
        var sender = TCPSender()
        sender.write(segments(100), now: .zero)
        let first = (0..<10).compactMap { _ in sender.nextSegment(now: .zero) }
        sender.receive(TCPAck(cumulative: first[0].end, window: 1 << 20), now: .ms(100))
        while sender.nextSegment(now: .ms(100)) != nil {}
        let probeAt = try #require(sender.nextTimer)
        sender.timerFired(now: probeAt)
        _ = sender.nextSegment(now: probeAt)
        let timeoutAt = try #require(sender.nextTimer)
        sender.timerFired(now: timeoutAt)
        let ssthreshAfterLoss = sender.ssthresh
        #expect(sender.cwnd == 1)
        var now = timeoutAt
        var written = Int64(segments(100))
        var acked = first[0].end
        for _ in 0..<1_000 where !(sender.cwnd >= 2 * ssthreshAfterLoss && acked == written) {
            if acked == written {
                let more = segments(sender.cwnd)
                sender.write(more, now: now)
                written += Int64(more)
            }
            var flight: [TCPSegment] = []
            while let segment = sender.nextSegment(now: now) { flight.append(segment) }
            now = now + .milliseconds(100)
            for segment in flight.sorted(by: { $0.end < $1.end }) where segment.end > acked {
                sender.receive(TCPAck(cumulative: segment.end, window: 1 << 22), now: now)
                acked = segment.end
            }
        }
        let grown = sender.cwnd
        try #require(grown >= 2 * ssthreshAfterLoss && acked == written, "the window grew to \(grown) only")
        #expect(sender.ssthresh == ssthreshAfterLoss)

        sender.write(segments(10), now: now + .seconds(3))

        // tcp_cwnd_restart: ssthresh = max(ssthresh, tcp_current_ssthresh's (cwnd >> 1) + (cwnd >> 2)).
        #expect(sender.ssthresh == (grown >> 1) + (grown >> 2))
        #expect(sender.cwnd == 10)
    }

    /// A sender that sent three flights of slow start, each ACKed a round trip (100 ms) later; last ACK at 1 s.
    private func grownSender(settings: TCPSettings) -> TCPSender {
        var sender = TCPSender(settings: settings)
        sender.write(segments(70), now: .ms(700))
        var now = Instant.ms(700)
        for _ in 0..<3 {
            var flight: [TCPSegment] = []
            while let segment = sender.nextSegment(now: now) { flight.append(segment) }
            now = now + .milliseconds(100)
            for segment in flight { sender.receive(TCPAck(cumulative: segment.end, window: 1 << 22), now: now) }
        }
        return sender
    }
}

/// ∛x for positive x by Newton's method (the test's own arithmetic, independent of the model's).
func cubeRoot(_ x: Double) -> Double {
    var y = x
    for _ in 0..<100 { y -= (y * y * y - x) / (3 * y * y) }
    return y
}
