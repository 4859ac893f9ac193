import LinkProfiles
import Testing

@testable import LinkModel

/// What a rate counts (`bandwidth.counts`): under `frames` every packet costs its Ethernet frame, as netem, tbf and
/// htb charge it; under `payload`, the default, only the bytes the application wrote.
@Suite(.timeLimit(.minutes(5)))
struct RateAccountingTests {
    private static let rate = BitRate.mbps(10)

    /// Seconds `bytes` take to serialise at `rate`.
    private static func seconds(_ bytes: Int) -> Double { Double(bytes) * 8 / rate.bitsPerSecond }

    /// A 10 Mbit/s direction with no burst credit and a queue no transfer here fills, so the bottleneck is busy
    /// from the first segment to the last and nothing is lost.
    private static func direction(_ accounting: RateAccounting, delay: Duration = .milliseconds(1)) -> DirectionProfile
    {
        var profile = DirectionProfile(bandwidth: rate, delay: delay, queue: .mib(16), burst: ByteCount(bytes: 0))
        profile.accounting = accounting
        return profile
    }

    /// Seconds from the first write until the receiver holds all of `count` full segments.
    private func streamSeconds(_ count: Int, _ accounting: RateAccounting) throws -> Double {
        let link = StreamLink(
            side: .acceptor, profile: Self.direction(accounting), reverse: DirectionProfile(delay: .milliseconds(1)),
            settings: TCPSettings(), seed: 1)
        let flow = link.makeFlow(at: .zero, emulatingHandshake: false)
        let result = transfer(segments(count), over: link, flow: flow, from: .zero)
        return try #require(result.lastByteAt).secondsSinceZero
    }

    @Test func underFramesFullSegmentsCrossAtOneFullFrameEach() throws {
        let count = 1_000

        let elapsed = try streamSeconds(count, .frames)

        // 1000 frames of 1514 bytes at 10 Mbit/s are 1.2112 s on the wire, then 1 ms of propagation.
        let expected = Self.seconds(count * 1514) + 0.001
        #expect(abs(elapsed - expected) < 0.002, "took \(elapsed) s, expected \(expected) s")
    }

    @Test func underPayloadTheSameSegmentsTake1448Of1514OfThatTime() throws {
        let count = 1_000

        let payload = try streamSeconds(count, .payload)
        let frames = try streamSeconds(count, .frames)

        #expect(abs(payload - (Self.seconds(segments(count)) + 0.001)) < 0.002, "took \(payload) s")
        let ratio = (payload - 0.001) / (frames - 0.001)
        #expect(abs(ratio - 1448.0 / 1514.0) < 0.002, "payload/frames time ratio \(ratio)")
    }

    @Test func payloadIsTheDefaultAndChargesNothingBeyondTheSegment() {
        #expect(DirectionProfile().accounting == .payload)
        #expect(RateAccounting.payload.overhead(tcpSegments: 45) == 0)
        #expect(RateAccounting.frames.overhead(tcpSegments: 3) == 3 * 66)
    }

    /// Offers `count` datagrams of `size` bytes at once and returns when the last one is delivered.
    private func lastDatagramSeconds(_ count: Int, size: Int, _ accounting: RateAccounting, kind: DatagramKind)
        throws -> Double
    {
        let link = DatagramLink(profile: Self.direction(accounting, delay: .zero), seed: 1, kind: kind)
        let flow = link.makeFlow()
        for _ in 0..<count { #expect(link.enqueue(size, on: flow, at: .zero).isAccepted) }
        var last = Instant.zero
        while let next = link.nextServiceTime {
            _ = link.advance(to: next)
            for delivery in flow.takeDeliverableDatagrams(at: next) where delivery.copies > 0 { last = next }
        }
        return last.secondsSinceZero
    }

    @Test func underFramesADatagramCostsItsPayloadPlusUDPIPAndEthernetHeaders() throws {
        let frames = try lastDatagramSeconds(100, size: 1200, .frames, kind: .udpPayload)
        let payload = try lastDatagramSeconds(100, size: 1200, .payload, kind: .udpPayload)

        // 100 datagrams of 1200 bytes are 100 frames of 1242 bytes (14 + 20 + 8 bytes of headers each).
        #expect(abs(frames - Self.seconds(100 * 1242)) < 1e-6, "took \(frames) s")
        #expect(abs(payload - Self.seconds(100 * 1200)) < 1e-6, "took \(payload) s")
    }

    @Test func anIPPacketFromExecGainsOnlyItsEthernetHeader() throws {
        let frames = try lastDatagramSeconds(100, size: 1500, .frames, kind: .ipPacket)

        #expect(abs(frames - Self.seconds(100 * 1514)) < 1e-6, "took \(frames) s")
    }

    /// Datagrams of 100 bytes a stopped link (zero rate) accepts into a 14 200-byte queue: one goes on the wire
    /// and never leaves, the rest wait.
    private func acceptedByStoppedLink(_ accounting: RateAccounting) -> Int {
        var profile = DirectionProfile(bandwidth: BitRate(bitsPerSecond: 0), queue: ByteCount(bytes: 14_200))
        profile.accounting = accounting
        let link = DatagramLink(profile: profile, seed: 1)
        let flow = link.makeFlow()
        return (0..<200).filter { _ in link.enqueue(100, on: flow, at: .zero).isAccepted }.count
    }

    @Test func underFramesAByteQueueLimitCountsFrames() {
        // 14 200 bytes hold 100 frames of 142 bytes, or 142 payloads of 100 bytes; one more is on the wire.
        #expect(acceptedByStoppedLink(.frames) == 101)
        #expect(acceptedByStoppedLink(.payload) == 143)
    }

    @Test func underFramesATraceOpportunityCarriesOneFullFrame() {
        var frames = DirectionShape()
        frames.accounting = .frames
        #expect(frames.accounting.traceOpportunityBytes == 1514)
        #expect(DirectionShape().accounting.traceOpportunityBytes == 1500)

        // One full segment's frame per opportunity: two segments take the first two opportunities, no third.
        let trace = DeliveryTrace(name: "test", validated: [1, 2, 3])
        var serializer = TraceSerializer(trace: trace, opportunityBytes: 1514, origin: .zero)
        #expect(serializer.transmissionEnd(bytes: 1514, startingAt: .zero) == .ms(1))
        #expect(serializer.transmissionEnd(bytes: 1514, startingAt: .ms(1)) == .ms(2))
    }
}

extension Instant {
    /// Seconds since `Instant.zero`.
    fileprivate var secondsSinceZero: Double { Double(nanoseconds) / 1e9 }
}
