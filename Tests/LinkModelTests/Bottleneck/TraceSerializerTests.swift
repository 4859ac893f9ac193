import LinkModel
import LinkProfiles
import Testing

struct TraceSerializerTests {
    private func trace(_ text: String) throws -> DeliveryTrace {
        try DeliveryTrace(parsing: Array(text.utf8), name: "test.trace")
    }

    @Test func eachOpportunityCarriesOneFullSizePacket() throws {
        var serializer = TraceSerializer(trace: try trace("2\n5\n10\n"), origin: .zero)

        let ends = (0..<3).map { _ in serializer.transmissionEnd(bytes: 1500, startingAt: .zero) }

        #expect(ends == [.ms(2), .ms(5), .ms(10)])
    }

    @Test func repeatedLinesSendSeveralPacketsInOneMillisecond() throws {
        var serializer = TraceSerializer(trace: try trace("1\n1\n1\n4\n"), origin: .zero)

        let ends = (0..<4).map { _ in serializer.transmissionEnd(bytes: 1500, startingAt: .zero) }

        #expect(ends == [.ms(1), .ms(1), .ms(1), .ms(4)])
    }

    @Test func smallPacketsShareAnOpportunityWhenAlreadyWaiting() throws {
        var serializer = TraceSerializer(trace: try trace("1\n2\n"), origin: .zero)

        let first = serializer.transmissionEnd(bytes: 500, startingAt: .zero)!
        let second = serializer.transmissionEnd(bytes: 1000, startingAt: first)
        let third = serializer.transmissionEnd(bytes: 100, startingAt: first)

        #expect(first == .ms(1))
        #expect(second == .ms(1))
        #expect(third == .ms(2))
    }

    @Test func largePacketSpansOpportunities() throws {
        var serializer = TraceSerializer(trace: try trace("1\n2\n3\n"), origin: .zero)

        #expect(serializer.transmissionEnd(bytes: 4000, startingAt: .zero) == .ms(3))
    }

    @Test func idleLinkWastesItsOpportunities() throws {
        var serializer = TraceSerializer(trace: try trace("1\n2\n3\n4\n"), origin: .zero)
        _ = serializer.transmissionEnd(bytes: 100, startingAt: .zero)

        let later = serializer.transmissionEnd(bytes: 100, startingAt: .ms(2.5))

        #expect(later == .ms(3))
    }

    @Test func traceRepeatsFromItsLastTimestamp() throws {
        var serializer = TraceSerializer(trace: try trace("3\n10\n"), origin: .s(1))

        let ends = (0..<5).map { _ in serializer.transmissionEnd(bytes: 1500, startingAt: .s(1))! - .s(1) }

        #expect(ends == [3, 10, 13, 20, 23].map { Duration.milliseconds($0) })
    }

    @Test func startingFarLaterSkipsWholeLoops() throws {
        var serializer = TraceSerializer(trace: try trace("3\n10\n"), origin: .zero)

        #expect(
            serializer.transmissionEnd(bytes: 1500, startingAt: .s(100) + .milliseconds(4)) == .s(100)
                + .milliseconds(10))
    }

    @Test func originIsTheFirstPacketsStart() throws {
        var serializer = TraceSerializer(trace: try trace("5\n"))

        #expect(serializer.transmissionEnd(bytes: 1500, startingAt: .s(7)) == .s(7) + .milliseconds(5))
    }

    @Test(arguments: ["lte-driving.down", "subway.up"])
    func replayRateOverALoopIsOpportunitiesTimesPacketSizeOverPeriod(name: String) throws {
        let trace = try #require(DeliveryTrace.builtIn(named: name))
        var bottleneck = Bottleneck(
            discipline: FIFOQueue(limit: .packets(1_000_000)), serializer: TraceSerializer(trace: trace))
        for tag in 0..<(trace.milliseconds.count * 3) {
            _ = bottleneck.enqueue(LinkPacket(flow: 0, bytes: 1500, tag: UInt64(tag)), now: .zero)
        }

        let periodNanoseconds = trace.periodMilliseconds * 1_000_000
        let departures = bottleneck.advance(to: Instant(nanoseconds: periodNanoseconds * 4))
        let secondLoop = departures.filter { event in
            event.at.nanoseconds > periodNanoseconds && event.at.nanoseconds <= 2 * periodNanoseconds
        }

        // One loop carries exactly its opportunities × 1500 bytes: that many 1500-byte packets per period.
        #expect(secondLoop.count == trace.milliseconds.count)
        #expect(departures.last?.at == Instant(nanoseconds: 3 * periodNanoseconds))
    }
}
