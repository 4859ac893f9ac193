import LinkModel
import LinkProfiles
import Testing

/// The `tcp.*` keys: congestion control, initial window, slow start after idle and segmentation offload of the
/// emulated senders.
@Suite(.timeLimit(.minutes(5)))
struct TCPKeyTests {
    @Test func theDefaultsAreLinuxs() {
        let tcp = Profile().tcp

        #expect(tcp.congestion == .cubic)
        #expect(tcp.initialWindow == 10)
        #expect(tcp.slowStartAfterIdle)
        #expect(tcp.segmentationOffload)
    }

    @Test func everyKeyParses() throws {
        let profile = try Profile(
            parsing: """
                tcp.congestion = reno
                tcp.initial-window = 4
                tcp.slow-start-after-idle = off
                tcp.segmentation-offload = off
                """)

        #expect(
            profile.tcp
                == TCPSettings(
                    congestion: .reno, initialWindow: 4, slowStartAfterIdle: false, segmentationOffload: false))
    }

    @Test func aNonDefaultSettingRendersAndParsesBack() throws {
        var profile = Profile(name: "slow")
        profile.tcp = TCPSettings(congestion: .reno, initialWindow: 2, slowStartAfterIdle: false)

        let text = profile.rendered

        #expect(text.contains("tcp.congestion = reno\ntcp.initial-window = 2\ntcp.slow-start-after-idle = off\n"))
        #expect(try Profile(parsing: text, name: "slow") == profile)
        #expect(profile.summary.contains("TCP congestion reno initial-window 2 slow-start-after-idle off"))
    }

    @Test func defaultSettingsDoNotRender() {
        #expect(!Profile.none.rendered.contains("tcp."))
    }

    @Test(arguments: [
        ("tcp.congestion = bbr", #"tcp.congestion = bbr": expected one of cubic, reno"#),
        ("tcp.initial-window = 0", "tcp.initial-window = 0"),
        ("tcp.initial-window = 1001", "from 1 to 1000"),
        ("tcp.initial-window = ten", "a whole number of segments"),
        ("tcp.slow-start-after-idle = maybe", "on or off"),
        ("tcp.segmentation-offload = yes", "on or off"),
    ])
    func badValuesNameTheKeyAndWhatWasExpected(line: String, fragment: String) {
        var message = ""
        do {
            _ = try Profile(parsing: line, file: "x.profile")
        } catch {
            message = error.description
        }

        #expect(message.hasPrefix("x.profile:1:"))
        #expect(message.contains(fragment), "\(message)")
    }

    @Test func aLiveSettingChangesOnlyTheTransport() throws {
        let profile = try Profile.none.setting("tcp.congestion", to: "reno")

        #expect(profile.tcp.congestion == .reno)
        #expect(profile.uplink == Profile.none.uplink)
    }
}
