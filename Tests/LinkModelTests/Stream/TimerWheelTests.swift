import Testing

@testable import LinkModel

/// Timers fire as the kernel's timer wheel fires them (HZ = 250): at the first multiple of their level's granularity
/// after their expiry, 1 jiffy below 63 jiffies, 8 jiffies (32 ms) up to 504.
@Suite(.timeLimit(.minutes(5)))
struct TimerWheelTests {
    @Test func aOneSecondTimerFiresOnTheWheelsThirtyTwoMillisecondGrid() {
        let wheel = TimerWheel(phase: .milliseconds(5))

        let fires = wheel.fires(armedAt: .milliseconds(10), after: .seconds(1))

        // Armed in jiffy 3 (15 ms of the grid), due in jiffy 253, fired at jiffy 256: 1024 ms of the grid.
        #expect(fires == .milliseconds(1_019))
    }

    @Test func aTimerDueOnItsLevelsGridFiresOneGranuleLater() {
        let wheel = TimerWheel(phase: .milliseconds(24))

        let fires = wheel.fires(armedAt: Duration.zero, after: .milliseconds(600))

        // Armed in jiffy 6, due in jiffy 156 (a multiple of 8): calc_index rounds strictly up, to jiffy 160.
        #expect(fires == .milliseconds(616))
    }

    @Test func aTimerShorterThanSixtyThreeJiffiesFiresTheJiffyAfterItsExpiry() {
        let wheel = TimerWheel(phase: .milliseconds(6))

        let fires = wheel.fires(armedAt: Duration.zero, after: .milliseconds(200))

        // Armed in jiffy 1 (6 ms of the grid), due in jiffy 51, fired at jiffy 52: 208 ms of the grid.
        #expect(fires == .milliseconds(202))
    }

    @Test func aTimeoutIsRoundedUpToWholeJiffies() {
        let wheel = TimerWheel(phase: .zero)

        let fires = wheel.fires(armedAt: Duration.zero, after: .milliseconds(9))

        // usecs_to_jiffies(9 ms) is 3 jiffies: due in jiffy 3, fired at jiffy 4.
        #expect(fires == .milliseconds(16))
    }

    @Test func theGridMeasuredFromALaterOriginFiresAtTheSameInstants() {
        let wheel = TimerWheel(phase: .milliseconds(5))
        let later = wheel.measured(from: .milliseconds(1_003))

        let fires = later.fires(armedAt: .milliseconds(7), after: .milliseconds(600))

        #expect(fires + .milliseconds(1_003) == wheel.fires(armedAt: .milliseconds(1_010), after: .milliseconds(600)))
    }

    @Test func aLostSynAckAtTwoHundredMillisecondsUsuallyStartsTheServerAtOneSegment() {
        var startsAtOneSegment = 0
        for phase in 0..<32 {
            let attempts = HandshakeAttempts(
                uplinkDelay: .milliseconds(100), downlinkDelay: .milliseconds(100), synLost: { false },
                synAckLost: onlyTheFirst(), timerWheelPhase: .milliseconds(Int64(phase)))
            let opened = attempts.serverEstablished ?? .zero

            if attempts.serverStart(openedAt: opened).startsAtOneSegment { startsAtOneSegment += 1 }
        }

        // The server's timer, armed 100 ms after the client's SYN timer, rounds up to the same 32 ms grid: in 7 of
        // its 8 jiffies it fires before the resent SYN arrives, so the server sends two SYN-ACKs, and
        // tcp_init_transfer starts a window with more than one resend at one segment.
        #expect(startsAtOneSegment == 28)
    }

    @Test func withoutAPhaseTheTimersAreExact() {
        let attempts = HandshakeAttempts(
            uplinkDelay: .milliseconds(100), downlinkDelay: .milliseconds(100), synLost: { false },
            synAckLost: onlyTheFirst())

        #expect(attempts.clientEstablished == .milliseconds(1_200))
        #expect(attempts.synAckRetransmissions == 1)
    }
}

/// A loss decision that loses the first segment asked about and no other.
private func onlyTheFirst() -> () -> Bool {
    var first = true
    return {
        defer { first = false }
        return first
    }
}
