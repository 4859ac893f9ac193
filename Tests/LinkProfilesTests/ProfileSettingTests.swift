import LinkModel
import LinkProfiles
import Testing

/// Applying one `key = value` to an existing profile, as `linkcond set KEY VALUE` will.
@Suite(.timeLimit(.minutes(5)))
struct ProfileSettingTests {
    @Test func anUnprefixedSettingChangesBothDirections() throws {
        let profile = try Profile.builtIn(named: "3g")!.setting("delay", to: "150 ms")
        #expect(profile.uplink.delay == .milliseconds(150))
        #expect(profile.downlink.delay == .milliseconds(150))
        #expect(profile.downlink.bandwidth == .kbps(780))
    }

    @Test func aPrefixedSettingChangesOneDirection() throws {
        var profile = Profile.none
        try profile.set("uplink.bandwidth", to: "1 Mbit/s")
        #expect(profile.uplink.bandwidth == .mbps(1))
        #expect(profile.downlink.bandwidth == nil)
    }

    @Test func spacesAroundKeyAndValueAreIgnored() throws {
        #expect(try Profile.none.setting(" loss ", to: " 5 % ").uplink.loss == Percentage(5))
    }

    @Test func aBadSettingThrowsWithoutFileOrLineAndChangesNothing() {
        var profile = Profile.none
        do {
            try profile.set("loss", to: "150 %")
            Issue.record("accepted")
        } catch {
            #expect(error.file == nil && error.line == nil)
            #expect(
                error.description
                    == #""loss = 150 %": out of range: expected a percentage from 0 % to 100 %, such as "1 %""#)
        }
        #expect(profile == Profile.none)
    }

    @Test func anUnknownSettingSuggestsAKey() {
        #expect(throws: ProfileError(text: "jiter = 5 ms", kind: .unknownKey("jiter", suggestion: "jitter"))) {
            try Profile.none.setting("jiter", to: "5 ms")
        }
    }

    @Test func theDescriptionTakesTheValueAsIs() throws {
        #expect(try Profile.none.setting("description", to: "Hotel #4").description == "Hotel #4")
    }
}
