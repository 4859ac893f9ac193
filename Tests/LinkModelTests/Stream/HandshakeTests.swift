import LinkProfiles
import Testing

@testable import LinkModel

/// The handshake's round trip: the connecting side may send once the SYN-ACK is back, the accepting side once
/// the final ACK has arrived, so a first request/response takes two round trips.
@Suite(.timeLimit(.minutes(5)))
struct HandshakeTests {
    private let profile = linkProfile(down: nil, up: nil, downDelay: .milliseconds(30), upDelay: .milliseconds(20))

    @Test func theConnectingSideOpensOneSynAckAfterTheUpstreamConnect() {
        let uplink = StreamLink(
            side: .connector, profile: profile.uplink, reverse: profile.downlink, settings: TCPSettings(), seed: 1)

        let flow = uplink.makeFlow(at: .ms(20))

        #expect(flow.opensAt == .ms(20 + 30))
    }

    @Test func theAcceptingSideOpensOnceTheFinalAckArrived() {
        let downlink = StreamLink(
            side: .acceptor, profile: profile.downlink, reverse: profile.uplink, settings: TCPSettings(), seed: 1)

        let flow = downlink.makeFlow(at: .ms(20))

        #expect(flow.opensAt == .ms(20 + 30 + 20))
    }

    @Test func aFirstRequestAndResponseTakeTwoRoundTrips() {
        let connection = VirtualConnection(profile: profile)

        let lastByte = connection.fetch(request: 100, response: 100, at: .zero)

        #expect(lastByte == .ms(2 * (20 + 30)))
    }

    @Test func aServerThatSpeaksFirstPaysTheHandshakeToo() {
        let connection = VirtualConnection(profile: profile)

        let banner = connection.fetch(request: 0, response: 50, at: .zero)

        #expect(banner == .ms(20 + 30 + 20 + 30))
    }

    @Test func aFrontEndsReplyPlaysTheHandshakeSoNothingWaits() {
        let uplink = StreamLink(
            side: .connector, profile: profile.uplink, reverse: profile.downlink, settings: TCPSettings(), seed: 1)

        let flow = uplink.makeFlow(at: .ms(20), emulatingHandshake: false)

        #expect(flow.opensAt == .ms(20))
    }

    @Test func aLostFirstSegmentIsResentAfterTheHandshakesRoundTripNotTheOneSecondInitialTimeout() {
        let link = modelLink(oneWay: .milliseconds(50))
        var dropped = false
        link.lossDecision = { packet in
            defer { dropped = true }
            return !dropped
        }
        let flow = link.makeFlow(at: .zero, emulatingHandshake: false)

        let result = transfer(100, over: link, flow: flow, from: .zero)

        // The handshake's 100 ms round trip is the first sample: srtt 100 ms, rttvar max(2 · 100, 200) = 200 ms, so
        // the lone lost segment is probed at min(2 · srtt + 200 ms, srtt + rttvar) = 300 ms and arrives at 350 ms.
        #expect(result.lastByteAt == .ms(350))
        #expect(flow.transport.srtt == .milliseconds(100))
    }

    @Test func aDelayOfCenturiesSaturatesInsteadOfOverflowing() {
        let forever = DirectionProfile(delay: .seconds(Int64.max / 1_000_000_000))
        let downlink = StreamLink(side: .acceptor, profile: forever, reverse: forever, settings: TCPSettings(), seed: 1)
        let flow = downlink.makeFlow(at: .ms(5))

        downlink.enqueue(1_000, on: flow, at: .ms(5))
        let changed = downlink.advance(to: .ms(60_000))

        #expect(flow.opensAt == Instant(nanoseconds: .max))
        #expect(changed.isEmpty)
        #expect(downlink.nextServiceTime == nil)
    }
}
