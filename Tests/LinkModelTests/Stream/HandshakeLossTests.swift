import LinkProfiles
import Testing

@testable import LinkModel

/// Answers the given decisions in order, then "delivered" for every later segment.
private func losses(_ decisions: [Bool]) -> () -> Bool {
    var remaining = decisions[...]
    return { remaining.popFirst() ?? false }
}

/// A lost SYN or SYN-ACK is repaired by Linux's 1, 2, 4 … s timers, so the first response is late by whole seconds.
@Suite(.timeLimit(.minutes(5)))
struct HandshakeLossTests {
    private let up = Duration.milliseconds(20)
    private let down = Duration.milliseconds(30)

    @Test func aLosslessHandshakeTakesOneRoundTrip() {
        let attempts = HandshakeAttempts(uplinkDelay: up, downlinkDelay: down)

        #expect(attempts.serverReached == up)
        #expect(attempts.clientEstablished == up + down)
        #expect(attempts.synRetransmissions == 0)
        #expect(attempts.synAckRetransmissions == 0)
    }

    @Test func aLostSynCostsOneSecond() {
        let attempts = HandshakeAttempts(
            uplinkDelay: up, downlinkDelay: down, synLost: losses([true]),
            synAckLost: losses([]))

        #expect(attempts.serverReached == .seconds(1) + up)
        #expect(attempts.clientEstablished == .seconds(1) + up + down)
        #expect(attempts.synRetransmissions == 1)
    }

    @Test func aSynLostTwiceCostsThreeSeconds() {
        let attempts = HandshakeAttempts(
            uplinkDelay: up, downlinkDelay: down, synLost: losses([true, true]),
            synAckLost: losses([]))

        #expect(attempts.clientEstablished == .seconds(3) + up + down)
        #expect(attempts.synRetransmissions == 2)
    }

    @Test func aLostSynAckCostsOneSecondAnsweringTheResentSyn() {
        let attempts = HandshakeAttempts(
            uplinkDelay: up, downlinkDelay: down, synLost: losses([]),
            synAckLost: losses([true]))

        #expect(attempts.serverReached == up)
        #expect(attempts.clientEstablished == .seconds(1) + up + down)
        #expect(attempts.synRetransmissions == 1)
        #expect(attempts.synAckRetransmissions == 1)
    }

    @Test func aLostSynAckWhoseResentSynIsLostTooIsResentByTheServersTimer() {
        let attempts = HandshakeAttempts(
            uplinkDelay: up, downlinkDelay: down, synLost: losses([false, true]),
            synAckLost: losses([true]))

        #expect(attempts.clientEstablished == .seconds(1) + up + down)
        #expect(attempts.synAckRetransmissions == 1)
    }

    @Test func theServersTimerRunsFromTheSynThatReachedItBeforeTheClientsNextRetry() {
        // The first SYN is lost, the second makes the request at 1 s + up; its SYN-ACK is lost. The server's
        // timer resends at 2 s + up, before the client's third SYN at 3 s.
        let attempts = HandshakeAttempts(
            uplinkDelay: up, downlinkDelay: down, synLost: losses([true]),
            synAckLost: losses([true]))

        #expect(attempts.clientEstablished == .seconds(2) + up + down)
    }

    @Test func aHandshakeWhoseEveryAttemptIsLostIsAbandonedAfterSixRetries() {
        let attempts = HandshakeAttempts(uplinkDelay: up, downlinkDelay: down, synLost: { true }, synAckLost: { false })

        #expect(attempts.isAbandoned)
        #expect(attempts.serverReached == nil)
        #expect(attempts.synRetransmissions == 6)
        #expect(HandshakeAttempts.clientGivesUpAfter == .seconds(127))
    }

    @Test func aHandshakeWhoseEverySynAckIsLostIsAbandonedThoughTheServerHeardIt() {
        let attempts = HandshakeAttempts(uplinkDelay: up, downlinkDelay: down, synLost: { false }, synAckLost: { true })

        #expect(attempts.isAbandoned)
        #expect(attempts.serverReached == up)
    }

