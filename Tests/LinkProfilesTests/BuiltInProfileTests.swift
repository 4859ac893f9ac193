import Foundation
import LinkModel
import LinkProfiles
import Testing

/// The profiles shipped in `profiles/`, their built-in copies, and finding them by name or path.
@Suite(.timeLimit(.minutes(5)))
struct BuiltInProfileTests {
    /// The repository's `profiles/` folder, found from this file's own path.
    static let folder = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("profiles")

    static func shippedFiles() throws -> [String: String] {
        let names = try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { $0.hasSuffix(".profile") }
        var texts: [String: String] = [:]
        for name in names {
            texts[String(name.dropLast(".profile".count))] =
                try String(contentsOf: folder.appendingPathComponent(name), encoding: .utf8)
        }
        return texts
    }

    @Test func everyFileInProfilesIsByteIdenticalToItsBuiltInCopyAndViceVersa() throws {
        let files = try Self.shippedFiles()
        let builtIns = Dictionary(uniqueKeysWithValues: Profile.builtInTexts.map { ($0.name, $0.text) })
        #expect(Set(files.keys) == Set(builtIns.keys))
        for (name, text) in files {
            #expect(
                Array(text.utf8) == builtIns[name].map { Array($0.utf8) },
                "profiles/\(name).profile differs from its built-in copy")
        }
    }

    @Test func theBuiltInsAreNLCsSetItsOlderPresetsTheBrowserPresetsAndNone() {
        #expect(
            Set(Profile.builtInNames) == [
                "none", "100-loss", "3g", "dsl", "edge", "high-latency-dns", "lte", "very-bad-network", "wifi",
                "wifi-802.11ac",
                "generic-bad", "generic-average", "generic-good", "3g-good", "3g-lossy", "cable", "edge-good",
                "edge-lossy",
                "wifi-good", "slow-3g", "fast-3g", "fast-4g",
            ])
    }

    @Test func everyShippedFileParsesWithADescription() throws {
        for (name, text) in try Self.shippedFiles() {
            let profile = try Profile(parsing: text, name: name, file: "\(name).profile")
            #expect(!profile.description.isEmpty, "\(name) has no description")
        }
    }

    @Test func everyShippedFileCitesWhereItsNumbersComeFrom() throws {
        for (name, text) in try Self.shippedFiles() where name != "none" {
            #expect(text.contains("# Numbers: NOTES.md section 1"), "\(name) does not cite its source")
        }
    }

    @Test func noneIsTheProfileThatChangesNothing() {
        #expect(Profile.builtIn(named: "none") == Profile.none)
    }

    @Test func oneHundredPercentLossLosesEverything() throws {
        let profile = try #require(Profile.builtIn(named: "100-loss"))
        #expect(profile.uplink.loss == Percentage(100) && profile.downlink.loss == Percentage(100))
    }

    @Test func theNLCNumbersMatchTheNotes() throws {
        let lte = try #require(Profile.builtIn(named: "lte"))
        #expect(lte.downlink == DirectionProfile(bandwidth: .mbps(50), delay: .milliseconds(50)))
        #expect(lte.uplink == DirectionProfile(bandwidth: .mbps(10), delay: .milliseconds(65)))
        let veryBad = try #require(Profile.builtIn(named: "very-bad-network"))
        #expect(
            veryBad.uplink == DirectionProfile(bandwidth: .mbps(1), delay: .milliseconds(500), loss: Percentage(10)))
        #expect(Profile.builtIn(named: "high-latency-dns")?.dnsDelay == .seconds(3))
        #expect(Profile.builtIn(named: "cable")?.downlink.queue == ByteCount(bytes: 15_000))
        #expect(Profile.builtIn(named: "generic-average")?.uplink.loss == Percentage(0.1))
    }

    @Test func browserPresetsSplitTheRoundTripInHalf() throws {
        let fast3G = try #require(Profile.builtIn(named: "fast-3g"))
        #expect(fast3G.roundTrip == .microseconds(562_500))
        #expect(fast3G.downlink.bandwidth == .kbps(1440))
        #expect(Profile.builtIn(named: "slow-3g")?.roundTrip == .seconds(2))
        #expect(Profile.builtIn(named: "fast-4g")?.roundTrip == .milliseconds(165))
    }

    @Test(arguments: [
        ("3G", "3g"), ("Edge", "edge"), ("very-bad-network", "very-bad-network"),
        ("Very Bad Network", "very-bad-network"),
        ("Wi-Fi", "wifi"), ("100% Loss", "100-loss"), ("WIFI-802.11AC", "wifi-802.11ac"),
    ])
    func lookupIgnoresCaseAndSeparators(asked: String, name: String) {
        #expect(Profile.builtIn(named: asked)?.name == name)
    }

    @Test func loadingANameFindsTheBuiltIn() throws {
        #expect(try Profile.load("LTE") == Profile.builtIn(named: "lte"))
    }

    @Test func loadingAnUnknownNameListsTheClosestNames() {
        #expect(throws: ProfileError(kind: .unknownProfile("lte4", closest: ["lte"]))) { try Profile.load("lte4") }
        #expect(throws: ProfileError(kind: .unknownProfile("satellite", closest: ["lte", "cable", "edge"]))) {
            try Profile.load("satellite")
        }
        #expect(
            ProfileError(kind: .unknownProfile("edgy", closest: ["edge"])).description
                == #"no built-in profile "edgy"; closest: edge ("linkcond profiles" lists them all)"#)
    }

    @Test func loadingAPathReadsTheFileAndNamesItAfterTheFile() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("linkcond-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("hotel.profile").path
        try "description = Hotel\ndelay = 80 ms\n".write(toFile: path, atomically: true, encoding: .utf8)
        let profile = try Profile.load(path)
        #expect(profile.name == "hotel")
        #expect(profile.description == "Hotel")
        #expect(profile.uplink.delay == .milliseconds(80))
    }

    @Test func aPathWithASlashIsAFileEvenWithABuiltInsName() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("linkcond-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("3g").path
        try "delay = 7 ms\n".write(toFile: path, atomically: true, encoding: .utf8)
        let profile = try Profile.load(path)
        #expect(profile.uplink.delay == .milliseconds(7))
        #expect(profile.name == "3g")
    }

    @Test func errorsInAFileNameThePathAsGiven() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("linkcond-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("bad.profile").path
        try "delay = 5 ms\nloss = 5\n".write(toFile: path, atomically: true, encoding: .utf8)
        #expect(throws: ProfileError.self) { try Profile.load(path) }
        do { _ = try Profile.load(path) } catch {
            #expect(error.description.hasPrefix("\(path):2: \"loss = 5\": missing unit"))
        }
    }

    @Test func aMissingFileIsUnreadable() {
        #expect(throws: ProfileError(file: "nowhere/x.profile", kind: .unreadable(reason: "no such file"))) {
            try Profile.load("nowhere/x.profile")
        }
        #expect(
            ProfileError(file: "x.profile", kind: .unreadable(reason: "no such file")).description
                == "x.profile: no such file")
    }
}
