import LinkProfiles
import Testing

@testable import LinkModel

/// The model against the real Linux TCP numbers in NOTES §7 (Debian 12's kernel 6.1, CUBIC, over netem under
/// qemu; medians of 3), computed in virtual time so the results do not depend on the machine: time to last byte
/// within ±10 % (issue 38), bulk throughput under loss within ±25 % (three seeds of a bimodal figure). netem's rate there counted frames, so the
/// links count frames too (`bandwidth.counts = frames`).
@Suite(.timeLimit(.minutes(5)))
struct RealTCPReferenceTests {
    static let tenMegabit = countingFrames(
        linkProfile(down: .mbps(10), up: .mbps(10), downDelay: .milliseconds(25), upDelay: .milliseconds(25)))
    static let lte = countingFrames(
        linkProfile(down: .mbps(50), up: .mbps(10), downDelay: .milliseconds(50), upDelay: .milliseconds(65)))
    static let threeG = countingFrames(
        linkProfile(down: .kbps(780), up: .kbps(330), downDelay: .milliseconds(100), upDelay: .milliseconds(100)))

    static func countingFrames(_ profile: Profile) -> Profile {
        var profile = profile
        profile.downlink.accounting = .frames
        profile.uplink.accounting = .frames
        return profile
    }

    /// The links by name: a test argument names its link, since swift-testing on Linux fails printing a whole
    /// profile as an argument.
    static let links = [
        "10 Mbit/s, 25 ms each way": tenMegabit, "LTE 50/10 Mbit/s, 50/65 ms": lte,
        "3G 780/330 kbit/s, 100 ms each way": threeG,
    ]

    @Test(arguments: [
        ("10 Mbit/s, 25 ms each way", 10_000, 113.0),
        ("10 Mbit/s, 25 ms each way", 100_000, 260.0),
        ("10 Mbit/s, 25 ms each way", 1_000_000, 1021.0),
        ("LTE 50/10 Mbit/s, 50/65 ms", 100_000, 479.0),
        ("LTE 50/10 Mbit/s, 50/65 ms", 500_000, 832.0),
        ("LTE 50/10 Mbit/s, 50/65 ms", 2_000_000, 1126.0),
        ("3G 780/330 kbit/s, 100 ms each way", 10_000, 517.0),
        ("3G 780/330 kbit/s, 100 ms each way", 100_000, 1561.0),
    ])
    func aFetchFromConnectToLastByteIsWithinATenthOfLinux(link: String, size: Int, realMilliseconds: Double)
        throws
    {
        let profile = try #require(Self.links[link])
        let connection = VirtualConnection(profile: profile)

        let lastByte = connection.fetch(response: size, at: .zero)

        let model = (lastByte.map { $0 - .zero } ?? .seconds(3600)).seconds * 1000
        #expect(
            abs(model / realMilliseconds - 1) <= 0.1,
            "\(link), \(size) bytes: model \(model) ms, Linux \(realMilliseconds) ms")
    }

    @Test func aSecondRequestAfterTwoIdleSecondsPaysSlowStartAgainLikeLinux() {
        let connection = VirtualConnection(profile: Self.tenMegabit)
        let first = connection.fetch(response: 100_000, at: .zero) ?? .never
        let asked = first + .seconds(2)
        connection.idle(until: asked)

        let lastByte = connection.fetch(response: 100_000, at: asked) ?? .never

        let model = (lastByte - asked).seconds * 1000
        #expect(abs(model / 209 - 1) <= 0.1, "model \(model) ms, Linux 209 ms")
    }

    @Test(arguments: [(0.005, 9.49), (0.02, 7.26)])
    func bulkThroughputUnderLossAtTenMillisecondsIsWithinAQuarterOfLinux(loss: Double, realMegabits: Double) {
        var rates: [Double] = []
        for seed in UInt64(1)...3 {
            let link = modelLink(oneWay: .milliseconds(5), bandwidth: .mbps(10), loss: loss, seed: seed)
            let flow = link.makeFlow(at: .zero, emulatingHandshake: false)
            let result = transfer(100_000_000, over: link, flow: flow, from: .zero, limit: .seconds(20))
            let bytes = result.releases.filter { $0.at <= .ms(20_000) }.reduce(0) { $0 + $1.bytes }
            rates.append(Double(bytes) * 8 / 20 / 1e6)
            #expect(flow.transport.timeouts == 0, "Linux repaired these losses without a timeout")
        }
        let median = rates.sorted()[1]

        #expect(abs(median / realMegabits - 1) <= 0.25, "model \(median) Mbit/s, Linux \(realMegabits) Mbit/s")
    }

    @Test func bulkThroughputFallsWithTheRoundTripAsMathisPredicts() {
        func throughput(roundTrip: Int64) -> Double {
            let link = modelLink(oneWay: .milliseconds(roundTrip / 2), bandwidth: .mbps(10), loss: 0.005, seed: 7)
            let flow = link.makeFlow(at: .zero, emulatingHandshake: false)
            let result = transfer(100_000_000, over: link, flow: flow, from: .zero, limit: .seconds(20))
            return Double(result.releases.filter { $0.at <= .ms(20_000) }.reduce(0) { $0 + $1.bytes }) * 8 / 20
        }

        let at50 = throughput(roundTrip: 50)
        let at200 = throughput(roundTrip: 200)

        // Mathis: MSS / (RTT · √(2p/3)) = 4.0 Mbit/s at 50 ms and 1.0 at 200 ms for p = 0.5 %. CUBIC grows
        // independently of the RTT, so on the long path it stays above Reno's 1/RTT.
        #expect(abs(at50 / 4.0e6 - 1) <= 0.25, "\(at50 / 1e6) Mbit/s at 50 ms")
        #expect(at200 < at50 / 1.5, "\(at200 / 1e6) Mbit/s at 200 ms against \(at50 / 1e6) at 50 ms")
    }
}