    @Test func aLinkWithoutLossDrawsALosslessHandshake() throws {
        let profile = linkProfile(down: nil, up: nil, downDelay: down, upDelay: up)
        let uplink = StreamLink(
            side: .connector, profile: profile.uplink, reverse: profile.downlink, settings: TCPSettings(), seed: 1)
        let downlink = StreamLink(
            side: .acceptor, profile: profile.downlink, reverse: profile.uplink, settings: TCPSettings(), seed: 2)

        let attempts = uplink.drawHandshake(answeredOver: downlink)

        // The phase of the timer wheel is drawn all the same: the connection's senders fire their timers on it.
        let phase = try #require(attempts.timerWheel?.phase)
        #expect(attempts == HandshakeAttempts(uplinkDelay: up, downlinkDelay: down, timerWheelPhase: phase))
    }

    @Test func aLosslessHandshakeIsTheOnePlayedOutWithNothingLost() {
        let delays: [(Duration, Duration)] = [
            (.zero, .zero), (up, down), (.milliseconds(500), .milliseconds(500)),
            (.milliseconds(999), .milliseconds(1)), (.milliseconds(600), .milliseconds(600)),
            (.seconds(2), .milliseconds(300)),
        ]
        for (uplinkDelay, downlinkDelay) in delays {
            let lossless = HandshakeAttempts(uplinkDelay: uplinkDelay, downlinkDelay: downlinkDelay)
            let played = HandshakeAttempts(
                uplinkDelay: uplinkDelay, downlinkDelay: downlinkDelay, synLost: { false },
                synAckLost: { false })

            #expect(lossless == played, "uplink \(uplinkDelay), downlink \(downlinkDelay)")
        }
    }

    @Test func aLosslessRoundTripLongerThanTheFirstTimeoutResendsTheSyn() {
        let attempts = HandshakeAttempts(uplinkDelay: .milliseconds(600), downlinkDelay: .milliseconds(600))

        // The SYN-ACK arrives at 1.2 s, after the client resent its SYN at 1 s.
        #expect(attempts.clientEstablished == .milliseconds(1200))
        #expect(attempts.synRetransmissions == 1)
    }

    @Test func aLinkWithoutLossCountsTheSynItResentOverALongRoundTrip() throws {
        let slow = Duration.milliseconds(600)
        let profile = linkProfile(down: nil, up: nil, downDelay: slow, upDelay: slow)
        let uplink = StreamLink(
            side: .connector, profile: profile.uplink, reverse: profile.downlink, settings: TCPSettings(), seed: 1)
        let downlink = StreamLink(
            side: .acceptor, profile: profile.downlink, reverse: profile.uplink, settings: TCPSettings(), seed: 2)

        let attempts = uplink.drawHandshake(answeredOver: downlink)
        _ = downlink.makeFlow(at: .zero + slow, handshake: attempts)

        // The resent SYN reaches the server at about 1.6 s, before the final ACK (1.8 s), and is answered by
        // another SYN-ACK (tcp_check_req's inet_rtx_syn_ack, which counts in the request's retransmissions); the
        // server's own timer may have resent one just before, as the wheel rounds it.
        let phase = try #require(attempts.timerWheel?.phase)
        #expect(attempts == HandshakeAttempts(uplinkDelay: slow, downlinkDelay: slow, timerWheelPhase: phase))
        #expect(uplink.counters.handshakeRetransmissions == 1)
        #expect(attempts.synAckRetransmissions >= 1)
        #expect(downlink.counters.handshakeRetransmissions == attempts.synAckRetransmissions)
    }

