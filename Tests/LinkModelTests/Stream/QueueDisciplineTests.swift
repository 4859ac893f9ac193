import LinkProfiles
import Testing

@testable import LinkModel

/// The bottleneck's queue discipline shapes what TCP flows see: a drop-tail FIFO lets a bulk download build a
/// standing queue that every other flow waits behind; CoDel drops until the queue's sojourn time is near its 5 ms
/// target; fq_codel also serves a sparse flow ahead of the bulk one.
@Suite(.timeLimit(.minutes(5)))
struct QueueDisciplineTests {
    /// How long a 2 kB reply takes behind a bulk download that has run for 10 s, at 10 Mbit/s, 10 ms each way.
    private func replyLatency(behind discipline: any NamedQueueDiscipline.Type) -> Duration {
        var forward = DirectionProfile(bandwidth: .mbps(10), delay: .milliseconds(10))
        forward.queueManagement = QueueManagement(discipline)
        let link = StreamLink(
            side: .acceptor, profile: forward, reverse: DirectionProfile(delay: .milliseconds(10)),
            settings: TCPSettings(), seed: 4)
        let bulk = link.makeFlow(at: .zero, emulatingHandshake: false)
        let asked = Instant.ms(10_000)
        let reply = link.makeFlow(at: asked, emulatingHandshake: false)
        var replied = 0
        var now = Instant.zero
        while now <= .ms(15_000) {
            for flow in link.advance(to: now) {
                let count = flow.takeDeliverable(at: now)
                if flow === reply {
                    replied += count
                    if replied >= 2_000 { return now - asked }
                }
            }
            while link.canAccept(bulk) { link.enqueue(45 * TCPSender.mss, on: bulk, at: now) }
            if now == asked { link.enqueue(2_000, on: reply, at: now) }
            let next = [link.nextServiceTime, now < asked ? asked : nil].compactMap { $0 }.min()
            guard let next else { break }
            now = max(now, next)
        }
        return .seconds(3600)
    }

    @Test func aFIFOMakesAReplyWaitBehindTheBulkFlowsStandingQueue() {
        let latency = replyLatency(behind: FIFOQueue.self)

        // Up to 256 KiB at 10 Mbit/s (210 ms) of queue, plus the 10 ms delay.
        #expect(latency > .milliseconds(60), "\(latency)")
        #expect(latency < .milliseconds(10 + 210 + 5), "\(latency)")
    }

    @Test func codelKeepsTheQueueNearItsTarget() {
        let latency = replyLatency(behind: CoDelQueue.self)

        #expect(latency < .milliseconds(10 + 5 + 30), "\(latency)")
    }

    @Test func fqCodelServesTheSparseReplyFirst() {
        let latency = replyLatency(behind: FQCoDelQueue.self)

        // Two segments' serialisation at most, then the delay.
        #expect(latency < .milliseconds(10 + 4), "\(latency)")
    }
}

/// A trace replaces the constant rate for TCP flows as it does for datagrams.
@Suite(.timeLimit(.minutes(5)))
struct StreamTraceTests {
    @Test func aStreamOverATraceOfOneOpportunityPerMillisecondMovesAboutTwelveMegabitsPerSecond() throws {
        var forward = DirectionProfile(delay: .milliseconds(10))
        forward.trace = try DeliveryTrace(parsing: Array("1\n".utf8), name: "one-per-ms")
        let link = StreamLink(
            side: .acceptor, profile: forward, reverse: DirectionProfile(delay: .milliseconds(10)),
            settings: TCPSettings(), seed: 1)
        let flow = link.makeFlow(at: .zero, emulatingHandshake: false)

        let result = transfer(3_000_000, over: link, flow: flow, from: .zero)

        // 1500 bytes a millisecond carry 3 MB in 2 s; slow start's first round trips (20 ms each) add a little.
        let elapsed: Duration = (result.lastByteAt ?? .never) - Instant.zero
        #expect(elapsed >= .milliseconds(2_000), "\(elapsed)")
        #expect(elapsed < .milliseconds(2_000 + 200), "\(elapsed)")
    }
}
