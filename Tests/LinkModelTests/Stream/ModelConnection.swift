import LinkProfiles

@testable import LinkModel

/// A connection through a profile's emulated path in virtual time, as the proxy runs it: the handshake is drawn,
/// the upstream connect starts when the first SYN reached the server (one uplink delay after the client's
/// without loss), both directions attach then, the request's first bytes open the server's side as they do
/// through the relay (they carry a lost final ACK's acknowledgement), and the server answers each request as soon
/// as its last byte arrived.
final class ModelConnection {
    let uplink: StreamLink
    let downlink: StreamLink
    let clientFlow: StreamFlow
    let serverFlow: StreamFlow
    let handshake: HandshakeAttempts
    private(set) var now: Instant

    /// Connects at `start` (the client's connect()); `handshake` replaces the links' draw.
    init(profile: Profile, seed: UInt64 = 1, start: Instant = .zero, handshake: HandshakeAttempts? = nil) {
        uplink = StreamLink(
            side: .connector, profile: profile.uplink, reverse: profile.downlink, settings: profile.tcp, seed: seed)
        downlink = StreamLink(
            side: .acceptor, profile: profile.downlink, reverse: profile.uplink, settings: profile.tcp,
            seed: seed &+ 1)
        let handshake = handshake ?? uplink.drawHandshake(answeredOver: downlink)
        self.handshake = handshake
        let attach = start + (handshake.serverReached ?? HandshakeAttempts.clientGivesUpAfter)
        clientFlow = uplink.makeFlow(at: attach, handshake: handshake)
        serverFlow = downlink.makeFlow(at: attach, handshake: handshake)
        now = attach
    }

    /// Sends a `request`-byte request at `at` (no earlier than the upstream attach) and a `response`-byte answer
    /// once it arrived; returns when the response's last byte reached the client, or nil if the handshake failed.
    func fetch(request: Int = 100, response: Int, at: Instant) -> Instant? {
        guard !handshake.isAbandoned else { return nil }
        now = max(now, at)
        var requestWritten = 0
        var requestArrived = 0
        var responseWritten = 0
        var responseArrived = 0
        var answering = false
        for _ in 0..<20_000_000 {
            for flow in uplink.advance(to: now) { requestArrived += flow.takeDeliverable(at: now) }
            if requestArrived > 0 { downlink.open(serverFlow, at: now) }
            for flow in downlink.advance(to: now) { responseArrived += flow.takeDeliverable(at: now) }
            if responseArrived >= response { return now }
            if requestArrived >= request { answering = true }
            while requestWritten < request && uplink.canAccept(clientFlow) {
                let chunk = min(45 * TCPSender.mss, request - requestWritten)
                uplink.enqueue(chunk, on: clientFlow, at: now)
                requestWritten += chunk
            }
            while answering && responseWritten < response && downlink.canAccept(serverFlow) {
                let chunk = min(45 * TCPSender.mss, response - responseWritten)
                downlink.enqueue(chunk, on: serverFlow, at: now)
                responseWritten += chunk
            }
            let next = [uplink.nextServiceTime, downlink.nextServiceTime].compactMap { $0 }.min()
            guard let next else { return nil }
            now = max(now, next)
        }
        return nil
    }

    /// Lets both directions run to `instant` (an idle pause).
    func idle(until instant: Instant) {
        while let next = [uplink.nextServiceTime, downlink.nextServiceTime].compactMap({ $0 }).min(), next <= instant {
            _ = uplink.advance(to: next)
            _ = downlink.advance(to: next)
        }
        now = max(now, instant)
    }
}

/// A profile with `down`/`up` rates and one-way delays, and `loss` on the downlink.
func linkProfile(down: BitRate?, up: BitRate?, downDelay: Duration, upDelay: Duration, loss: Double = 0) -> Profile {
    var profile = Profile.none
    profile.downlink = DirectionProfile(bandwidth: down, delay: downDelay, loss: Percentage(loss * 100))
    profile.uplink = DirectionProfile(bandwidth: up, delay: upDelay)
    return profile
}
