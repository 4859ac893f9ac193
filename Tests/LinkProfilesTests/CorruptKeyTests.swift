import LinkConditioner
import Testing

/// The `corrupt` key, which `Corruption`'s registration in `ImpairmentKind.all` declares.
@Suite struct CorruptKeyTests {
    @Test func corruptSetsBothDirectionsOrOneAndRendersPerDirection() throws {
        let profile = try Profile(parsing: "corrupt = 10 %\nuplink.corrupt = 0.5 %")

        #expect(profile.downlink.declaredImpairments[Corruption.self] == Percentage(10))
        #expect(profile.uplink.declaredImpairments[Corruption.self] == Percentage(0.5))
        #expect(profile.rendered.contains("downlink.corrupt = 10 %\n"))
        #expect(profile.rendered.contains("uplink.corrupt = 0.5 %\n"))
        #expect(profile.summary.hasSuffix("10 %/0.5 % corrupted"))
        #expect(try Profile(parsing: profile.rendered, name: profile.name) == profile)
    }

    @Test func aProfileWithoutCorruptRendersWithoutIt() throws {
        let profile = try Profile(parsing: "delay = 20 ms\ncorrupt = 0 %")

        #expect(!profile.rendered.contains("corrupt"))
        #expect(profile == (try Profile(parsing: "delay = 20 ms")))
    }

    @Test func corruptIsRefusedOutOfRangeAndNamedAsDatagramOnlyAndUnsupportedByTheKernel() throws {
        #expect(throws: ProfileError.self) { try Profile(parsing: "corrupt = 101 %") }
        let profile = try Profile(parsing: "downlink.corrupt = 1 %")

        #expect(ProfileSettings.datagramOnlyKeys(profile) == ["downlink.corrupt"])
        #expect(ProfileSettings.kernelUnsupported(profile) == ["downlink.corrupt"])
    }
}
