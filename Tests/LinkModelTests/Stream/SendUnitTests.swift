import LinkProfiles
import Testing

@testable import LinkModel

/// Senders send new data in units of several segments, sized as Linux sizes its TSO packets, and the link
/// carries a unit as one packet; below 1448 bytes per millisecond of bottleneck every segment travels alone.
@Suite(.timeLimit(.minutes(5)))
struct SendUnitTests {
    /// A sender with `cwnd` and one round-trip sample of `srtt`, in congestion avoidance, with a receive window
    /// larger than any unit.
    private func sender(cwnd: Int, srtt: Duration, settings: TCPSettings = TCPSettings()) -> TCPSender {
        var sender = TCPSender(settings: settings, receiveWindow: 1 << 22)
        sender.timer.sample(srtt, sndUna: 0, sndNxt: 0)
        sender.window.cwnd = cwnd
        sender.window.ssthresh = cwnd
        return sender
    }

    @Test func aUnitHoldsAboutAMillisecondOfThePacingRate() {
        // 120 % of 100 segments per 10 ms is 17.4 MB/s: 16 968 bytes a 1.024 ms, 11 full segments.
        let sender = sender(cwnd: 100, srtt: .milliseconds(10))

        #expect(sender.unitSegments(largest: 45) == 11)
    }

    @Test func slowStartPacesAtTwiceTheWindowPerRoundTrip() {
        var sender = sender(cwnd: 100, srtt: .milliseconds(10))
        sender.window.ssthresh = CongestionWindow.infinite

        #expect(sender.unitSegments(largest: 45) == 19)
    }

    @Test func aUnitNeverExceedsSixtyFourKilobytesNorWhatTheLinkAllows() {
        let sender = sender(cwnd: 10_000, srtt: .milliseconds(10))

        #expect(sender.unitSegments(largest: 45) == 45)
        #expect(sender.unitSegments(largest: 8) == 8)
    }

    @Test func withoutSegmentationOffloadEveryUnitIsOneSegment() {
        let sender = sender(
            cwnd: 10_000, srtt: .milliseconds(10), settings: TCPSettings(segmentationOffload: false))

        #expect(sender.unitSegments(largest: 45) == 1)
    }

    @Test func aWindowLimitedSenderWaitsForTheNextAckRatherThanSendASmallUnit() {
        // Units of 45 at a 2 ms round trip; the whole window of 100 leaves at once as 45, 45 and 10.
        var sender = sender(cwnd: 100, srtt: .milliseconds(2))
        sender.write(200 * TCPSender.mss, now: .zero)
        var sent: [Int] = []
        while let unit = sender.nextSegment(now: .zero, largestUnit: 45) { sent.append(unit.length / TCPSender.mss) }
        #expect(sent == [45, 45, 10])

        // An ACK of 10 segments a round trip's half later, in the same jiffy: room for 10 is less than a unit and
        // than a third of the window, and the next ACK is due, so nothing goes.
        sender.receive(
            TCPAck(cumulative: Int64(10 * TCPSender.mss), window: 1 << 22), now: Instant(nanoseconds: 1_500_000))
        let afterFirst = sender.nextSegment(now: Instant(nanoseconds: 1_500_000), largestUnit: 45)

        // The next ACK frees 35 more: room for a whole unit, which goes.
        sender.receive(
            TCPAck(cumulative: Int64(45 * TCPSender.mss), window: 1 << 22), now: Instant(nanoseconds: 1_600_000))
        let afterSecond = sender.nextSegment(now: Instant(nanoseconds: 1_600_000), largestUnit: 45)

        #expect(afterFirst == nil)
        #expect(afterSecond.map { $0.length / TCPSender.mss } == 45)
    }

    @Test func theLinkLetsAUnitHoldWhatItsBottleneckSerialisesInAMillisecond() {
        #expect(StreamLink.Emulation.largestUnit(for: DirectionShape(bandwidth: .gbps(1))) == 45)
        #expect(StreamLink.Emulation.largestUnit(for: DirectionShape(bandwidth: .mbps(100))) == 8)
        #expect(StreamLink.Emulation.largestUnit(for: DirectionShape(bandwidth: .mbps(10))) == 1)
        #expect(StreamLink.Emulation.largestUnit(for: DirectionShape(delay: .milliseconds(5))) == 45)
    }

    @Test func underAnActiveQueueEverySegmentTravelsAlone() {
        var shape = DirectionShape(bandwidth: .gbps(1))
        shape.queueManagement = QueueManagement(FQCoDelQueue.self)

        #expect(StreamLink.Emulation.largestUnit(for: shape) == 1)
    }

    @Test func onATenMegabitLinkUnitsChangeNoRelease() {
        let profile = DirectionProfile(bandwidth: .mbps(10), delay: .milliseconds(25), loss: Percentage(1))

        let inUnits = releases(over: profile, settings: TCPSettings())
        let oneByOne = releases(over: profile, settings: TCPSettings(segmentationOffload: false))

        #expect(inUnits.count > 100)
        #expect(inUnits.elementsEqual(oneByOne) { $0.at == $1.at && $0.bytes == $1.bytes })
    }

    @Test func aQueueWithoutRoomForAWholeUnitTakesTheSegmentsThatFit() {
        let profile = DirectionProfile(
            bandwidth: .gbps(1), queue: ByteCount(bytes: 15 * TCPSender.mss), burst: ByteCount(bytes: TCPSender.mss))
        let link = StreamLink(
            side: .acceptor, profile: profile, reverse: DirectionProfile(), settings: TCPSettings(), seed: 1)
        let flow = link.makeFlow(at: .zero, emulatingHandshake: false)
        // A window of 40 at a short round trip: units of 22 segments (half the 64 KiB receive window).
        flow.model.sender.timer.sample(.milliseconds(1), sndUna: 0, sndNxt: 0)
        flow.model.sender.window.cwnd = 40
        flow.model.sender.window.ssthresh = 40

        link.enqueue(40 * TCPSender.mss, on: flow, at: .zero)

        // The first unit's first segment leaves at once (the bucket's one segment), its second goes onto the
        // wire and 15 more fill the queue; the other 23 of the window find it full.
        #expect(link.counters.transmissions == 40)
        #expect(link.counters.segmentsLost == 23)
    }

    /// Every release of a 1 MB transfer over `profile`, in order.
    private func releases(over profile: DirectionProfile, settings: TCPSettings) -> [(at: Instant, bytes: Int)] {
        let link = StreamLink(
            side: .acceptor, profile: profile, reverse: DirectionProfile(delay: profile.delay), settings: settings,
            seed: 5)
        let flow = link.makeFlow(at: .zero, emulatingHandshake: false)
        let size = 1_000_000
        var result: [(at: Instant, bytes: Int)] = []
        var written = 0
        var delivered = 0
        var now = Instant.zero
        for _ in 0..<1_000_000 {
            for changed in link.advance(to: now) where changed === flow {
                let bytes = changed.takeDeliverable(at: now)
                if bytes > 0 { result.append((now, bytes)) }
                delivered += bytes
            }
            while written < size && link.canAccept(flow) {
                let chunk = min(64 * 1024, size - written)
                link.enqueue(chunk, on: flow, at: now)
                written += chunk
            }
            guard delivered < size, let next = link.nextServiceTime else { break }
            now = max(now, next)
        }
        return result
    }
}
