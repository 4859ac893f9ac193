import Testing

@testable import LinkConditioner

/// What a forwarded UDP lookup crosses: the query waits `dns.delay` instead of the link's delay, and the answer
/// waits nothing, so a lookup pays the DNS delay once however the link is set.
struct DNSDelayDirectionTests {
    private let profile: Profile = {
        var profile = Profile.none
        profile.dnsDelay = .milliseconds(300)
        profile.uplink.delay = .milliseconds(40)
        profile.downlink.delay = .milliseconds(60)
        return profile
    }()

    @Test func aQueryWaitsTheDNSDelayAndNotTheLinksDelay() {
        #expect(DNSForwarder.queryDirection(profile).delay == .milliseconds(300))
    }

    @Test func anAnswerWaitsNoDelay() {
        #expect(DNSForwarder.answerDirection(profile).delay == .zero)
    }
}
