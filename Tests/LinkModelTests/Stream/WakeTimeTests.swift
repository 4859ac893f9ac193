import LinkProfiles
import Testing

@testable import LinkModel

/// A relay runs the model at `nextWakeTime` rather than at every event: the next arrival, or another event plus
/// the least propagation delay. Catching up there must release the same bytes at the same instants.
@Suite(.timeLimit(.minutes(5)))
struct WakeTimeTests {
    /// Every release of `size` bytes written at once over `profile`, running the model at each instant `next`
    /// names.
    private func releases(
        over profile: DirectionProfile, size: Int, next: (StreamLink) -> Instant?
    ) -> (releases: [(at: Instant, bytes: Int)], runs: Int) {
        let link = StreamLink(
            side: .acceptor, profile: profile, reverse: DirectionProfile(delay: profile.delay, loss: profile.loss),
            settings: TCPSettings(), seed: 3)
        let flow = link.makeFlow(at: .zero, emulatingHandshake: false)
        link.enqueue(size, on: flow, at: .zero)
        var result: [(at: Instant, bytes: Int)] = []
        var delivered = 0
        var runs = 0
        var now = Instant.zero
        for _ in 0..<1_000_000 {
            runs += 1
            for changed in link.advance(to: now) where changed === flow {
                let bytes = changed.takeDeliverable(at: now)
                if bytes > 0 { result.append((now, bytes)) }
                delivered += bytes
            }
            guard delivered < size, let at = next(link) else { break }
            now = max(now, at)
        }
        return (result, runs)
    }

    @Test(arguments: [
        DirectionProfile(bandwidth: .gbps(1), delay: .milliseconds(5), queue: ByteCount(bytes: 4 << 20)),
        DirectionProfile(bandwidth: .mbps(10), delay: .milliseconds(20), loss: Percentage(2)),
        DirectionProfile(bandwidth: .mbps(100), delay: .milliseconds(10), jitter: .milliseconds(2)),
    ])
    func runningAtWakeTimesReleasesTheSameBytesAtTheSameInstants(profile: DirectionProfile) {
        let everyEvent = releases(over: profile, size: 2_000_000) { $0.nextServiceTime }
        let atWakes = releases(over: profile, size: 2_000_000) { $0.nextWakeTime }

        #expect(atWakes.releases.count > 10)
        #expect(atWakes.releases.elementsEqual(everyEvent.releases) { $0.at == $1.at && $0.bytes == $1.bytes })
        #expect(atWakes.runs < everyEvent.runs)
    }

    @Test func handledArrivalsAreForgottenOnALinkWithoutDelay() {
        let link = StreamLink(
            side: .acceptor, profile: DirectionProfile(bandwidth: .gbps(1)), reverse: DirectionProfile(),
            settings: TCPSettings(), seed: 1)
        let flow = link.makeFlow(at: .zero, emulatingHandshake: false)
        link.enqueue(2_000_000, on: flow, at: .zero)
        var now = Instant.zero

        for _ in 0..<100_000 {
            _ = link.advance(to: now)
            _ = flow.takeDeliverable(at: now)
            guard let next = link.nextWakeTime else { break }
            now = max(now, next)
        }

        #expect(link.counters.bytesDelivered == 2_000_000)
        #expect(link.arrivalEntries == 0)
    }

    @Test func withoutDelayTheWakeIsTheNextEvent() {
        let link = StreamLink(
            side: .acceptor, profile: DirectionProfile(bandwidth: .mbps(10)), reverse: DirectionProfile(),
            settings: TCPSettings(), seed: 1)
        let flow = link.makeFlow(at: .zero, emulatingHandshake: false)

        link.enqueue(100_000, on: flow, at: .zero)

        #expect(link.nextWakeTime == link.nextServiceTime)
    }
}
