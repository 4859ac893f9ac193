import LinkModel
import LinkProfiles
import Testing

/// How a profile file's lines become a `Profile`.
@Suite(.timeLimit(.minutes(5)))
struct ProfileParsingTests {
    @Test func readsTheBriefsExample() throws {
        let profile = try Profile(
            parsing: """
                description = Edge, typical
                downlink.bandwidth = 240 kbit/s
                downlink.delay = 400 ms
                downlink.loss = 0 %
                uplink.bandwidth = 200 kbit/s
                uplink.delay = 440 ms
                uplink.loss = 0 %
                dns.delay = 0 ms
                """, name: "edge")
        #expect(profile.name == "edge")
        #expect(profile.description == "Edge, typical")
        #expect(profile.downlink.bandwidth == .kbps(240))
        #expect(profile.uplink.bandwidth == .kbps(200))
        #expect(profile.downlink.delay == .milliseconds(400))
        #expect(profile.uplink.delay == .milliseconds(440))
    }

    @Test func ignoresCommentsAndBlankLines() throws {
        let profile = try Profile(
            parsing: """
                # a whole-line comment

                   # an indented comment
                delay = 20 ms   # a trailing comment
                description = Office # Wi-Fi
                """)
        #expect(profile.downlink.delay == .milliseconds(20))
        #expect(profile.description == "Office")
    }

    @Test func aKeyWithoutPrefixSetsBothDirections() throws {
        let profile = try Profile(
            parsing: "bandwidth = 1 Mbit/s\ndelay = 50 ms\njitter = 5 ms\nloss = 1 %\nqueue = 64 KiB\nburst = 15 KB")
        for direction in [profile.uplink, profile.downlink] {
            #expect(
                direction
                    == DirectionProfile(
                        bandwidth: .mbps(1), delay: .milliseconds(50), jitter: .milliseconds(5),
                        loss: Percentage(1), queue: ByteCount(bytes: 65_536), burst: ByteCount(bytes: 15_000)))
        }
    }

    @Test func aPrefixedKeySetsOneDirection() throws {
        let profile = try Profile(parsing: "uplink.delay = 30 ms")
        #expect(profile.uplink.delay == .milliseconds(30))
        #expect(profile.downlink.delay == .zero)
    }

    @Test func aPrefixedKeyWinsOverTheUnprefixedOneWhateverTheOrder() throws {
        let before = try Profile(parsing: "uplink.delay = 30 ms\ndelay = 10 ms")
        let after = try Profile(parsing: "delay = 10 ms\nuplink.delay = 30 ms")
        for profile in [before, after] {
            #expect(profile.uplink.delay == .milliseconds(30))
            #expect(profile.downlink.delay == .milliseconds(10))
        }
    }

    @Test func whatAProfileLeavesOutKeepsTheDefaults() throws {
        let profile = try Profile(parsing: "# nothing but a comment\n", name: "empty")
        #expect(profile == Profile(name: "empty"))
        #expect(profile.downlink.bandwidth == nil)
        #expect(profile.downlink.queue == DirectionProfile.defaultQueue)
        #expect(profile.downlink.burst == nil)
        #expect(profile.fault == .none)
        #expect(profile.seed == nil)
    }

    @Test func readsDnsDelayFaultAndSeed() throws {
        let profile = try Profile(parsing: "dns.delay = 3 s\nfault = blackhole\nseed = 42")
        #expect(profile.dnsDelay == .seconds(3))
        #expect(profile.fault == .blackhole)
        #expect(profile.seed == 42)
    }

    @Test func readsTheWordsForDefaults() throws {
        let profile = try Profile(
            parsing: "bandwidth = 1 Mbit/s\ndownlink.bandwidth = unlimited\nburst = auto\nseed = random\nfault = none")
        #expect(profile.downlink.bandwidth == nil)
        #expect(profile.uplink.bandwidth == .mbps(1))
        #expect(profile.uplink.burst == nil)
        #expect(profile.seed == nil)
    }

    @Test func acceptsWindowsLineEnds() throws {
        let profile = try Profile(parsing: "delay = 5 ms\r\nloss = 2 %\r\n")
        #expect(profile.uplink.delay == .milliseconds(5))
        #expect(profile.uplink.loss == Percentage(2))
    }

    @Test func aQuotedDescriptionMayHoldHashesAndEscapes() throws {
        let profile = try Profile(parsing: #"description = "Room #2 \"west\"\tline\nend"   # comment"#)
        #expect(profile.description == "Room #2 \"west\"\tline\nend")
    }
}
