import Testing

@testable import LinkConditioner

/// `attach --exclude` entries: what becomes an nftables match, and what is refused with a message naming it.
struct AttachExclusionTests {
    private func match(_ text: String) throws -> String { try AttachExclusion(parsing: text).match }

    private func refusal(_ text: String) -> String? {
        do {
            _ = try AttachExclusion(parsing: text)
            return nil
        } catch {
            return error.description
        }
    }

    @Test func addressesNetworksAndPortsBecomeMatchesOfTheirFamily() throws {
        #expect(try match("10.96.0.0/12") == "ip daddr 10.96.0.0/12")
        #expect(try match("10.96.0.1") == "ip daddr 10.96.0.1")
        #expect(try match("10.96.0.1:443") == "ip daddr 10.96.0.1 meta l4proto { tcp, udp } th dport 443")
        #expect(try match("fd00::/8") == "ip6 daddr fd00::/8")
        #expect(try match("[fd00::1]:443") == "ip6 daddr fd00::1 meta l4proto { tcp, udp } th dport 443")
    }

    @Test func aBracketedIPv6AddressNeedsNoPort() throws {
        #expect(try match("[::1]") == "ip6 daddr ::1")
        #expect(try match("[fd00::/8]") == "ip6 daddr fd00::/8")
    }

    /// An IPv4-mapped address is what an IPv4 connection carries: an `ip6 daddr` rule would never match it.
    @Test func anIPv4MappedAddressBecomesAnIPv4Match() throws {
        #expect(try match("::ffff:1.2.3.4") == "ip daddr 1.2.3.4")
        #expect(try match("[::ffff:1.2.3.4]:443") == "ip daddr 1.2.3.4 meta l4proto { tcp, udp } th dport 443")
        #expect(try match("::ffff:10.0.0.0/104") == "ip daddr 10.0.0.0/8")
    }

    @Test func emptyEntriesAreRefused() {
        #expect(refusal("")?.contains("an empty entry") == true)
    }

    @Test func portsMustBePlainDigitsFromOneTo65535() throws {
        for port in ["+443", "0443", "0", "65536", "", "44a", " 443", "-1"] {
            #expect(refusal("10.96.0.1:\(port)") == "port \"\(port)\" is not a number from 1 to 65535", "\(port)")
            #expect(refusal("[fd00::1]:\(port)") == "port \"\(port)\" is not a number from 1 to 65535", "\(port)")
        }
        #expect(try match("10.96.0.1:65535").hasSuffix("th dport 65535"))
    }

    @Test func namesAndMalformedEntriesAreRefused() {
        for text in ["api.internal", "10.96.0.1/33", "[fd00::1", "[fd00::1]443", "10.96.0.1:443:1"] {
            #expect(refusal(text)?.contains("expected an address") == true, "\(text)")
        }
    }
}