    @Test func theSameSeedDrawsTheSameHandshakes() {
        var profile = linkProfile(down: nil, up: nil, downDelay: down, upDelay: up)
        profile.uplink.loss = Percentage(40)
        profile.downlink.loss = Percentage(40)
        func draws(seed: UInt64) -> [HandshakeAttempts] {
            let uplink = StreamLink(
                side: .connector, profile: profile.uplink, reverse: profile.downlink, settings: TCPSettings(),
                seed: seed)
            let downlink = StreamLink(
                side: .acceptor, profile: profile.downlink, reverse: profile.uplink, settings: TCPSettings(),
                seed: seed &+ 1)
            return (0..<50).map { _ in uplink.drawHandshake(answeredOver: downlink) }
        }

        let first = draws(seed: 9)

        #expect(first == draws(seed: 9))
        #expect(first.contains { $0.synRetransmissions > 0 })
        #expect(first.contains { $0.synAckRetransmissions > 0 })
    }

    @Test func eachDirectionCountsTheHandshakeSegmentsItResent() {
        let profile = linkProfile(down: nil, up: nil, downDelay: down, upDelay: up)
        let uplink = StreamLink(
            side: .connector, profile: profile.uplink, reverse: profile.downlink, settings: TCPSettings(), seed: 1)
        let downlink = StreamLink(
            side: .acceptor, profile: profile.downlink, reverse: profile.uplink, settings: TCPSettings(), seed: 2)
        uplink.handshakeLossDecision = losses([true, true])
        downlink.handshakeLossDecision = losses([true])

        let attempts = uplink.drawHandshake(answeredOver: downlink)
        _ = downlink.makeFlow(at: .zero + (attempts.serverReached ?? .zero), handshake: attempts)

        // The third SYN (3 s) gets through, its SYN-ACK is lost and the server's timer resends it at 4 s, before
        // the client's fourth SYN (7 s).
        #expect(uplink.counters.handshakeRetransmissions == 2)
        #expect(downlink.counters.handshakeRetransmissions == 1)
    }

    @Test func aBurstLossModelDrawsTheHandshakeToo() {
        var profile = linkProfile(down: nil, up: nil, downDelay: down, upDelay: up)
        profile.uplink.lossModel = .gilbertElliott
        profile.uplink.gilbertElliott = GilbertElliottParameters(
            goodToBad: Percentage(100), badToGood: .zero,
            lossInBad: Percentage(100), lossInGood: Percentage(100))
        let uplink = StreamLink(
            side: .connector, profile: profile.uplink, reverse: profile.downlink, settings: TCPSettings(), seed: 1)
        let downlink = StreamLink(
            side: .acceptor, profile: profile.downlink, reverse: profile.uplink, settings: TCPSettings(), seed: 2)

        let attempts = uplink.drawHandshake(answeredOver: downlink)

        #expect(attempts.isAbandoned)
    }

    @Test func aFlowOpensWhenItsSideOfALateHandshakeCompleted() {
        let profile = linkProfile(down: nil, up: nil, downDelay: down, upDelay: up)
        let attempts = HandshakeAttempts(
            uplinkDelay: up, downlinkDelay: down, synLost: losses([true]), synAckLost: losses([]))
        let uplink = StreamLink(
            side: .connector, profile: profile.uplink, reverse: profile.downlink, settings: TCPSettings(), seed: 1)
        let downlink = StreamLink(
            side: .acceptor, profile: profile.downlink, reverse: profile.uplink, settings: TCPSettings(), seed: 2)
        let connect = Instant.zero + (attempts.serverReached ?? .zero)

        let client = uplink.makeFlow(at: connect, handshake: attempts)
        let server = downlink.makeFlow(at: connect, handshake: attempts)

        #expect(client.opensAt == .ms(1_000 + 20 + 30))
        #expect(server.opensAt == .ms(1_000 + 20 + 30 + 20))
    }

