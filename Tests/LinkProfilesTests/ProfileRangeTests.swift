import LinkModel
import LinkProfiles
import Testing

/// Values beyond what a link can mean are refused at parse time with the accepted range, before they reach the
/// engine.
@Suite(.timeLimit(.minutes(5)))
struct ProfileRangeTests {
    private func error(_ key: String, _ value: String) -> ProfileError? {
        var profile = Profile.none
        do {
            try profile.set(key, to: value)
            return nil
        } catch {
            return error
        }
    }

    @Test func aBandwidthBelowOneBitPerSecondIsOutOfRange() {
        let error = error("bandwidth", "0.0000001 bit/s")

        #expect(error?.kind == .outOfRange(expected: ProfileRangeTests.expectedRate), "\(String(describing: error))")
        #expect(error?.description.contains("from 1 bit/s to 1000 Gbit/s") == true)
    }

    @Test func aBandwidthAboveATerabitPerSecondIsOutOfRange() {
        #expect(
            error("downlink.bandwidth", "1001 Gbit/s")?.kind == .outOfRange(expected: ProfileRangeTests.expectedRate))
    }

    @Test func theRateRangeEndsAreAccepted() {
        #expect(error("bandwidth", "1 bit/s") == nil)
        #expect(error("bandwidth", "1000 Gbit/s") == nil)
    }

    @Test func aDelayLongerThanAnHourIsOutOfRange() {
        let error = error("delay", "99999999999 s")

        #expect(error?.description.contains("a duration from 0 ms to 3600 s") == true, "\(String(describing: error))")
        #expect(self.error("dns.delay", "3601 s") != nil)
        #expect(self.error("jitter", "3600 s") == nil)
    }

    @Test func aQueueOrBurstBeyondOneGibibyteIsOutOfRange() {
        #expect(error("queue", "1025 MiB")?.description.contains("a size from 1500 B (one packet") == true)
        #expect(error("burst", "99999999999 MB") != nil)
        #expect(error("queue", "1024 MiB") == nil)
    }

    /// A byte queue smaller than one packet drops every full-size packet: the link would carry nothing, silently.
    @Test func aQueueSmallerThanOnePacketIsOutOfRange() {
        let small = error("downlink.queue", "1 B")

        #expect(
            small?.description
                == "\"downlink.queue = 1 B\": out of range: expected a size from 1500 B (one packet: a smaller queue drops every full-size packet) to 1024 MiB, such as \"64 KiB\" or \"100 packets\" (units: B, KB, MB, KiB, MiB, packets)",
            "\(String(describing: small))")
        #expect(error("queue", "1499 B") != nil)
        #expect(error("queue", "1500 B") == nil)
        #expect(error("queue", "1 packet") == nil)
    }

    static let expectedRate =
        "a rate from 1 bit/s to 1000 Gbit/s, such as \"780 kbit/s\" or \"unlimited\" (units: bit/s, kbit/s, Mbit/s, Gbit/s, kbps, Mbps, Gbps, B/s, KB/s, MB/s, GB/s)"
}
