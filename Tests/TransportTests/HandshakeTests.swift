@testable import LinkConditioner
import Testing

/// The handshake's round trip: the connecting side may send once the SYN-ACK is back, the accepting side once
/// the final ACK has arrived, so a first request/response takes two round trips.
struct HandshakeTests {
    private let profile = linkProfile(down: nil, up: nil, downDelay: .milliseconds(30), upDelay: .milliseconds(20))

    @Test func theConnectingSideOpensOneSynAckAfterTheUpstreamConnect() {
        let uplink = StreamLink(side: .connector, profile: profile.uplink, reverse: profile.downlink, settings: TCPSettings(), seed: 1)

        let flow = uplink.makeFlow(at: .ms(20))

        #expect(flow.opensAt == .ms(20 + 30))
    }

    @Test func theAcceptingSideOpensOnceTheFinalAckArrived() {
        let downlink = StreamLink(side: .acceptor, profile: profile.downlink, reverse: profile.uplink, settings: TCPSettings(), seed: 1)

        let flow = downlink.makeFlow(at: .ms(20))

        #expect(flow.opensAt == .ms(20 + 30 + 20))
    }

    @Test func aFirstRequestAndResponseTakeTwoRoundTrips() {
        let connection = ModelConnection(profile: profile)

        let lastByte = connection.fetch(request: 100, response: 100, at: .zero)

        #expect(lastByte == .ms(2 * (20 + 30)))
    }

    @Test func aServerThatSpeaksFirstPaysTheHandshakeToo() {
        let connection = ModelConnection(profile: profile)

        let banner = connection.fetch(request: 0, response: 50, at: .zero)

        #expect(banner == .ms(20 + 30 + 20 + 30))
    }

    @Test func aFrontEndsReplyPlaysTheHandshakeSoNothingWaits() {
        let uplink = StreamLink(side: .connector, profile: profile.uplink, reverse: profile.downlink, settings: TCPSettings(), seed: 1)

        let flow = uplink.makeFlow(at: .ms(20), emulatingHandshake: false)

        #expect(flow.opensAt == .ms(20))
    }
}