    @Test func aFirstFetchAfterALostSynIsLateByOneSecond() {
        let profile = linkProfile(down: nil, up: nil, downDelay: down, upDelay: up)
        let attempts = HandshakeAttempts(
            uplinkDelay: up, downlinkDelay: down, synLost: losses([true]), synAckLost: losses([]))
        let connection = VirtualConnection(profile: profile, handshake: attempts)

        let lastByte = connection.fetch(request: 100, response: 100, at: .zero)

        #expect(lastByte == .ms(1_000 + 2 * (20 + 30)))
    }

    @Test func aSenderWhoseSynWasResentMoreThanOnceStartsFromOneSegment() {
        let profile = linkProfile(down: nil, up: nil, downDelay: down, upDelay: up)
        let once = HandshakeAttempts(
            uplinkDelay: up, downlinkDelay: down, synLost: losses([true]), synAckLost: losses([]))
        let twice = HandshakeAttempts(
            uplinkDelay: up, downlinkDelay: down, synLost: losses([true, true]), synAckLost: losses([]))
        let uplink = StreamLink(
            side: .connector, profile: profile.uplink, reverse: profile.downlink, settings: TCPSettings(), seed: 1)

        let afterOne = uplink.makeFlow(at: .zero, handshake: once)
        let afterTwo = uplink.makeFlow(at: .zero, handshake: twice)

        #expect(afterOne.transport.cwnd == 10)
        #expect(afterTwo.transport.cwnd == 1)
        #expect(afterTwo.transport.srtt == up + down)
    }
}

/// The client's ACK of the SYN-ACK is lost with the uplink's loss: a server that speaks first waits for its
/// SYN-ACK timer and the client's answer to the resent SYN-ACK, and the client's first bytes open it at once.
@Suite(.timeLimit(.minutes(5)))
struct FinalAckLossTests {
    private let up = Duration.milliseconds(20)
    private let down = Duration.milliseconds(30)

    @Test func withoutLossTheServerIsEstablishedWhenTheFinalAckArrives() {
        let attempts = HandshakeAttempts(uplinkDelay: up, downlinkDelay: down)

        #expect(attempts.serverEstablished == up + down + up)
        #expect(attempts.handshakeAcksLost == 0)
    }

    @Test func aLostFinalAckLeavesTheServerWaitingForItsSynAckTimer() {
        let attempts = HandshakeAttempts(
            uplinkDelay: up, downlinkDelay: down, synLost: losses([]), synAckLost: losses([]),
            ackLost: losses([true]))

        // The SYN-ACK timer runs from the SYN's arrival (up): the resent SYN-ACK crosses down, its ACK up.
        #expect(attempts.clientEstablished == up + down)
        #expect(attempts.serverEstablished == up + .seconds(1) + down + up)
        #expect(attempts.synAckRetransmissions == 1)
        #expect(attempts.handshakeAcksLost == 1)
    }

    @Test func eachLostAnswerToAResentSynAckDoublesTheServersWait() {
        let attempts = HandshakeAttempts(
            uplinkDelay: up, downlinkDelay: down, synLost: losses([]), synAckLost: losses([]),
            ackLost: losses([true, true]))

        #expect(attempts.serverEstablished == up + .seconds(1 + 2) + down + up)
        #expect(attempts.synAckRetransmissions == 2)
    }

    @Test func aServerWhoseEveryAckIsLostDropsItsRequestAfterFiveResends() {
        let attempts = HandshakeAttempts(
            uplinkDelay: up, downlinkDelay: down, synLost: { false }, synAckLost: { false },
            ackLost: { true })

        #expect(attempts.clientEstablished == up + down)
        #expect(attempts.serverEstablished == nil)
        #expect(attempts.synAckRetransmissions == HandshakeAttempts.synAckRetries)
        #expect(attempts.handshakeAcksLost == HandshakeAttempts.synAckRetries + 1)
    }

