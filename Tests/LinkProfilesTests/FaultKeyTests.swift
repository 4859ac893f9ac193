import LinkModel
import LinkProfiles
import Testing

/// The connection-fault keys parse, render back, and refuse bad values with the file's line before anything applies.
@Suite(.timeLimit(.minutes(5)))
struct FaultKeyTests {
    private let text = """
        cut.after = 64 KiB
        cut.mode = hang
        downlink.close.delay = 2 s
        uplink.slice.size = 10 B
        uplink.slice.delay = 1 ms
        downlink.first-byte.delay = 45 s
        connect.stall = 30 s
        blocked.ports = 25, 6000-7000
        blocked.mode = blackhole
        captive-portal = redirect
        """

    @Test func everyFaultKeyParsesIntoTheProfile() throws {
        let profile = try Profile(parsing: text, name: "hotel")

        #expect(profile.downlink.faults.cutAfter == .bytes(65536))
        #expect(profile.uplink.faults.cutMode == .hang)
        #expect(profile.downlink.faults.closeDelay == .seconds(2) && profile.uplink.faults.closeDelay == .zero)
        #expect(profile.uplink.faults.sliceSize == 10 && profile.uplink.faults.sliceDelay == .milliseconds(1))
        #expect(profile.downlink.faults.firstByteDelay == .seconds(45) && profile.uplink.faults.firstByteDelay == .zero)
        #expect(profile.connection.connectStall == .seconds(30))
        #expect(profile.connection.blockedPorts == [25...25, 6000...7000])
        #expect(profile.connection.blockedMode == .blackhole)
        #expect(profile.connection.captivePortal == .redirect)
    }

    @Test func aCutAfterADurationIsATimeCut() throws {
        var profile = Profile.none
        try profile.set("cut.after", to: "10 s")

        #expect(profile.uplink.faults.cutAfter == .time(.seconds(10)))
    }

    @Test func faultsRenderBackToTheSameProfile() throws {
        let profile = try Profile(parsing: text, name: "hotel")

        let again = try Profile(parsing: profile.rendered, name: "hotel")

        #expect(again == profile)
    }

    @Test func aCutAfterThatIsNeitherSizeNorDurationNamesTheLineAndWhatWasExpected() {
        #expect(throws: ProfileError.self) {
            try Profile(parsing: "delay = 10 ms\ncut.after = 5 parsecs", file: "p.profile")
        }
        do {
            _ = try Profile(parsing: "delay = 10 ms\ncut.after = 5 parsecs", file: "p.profile")
        } catch {
            #expect(error.description.contains("p.profile:2"), "\(error)")
            #expect(error.description.contains("a size such as"), "\(error)")
        }
    }

    @Test func aPortBeyond65535IsOutOfRangeAtParseTime() {
        var profile = Profile.none

        #expect(throws: ProfileError.self) { try profile.set("blocked.ports", to: "80, 6000-70000") }
        #expect(throws: ProfileError.self) { try profile.set("blocked.ports", to: "0") }
        #expect(throws: ProfileError.self) { try profile.set("blocked.ports", to: "90-80") }
        #expect(throws: ProfileError.self) { try profile.set("blocked.ports", to: "http") }
        #expect(profile == .none)
    }

    @Test func aCutLongerThanAnHourOrNegativeIsRefused() {
        var profile = Profile.none

        #expect(throws: ProfileError.self) { try profile.set("cut.after", to: "3601 s") }
        #expect(throws: ProfileError.self) { try profile.set("cut.after", to: "-1 s") }
        #expect(throws: ProfileError.self) { try profile.set("cut.after", to: "2048 MiB") }
        #expect(throws: ProfileError.self) { try profile.set("cut.mode", to: "explode") }
        #expect(throws: ProfileError.self) { try profile.set("captive-portal", to: "yes") }
    }

    @Test(arguments: [
        "downlink.connect.stall", "uplink.connect.stall", "downlink.blocked.ports", "uplink.blocked.mode",
        "downlink.captive-portal",
    ])
    func aConnectionWideKeyWithADirectionNamesTheLineAndTheKeyToWrite(_ key: String) {
        let value =
            key.hasSuffix("ports")
            ? "25" : key.hasSuffix("mode") ? "blackhole" : key.hasSuffix("portal") ? "form" : "5 s"
        let unprefixed = String(key.drop { $0 != "." }.dropFirst())

        #expect(throws: ProfileError.self) {
            try Profile(parsing: "delay = 10 ms\n\(key) = \(value)", file: "hotel.profile")
        }
        do {
            _ = try Profile(parsing: "delay = 10 ms\n\(key) = \(value)", file: "hotel.profile")
        } catch {
            #expect(error.kind == .connectionWideKey(key, unprefixed: unprefixed))
            #expect(error.description.hasPrefix("hotel.profile:2: "), "\(error)")
            #expect(
                error.description.contains("expected \"\(unprefixed) = …\" without uplink. or downlink."), "\(error)")
        }
    }

    /// The profile-wide keys of the format itself, not only the declared fault keys: `uplink.fault` once got
    /// "unknown key; did you mean uplink.burst?".
    @Test(arguments: [
        ("uplink.fault", "reset"), ("downlink.seed", "42"), ("uplink.dns.delay", "100 ms"),
        ("downlink.tcp.congestion", "reno"), ("uplink.exclude", "10.0.0.0/8"),
    ])
    func aProfileWideKeyWithADirectionNamesTheKeyToWrite(_ key: String, _ value: String) {
        let unprefixed = String(key.drop { $0 != "." }.dropFirst())

        do {
            _ = try Profile(parsing: "\(key) = \(value)\n", file: "hotel.profile")
            Issue.record("\(key) was accepted")
        } catch {
            #expect(error.kind == .connectionWideKey(key, unprefixed: unprefixed), "\(error)")
        }
    }

    @Test func setRefusesADirectionOnAConnectionWideKeyAndChangesNothing() {
        var profile = Profile.none

        #expect(throws: ProfileError.self) { try profile.set("downlink.connect.stall", to: "5 s") }
        #expect(profile == .none)
    }

    @Test func connectionWideFaultsRenderOnceWithoutADirection() throws {
        let profile = try Profile(parsing: text, name: "hotel")

        let lines = profile.rendered.split(separator: "\n")

        #expect(lines.contains("connect.stall = 30 s"))
        #expect(lines.contains("blocked.ports = 25, 6000-7000") && lines.contains("captive-portal = redirect"))
        #expect(
            !lines.contains {
                $0.hasSuffix(".connect.stall = 30 s") || $0.contains(".blocked.") || $0.contains(".captive-portal")
            })
    }
}
