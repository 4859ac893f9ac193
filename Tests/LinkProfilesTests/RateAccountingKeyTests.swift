import LinkModel
import LinkProfiles
import Testing

/// `bandwidth.counts`: whether a direction's rate counts payload bytes or Ethernet frames.
@Suite(.timeLimit(.minutes(5)))
struct RateAccountingKeyTests {
    @Test func payloadIsTheDefaultAndIsNotRendered() throws {
        let profile = try Profile(parsing: "bandwidth = 10 Mbit/s\n")

        #expect(profile.downlink.accounting == .payload)
        #expect(profile.uplink.accounting == .payload)
        #expect(!profile.rendered.contains("bandwidth.counts"))
    }

    @Test func framesSetsBothDirectionsAndRendersBack() throws {
        let profile = try Profile(parsing: "bandwidth = 10 Mbit/s\nbandwidth.counts = frames\n")

        #expect(profile.downlink.accounting == .frames)
        #expect(profile.uplink.accounting == .frames)
        #expect(profile.rendered.contains("downlink.bandwidth.counts = frames\n"))
        #expect(try Profile(parsing: profile.rendered) == profile)
    }

    @Test func aPrefixedKeySetsOneDirection() throws {
        let profile = try Profile(parsing: "downlink.bandwidth.counts = frames\n")

        #expect(profile.downlink.accounting == .frames)
        #expect(profile.uplink.accounting == .payload)
        #expect(profile.summary.hasSuffix("rate counts frames down, default up"))
    }

    @Test func anUnknownValueIsRefusedAtItsLineWithTheValuesExpected() {
        let error = #expect(throws: ProfileError.self) {
            try Profile(parsing: "bandwidth = 10 Mbit/s\nuplink.bandwidth.counts = bytes\n", file: "a.profile")
        }

        #expect(
            error?.description == "a.profile:2: \"uplink.bandwidth.counts = bytes\": expected one of payload, frames")
    }

    @Test func theKernelBackendProgramsAFramesProfileAsItAlwaysHas() throws {
        let profile = try Profile(parsing: "bandwidth = 10 Mbit/s\nbandwidth.counts = frames\n")

        #expect(ProfileSettings.kernelUnsupported(profile).isEmpty)
    }
}