    @Test func noSynAckResendCountsWhenTheClientsBytesOpenedTheServerFirst() {
        let profile = linkProfile(down: nil, up: nil, downDelay: down, upDelay: up)
        let attempts = HandshakeAttempts(
            uplinkDelay: up, downlinkDelay: down, synLost: losses([]), synAckLost: losses([]),
            ackLost: losses([true, true]))
        let downlink = StreamLink(
            side: .acceptor, profile: profile.downlink, reverse: profile.uplink, settings: TCPSettings(), seed: 2)
        let server = downlink.makeFlow(at: .ms(20), handshake: attempts)

        downlink.open(server, at: .ms(20 + 30 + 20))

        // The request arrived before the server's timer fired: the final ACK was lost, nothing was resent.
        #expect(downlink.counters.handshakeRetransmissions == 0)
        #expect(downlink.counters.acksLost == 1)
        #expect(server.transport.srtt == up + down)
    }

    @Test func aServerOpenedAfterALostFinalAckSamplesFromItsFirstSynAck() {
        let attempts = HandshakeAttempts(
            uplinkDelay: up, downlinkDelay: down, synLost: losses([]), synAckLost: losses([]),
            ackLost: losses([true]))

        let start = attempts.serverStart(openedAt: attempts.serverEstablished!)

        // The client echoes the first SYN-ACK's timestamp, so the sample spans the timer's second too.
        #expect(start.roundTrip == .seconds(1) + down + up)
        #expect(start.retransmissions == 1)
        #expect(!start.startsAtOneSegment)
    }

    @Test func resentSynAcksTheClientDidNotNeedAreUndone() {
        let attempts = HandshakeAttempts(
            uplinkDelay: up, downlinkDelay: down, synLost: losses([]), synAckLost: losses([]),
            ackLost: losses([true, true, true]))

        let start = attempts.serverStart(openedAt: attempts.serverEstablished!)

        // Three resends, but the client was established by the first SYN-ACK: tcp_try_undo_spurious_syn.
        #expect(start.retransmissions == 3)
        #expect(!start.startsAtOneSegment)
    }

    @Test func aClientEstablishedByATimersResendStartsTheServerAtOneSegment() {
        // The first SYN gets through, the client's later SYNs do not; the first two SYN-ACKs are lost, so the
        // server's timer resends at up + 1 s and up + 3 s, and the second resend establishes the client.
        let attempts = HandshakeAttempts(
            uplinkDelay: up, downlinkDelay: down, synLost: losses([false, true, true]),
            synAckLost: losses([true, true]))

        let start = attempts.serverStart(openedAt: attempts.serverEstablished!)

        #expect(attempts.clientEstablished == up + .seconds(3) + down)
        #expect(start.retransmissions == 2)
        #expect(start.startsAtOneSegment)
        #expect(start.roundTrip == down + up)
    }

    @Test func aClientWhoseFirstSynGotThroughIsNotCutByResendingIt() {
        let firstDelivered = HandshakeAttempts(
            uplinkDelay: up, downlinkDelay: down, synLost: losses([false, true]),
            synAckLost: losses([true, true]))
        let firstLost = HandshakeAttempts(
            uplinkDelay: up, downlinkDelay: down, synLost: losses([true, true]),
            synAckLost: losses([]))

        #expect(firstDelivered.synRetransmissions > 1)
        #expect(!firstDelivered.clientStart.startsAtOneSegment)
        #expect(firstLost.synRetransmissions == 2)
        #expect(firstLost.clientStart.startsAtOneSegment)
        #expect(firstLost.clientStart.roundTrip == up + down)
    }

    @Test func aServerThatDroppedItsRequestResetsTheClientsLateBytes() {
        let profile = linkProfile(down: nil, up: nil, downDelay: down, upDelay: up)
        let attempts = HandshakeAttempts(
            uplinkDelay: up, downlinkDelay: down, synLost: { false }, synAckLost: { false },
            ackLost: { true })
        let downlink = StreamLink(
            side: .acceptor, profile: profile.downlink, reverse: profile.uplink, settings: TCPSettings(), seed: 2)
        let server = downlink.makeFlow(at: .ms(20), handshake: attempts)

        let opened = downlink.open(server, at: .zero + up + .seconds(64))

        let sixtyThreeSeconds = Duration.seconds(63)
        #expect(attempts.serverGaveUp == up + sixtyThreeSeconds)
        #expect(!opened)
        #expect(server.opensAt == .never)
    }

