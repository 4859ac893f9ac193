import LinkProfiles
import Testing

@testable import LinkModel

/// What the link tells a pump about a flow's next release, which decides whether the pump holds released bytes
/// to write them together: nothing once nothing is on its way, and never later than the real next release.
@Suite(.timeLimit(.minutes(5)))
struct NextReleaseTests {
    /// A 1 Gbit/s link whose bucket holds one segment, so segments leave one by one from the start, sent one by
    /// one unless `units`.
    private func gigabit(oneWay: Duration, units: Bool = false) -> StreamLink {
        let forward = DirectionProfile(
            bandwidth: .gbps(1), delay: oneWay, queue: ByteCount(bytes: 4 << 20),
            burst: ByteCount(bytes: TCPSender.mss))
        return StreamLink(
            side: .acceptor, profile: forward, reverse: DirectionProfile(delay: oneWay),
            settings: TCPSettings(segmentationOffload: units), seed: 1)
    }

    /// Writes `size` bytes into `flow` as its send buffer takes them and runs the model event by event until they
    /// are all released, noting each release with the link's answer to `nextRelease(of:)` right after it.
    private func releases(_ size: Int, over link: StreamLink, flow: StreamFlow) -> [(
        at: Instant, bytes: Int, next: Instant?
    )] {
        var result: [(at: Instant, bytes: Int, next: Instant?)] = []
        var now = Instant.zero
        var written = 0
        for _ in 0..<1_000_000 {
            for changed in link.advance(to: now) where changed === flow {
                let bytes = changed.takeDeliverable(at: now)
                if bytes > 0 { result.append((now, bytes, link.nextRelease(of: flow))) }
            }
            while written < size && link.canAccept(flow) {
                let chunk = min(64 * 1024, size - written)
                link.enqueue(chunk, on: flow, at: now)
                written += chunk
            }
            guard let next = link.nextServiceTime else { break }
            now = max(now, next)
        }
        return result
    }

    @Test func aLoneMessageHasNoReleaseAfterIt() {
        let link = gigabit(oneWay: .milliseconds(5))
        let flow = link.makeFlow(at: .zero, emulatingHandshake: false)

        let released = releases(64, over: link, flow: flow)

        #expect(released.map(\.bytes) == [64])
        #expect(released.first?.next == nil)
    }

    @Test func withinABurstTheNextReleaseIsAnnouncedAndTheLastHasNone() {
        let link = gigabit(oneWay: .zero)
        let flow = link.makeFlow(at: .zero, emulatingHandshake: false)

        let released = releases(8 * TCPSender.mss, over: link, flow: flow)

        #expect(released.reduce(0) { $0 + $1.bytes } == 8 * TCPSender.mss)
        #expect(released.count == 8)
        #expect(released.dropLast().allSatisfy { $0.next != nil })
        #expect(released.last?.next == nil)
    }

    @Test func withUnitsABurstArrivesAsOneRelease() {
        let link = gigabit(oneWay: .zero, units: true)
        let flow = link.makeFlow(at: .zero, emulatingHandshake: false)

        let released = releases(8 * TCPSender.mss, over: link, flow: flow)

        #expect(released.map(\.bytes) == [8 * TCPSender.mss])
        #expect(released.last?.next == nil)
    }

    @Test func theAnnouncedReleaseIsNeverLaterThanTheRealOneOverRateAndDelay() {
        let link = gigabit(oneWay: .milliseconds(10))
        let flow = link.makeFlow(at: .zero, emulatingHandshake: false)

        let released = releases(4_000_000, over: link, flow: flow)

        #expect(released.reduce(0) { $0 + $1.bytes } == 4_000_000)
        for (current, following) in zip(released, released.dropFirst()) {
            if let next = current.next {
                #expect(next > current.at)
                #expect(next <= following.at, "announced \(next), released at \(following.at)")
            }
        }
        #expect(released.filter { $0.next != nil }.count > released.count / 2)
    }
}
