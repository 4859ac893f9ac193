import LinkModel
import LinkProfiles
import Testing

/// Writing a profile back in the file format, and its one-line summary.
@Suite(.timeLimit(.minutes(5)))
struct ProfileRenderingTests {
    @Test func rendersEveryKeyWithBothDirectionsExplicit() throws {
        let edge = try #require(Profile.builtIn(named: "edge"))
        #expect(
            edge.rendered == """
                description = Edge (Apple Network Link Conditioner)
                downlink.bandwidth = 240 kbit/s
                downlink.delay = 400 ms
                downlink.jitter = 0 ms
                downlink.loss = 0 %
                downlink.queue = 256 KiB
                downlink.burst = auto
                uplink.bandwidth = 200 kbit/s
                uplink.delay = 440 ms
                uplink.jitter = 0 ms
                uplink.loss = 0 %
                uplink.queue = 256 KiB
                uplink.burst = auto
                dns.delay = 0 ms
                fault = none
                seed = random
                exclude = none

                """)
    }

    @Test(arguments: [
        (BitRate.kbps(780), "780 kbit/s"), (.mbps(50), "50 Mbit/s"), (.kbps(1440), "1.44 Mbit/s"),
        (.gbps(2.5), "2.5 Gbit/s"),
        (BitRate(bitsPerSecond: 300), "300 bit/s"), (.kbps(8100), "8.1 Mbit/s"),
        (BitRate(bitsPerSecond: 1234.5), "1.2345 kbit/s"),
    ])
    func ratesUseTheLargestReadableUnit(rate: BitRate, text: String) throws {
        let profile = Profile(downlink: DirectionProfile(bandwidth: rate))
        #expect(profile.rendered.contains("downlink.bandwidth = \(text)\n"))
    }

    @Test(arguments: [
        (Duration.milliseconds(100), "100 ms"), (.milliseconds(1500), "1.5 s"), (.microseconds(250), "250 µs"),
        (.microseconds(281_250), "281.25 ms"), (.seconds(3), "3 s"), (.nanoseconds(1_234_567), "1234.567 µs"),
        (.nanoseconds(75), "75 ns"), (.zero, "0 ms"),
    ])
    func durationsUseTheLargestReadableUnit(duration: Duration, text: String) {
        #expect(Profile(dnsDelay: duration).rendered.contains("dns.delay = \(text)\n"))
    }

    @Test(arguments: [
        (ByteCount.kib(64), "64 KiB"), (.mib(1), "1 MiB"), (ByteCount(bytes: 150_000), "150 KB"),
        (ByteCount(bytes: 1500), "1500 B"), (ByteCount(bytes: 1_000_000), "1 MB"), (ByteCount(bytes: 7), "7 B"),
    ])
    func sizesUseAUnitThatDividesThemExactly(size: ByteCount, text: String) {
        #expect(Profile(uplink: DirectionProfile(queue: size)).rendered.contains("uplink.queue = \(text)\n"))
    }

    /// A queue renders in the unit it counts, so it reads back the same: bytes written as packets would make the
    /// bottleneck count packets, and 512 packets written as 750 KiB would make it count bytes.
    @Test(arguments: [
        ("queue = 3 KB\n", "uplink.queue = 3 KB\n", QueueLimit.bytes(3000)),
        ("queue = 512 packets\n", "uplink.queue = 512 packets\n", QueueLimit.packets(512)),
    ])
    func aQueueRendersInTheUnitItCountsAndReadsBackTheSame(text: String, line: String, limit: QueueLimit) throws {
        let profile = try Profile(parsing: text, name: "queue")

        let again = try Profile(parsing: profile.rendered, name: "queue")

        #expect(profile.rendered.contains(line))
        #expect(again == profile)
        #expect(again.uplink.queueLimit == limit)
    }

    @Test func aQueueOfAFractionOfPacketsHoldsWholePackets() throws {
        let profile = try Profile(parsing: "queue = 2.5 packets\n", name: "fraction")

        let again = try Profile(parsing: profile.rendered, name: "fraction")

        #expect(profile.uplink.queue == ByteCount(bytes: 3000))
        #expect(profile.uplink.queueLimit == .packets(2))
        #expect(again == profile)
    }

    @Test(arguments: Profile.builtIns)
    func everyBuiltInSurvivesARoundTrip(profile: Profile) throws {
        #expect(try Profile(parsing: profile.rendered, name: profile.name) == profile)
    }

    @Test func unusualValuesSurviveARoundTrip() throws {
        let profile = Profile(
            name: "odd", description: "  Lab #3 \"β\"\nsecond line\t",
            uplink: DirectionProfile(
                bandwidth: BitRate(bitsPerSecond: 1234.5678), delay: .nanoseconds(1_000_000_001),
                jitter: .nanoseconds(3), loss: Percentage(0.00001), queue: ByteCount(bytes: 12_345),
                burst: ByteCount(bytes: 3000)),
            downlink: DirectionProfile(
                bandwidth: BitRate(bitsPerSecond: 1e12 / 3), loss: Percentage(33.333333333333336)),
            dnsDelay: .microseconds(1), fault: .refuse, seed: UInt64.max)
        #expect(try Profile(parsing: profile.rendered, name: "odd") == profile)
    }

    @Test func theSummaryGivesRatesDelayAndLoss() throws {
        #expect(Profile.builtIn(named: "3g")?.summary == "780 kbit/s down, 330 kbit/s up, 100 ms delay, 0 % loss")
    }

    @Test func theSummaryShowsDownThenUpWhenDirectionsDiffer() {
        #expect(
            Profile.builtIn(named: "edge")?.summary == "240 kbit/s down, 200 kbit/s up, 400 ms/440 ms delay, 0 % loss")
    }

    @Test func theSummaryShowsDnsDelayAndNothingUnlimited() {
        #expect(
            Profile.builtIn(named: "high-latency-dns")?.summary
                == "unlimited bandwidth, 0 ms delay, 0 % loss, 3 s DNS delay")
    }

    @Test func theSummaryShowsQueueJitterFaultAndSeedOnlyWhenSet() throws {
        #expect(
            Profile.builtIn(named: "generic-bad")?.summary
                == "95 kbit/s down, 95 kbit/s up, 250 ms delay, 2 % loss, queue 100 packets")
        let profile = try Profile(parsing: "jitter = 5 ms\nfault = blackhole\nseed = 7\nburst = 10 KB")
        #expect(
            profile.summary
                == "unlimited bandwidth, 0 ms delay, ±5 ms jitter, 0 % loss, burst 10 KB, fault blackhole, seed 7")
    }
}