    @Test func theServersSideOpensWhenItsFinalAckArrivesOrWhenTheClientsBytesDo() {
        let profile = linkProfile(down: nil, up: nil, downDelay: down, upDelay: up)
        let attempts = HandshakeAttempts(
            uplinkDelay: up, downlinkDelay: down, synLost: losses([]), synAckLost: losses([]),
            ackLost: losses([true]))
        let downlink = StreamLink(
            side: .acceptor, profile: profile.downlink, reverse: profile.uplink, settings: TCPSettings(), seed: 2)
        let connect = Instant.zero + up
        let server = downlink.makeFlow(at: connect, handshake: attempts)
        #expect(server.opensAt == .ms(20 + 1_000 + 30 + 20))

        downlink.enqueue(1_000, on: server, at: .ms(20 + 30))
        downlink.open(server, at: .ms(20 + 30 + 20))
        let released = downlink.advance(to: .ms(20 + 30 + 20 + 30)).reduce(0) { $0 + $1.takeDeliverable(at: .ms(100)) }

        #expect(server.opensAt == .ms(20 + 30 + 20))
        #expect(released == 1_000)
    }

    @Test func aServerThatSpeaksFirstSendsOnceItsResentSynAckWasAnswered() {
        let profile = linkProfile(down: nil, up: nil, downDelay: down, upDelay: up)
        let attempts = HandshakeAttempts(
            uplinkDelay: up, downlinkDelay: down, synLost: losses([]), synAckLost: losses([]),
            ackLost: losses([true]))
        let connection = VirtualConnection(profile: profile, handshake: attempts)

        let banner = connection.fetch(request: 0, response: 100, at: .zero)

        #expect(banner == .ms(20 + 1_000 + 30 + 20 + 30))
    }

    @Test func aClientFirstRequestIsNotDelayedByALostFinalAck() {
        let profile = linkProfile(down: nil, up: nil, downDelay: down, upDelay: up)
        let lost = HandshakeAttempts(
            uplinkDelay: up, downlinkDelay: down, synLost: losses([]), synAckLost: losses([]),
            ackLost: losses([true]))
        let delivered = HandshakeAttempts(uplinkDelay: up, downlinkDelay: down)

        let withLostAck = VirtualConnection(profile: profile, handshake: lost).fetch(
            request: 100, response: 100, at: .zero)
        let withoutLoss = VirtualConnection(profile: profile, handshake: delivered).fetch(
            request: 100, response: 100, at: .zero)

        #expect(withLostAck == .ms(20 + 30 + 20 + 30))
        #expect(withLostAck == withoutLoss)
    }

    @Test func theDownlinkCountsTheLostAcksOfItsSynAcks() {
        let profile = linkProfile(down: nil, up: nil, downDelay: down, upDelay: up)
        let uplink = StreamLink(
            side: .connector, profile: profile.uplink, reverse: profile.downlink, settings: TCPSettings(), seed: 1)
        let downlink = StreamLink(
            side: .acceptor, profile: profile.downlink, reverse: profile.uplink, settings: TCPSettings(), seed: 2)
        uplink.handshakeLossDecision = losses([false, true, true])

        let attempts = uplink.drawHandshake(answeredOver: downlink)
        _ = downlink.makeFlow(at: .zero + up, handshake: attempts)

        #expect(downlink.counters.acksLost == 2)
        #expect(downlink.counters.handshakeRetransmissions == 2)
        #expect(uplink.counters.acksLost == 0)
    }
}
