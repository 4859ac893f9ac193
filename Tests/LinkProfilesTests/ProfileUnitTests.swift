import LinkModel
import LinkProfiles
import Testing

/// The units each kind of value accepts, and what they are worth.
@Suite(.timeLimit(.minutes(5)))
struct ProfileUnitTests {
    private func downlink(_ line: String) throws -> DirectionProfile {
        try Profile(parsing: line).downlink
    }

    @Test(arguments: [
        ("250 µs", Duration.microseconds(250)), ("250 μs", .microseconds(250)), ("250 us", .microseconds(250)),
        ("400 ms", .milliseconds(400)), ("1.5 s", .milliseconds(1500)), ("400ms", .milliseconds(400)),
        ("0.25 ms", .microseconds(250)), ("2 s", .seconds(2)), ("0 ms", .zero), ("75 ns", .nanoseconds(75)),
    ])
    func durations(text: String, value: Duration) throws {
        #expect(try downlink("delay = \(text)").delay == value)
    }

    @Test(arguments: [
        ("9600 bit/s", 9_600.0), ("9600 bps", 9_600), ("780 kbit/s", 780_000), ("780 Kbit/s", 780_000),
        ("780 kbps", 780_000), ("1.44 Mbit/s", 1_440_000), ("50 Mbps", 50_000_000), ("1 Gbit/s", 1e9),
        ("2.5 Gbps", 2.5e9), ("100 B/s", 800), ("1 KB/s", 8_000), ("1 kB/s", 8_000), ("1.5 MB/s", 12_000_000),
        ("1Mbit/s", 1_000_000),
    ])
    func rates(text: String, bitsPerSecond: Double) throws {
        #expect(try downlink("bandwidth = \(text)").bandwidth == BitRate(bitsPerSecond: bitsPerSecond))
    }

    @Test(arguments: [
        ("1500 B", 1_500), ("64 KB", 64_000), ("64 kB", 64_000), ("2 MB", 2_000_000), ("64 KiB", 65_536),
        ("1.5 MiB", 1_572_864), ("100 packets", 150_000), ("1 packet", 1_500), ("10packets", 15_000),
    ])
    func byteSizes(text: String, bytes: Int) throws {
        #expect(try downlink("queue = \(text)").queue == ByteCount(bytes: bytes))
        #expect(try downlink("burst = \(text)").burst == ByteCount(bytes: bytes))
    }

    @Test(arguments: [("0 %", 0.0), ("0.1 %", 0.1), ("10%", 10), ("100 %", 100)])
    func percentages(text: String, percent: Double) throws {
        #expect(try downlink("loss = \(text)").loss == Percentage(percent))
    }

    @Test func megabytesAreNotMegabits() throws {
        #expect(try downlink("bandwidth = 1 MB/s").bandwidth == .mbps(8))
        #expect(try downlink("bandwidth = 1 Mbit/s").bandwidth == .mbps(1))
    }

    @Test func decimalsAreExactInTheUnitsPowerOfTen() throws {
        #expect(try downlink("bandwidth = 1.44 Mbit/s").bandwidth?.bitsPerSecond == 1_440_000)
        #expect(try downlink("bandwidth = 8.1 Mbit/s").bandwidth?.bitsPerSecond == 8_100_000)
        #expect(try downlink("delay = 281.25 ms").delay == .microseconds(281_250))
    }
}
