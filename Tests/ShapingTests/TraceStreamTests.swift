import Testing
import LinkConditioner

/// A TCP stream's link direction follows a capacity trace.
struct TraceStreamTests {
    @Test func streamBytesLeaveAtTheTracesOpportunities() throws {
        var profile = DirectionProfile(queue: .mib(16))
        profile.trace = try DeliveryTrace(parsing: Array("1\n1\n2\n10\n".utf8), name: "t")
        let link = LinkDirection(profile: profile, roundTrip: .zero, seed: 1)
        let flow = link.makeFlow()

        link.enqueue(600_000, on: flow, at: .zero)
        let deliveries = link.schedule(of: [flow])[0]

        // Four 1500-byte opportunities per 10 ms: 600 000 bytes take 100 loops, the last ending at 1 s.
        #expect(total(deliveries) == 600_000)
        #expect(deliveries.last!.at == .s(1))
    }

    @Test func anIdleStreamWastesTheTracesOpportunities() throws {
        var profile = DirectionProfile()
        profile.trace = try DeliveryTrace(parsing: Array("5\n10\n".utf8), name: "t")
        let link = LinkDirection(profile: profile, roundTrip: .zero, seed: 1)
        let flow = link.makeFlow()
        link.enqueue(1500, on: flow, at: .zero)
        _ = link.schedule(of: [flow])

        link.enqueue(3000, on: flow, at: .ms(7))
        let later = link.schedule(of: [flow])[0]

        #expect(later.last!.at == .ms(15))
    }
}
