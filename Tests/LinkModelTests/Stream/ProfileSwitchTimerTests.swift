import LinkProfiles
import Testing

@testable import LinkModel

/// What a live profile switch does to a flow's retransmission timer on its link, in virtual time: the flow
/// retries one timeout after the switch rather than waiting out the backoff the old path made it build up.
@Suite(.timeLimit(.minutes(5)))
struct ProfileSwitchTimerTests {
    @Test func aProfileSwitchRestartsAFlowsBackedOffRetransmissionTimerAtOneTimeout() throws {
        let alive = DirectionProfile(delay: .milliseconds(10))
        var dead = alive
        dead.loss = Percentage(100)
        let link = StreamLink(side: .acceptor, profile: dead, reverse: alive, settings: TCPSettings(), seed: 1)
        let flow = link.makeFlow(at: .zero, emulatingHandshake: false)
        link.enqueue(1, on: flow, at: .zero)
        var thirdTimeoutAt: Instant?
        for _ in 0..<1_000 {
            guard let next = link.nextServiceTime else { break }
            _ = link.advance(to: next)
            if flow.sender.timeouts == 3 {
                thirdTimeoutAt = next
                break
            }
        }
        let backedOffAt = try #require(thirdTimeoutAt)
        let rto = flow.sender.timer.rto
        let switchAt = backedOffAt + .milliseconds(100)
        _ = link.advance(to: switchAt)
        let deadlineBefore = flow.sender.nextTimer

        link.update(profile: alive, reverse: alive, settings: TCPSettings(), now: switchAt)

        #expect(deadlineBefore == backedOffAt + rto * 8, "three timeouts back the timer off to 8 · rto")
        #expect(flow.sender.nextTimer == switchAt + rto)
    }
}
