import Foundation
import LinkProfiles
import Testing

/// Every key of the one settings table parses, renders back as written and round-trips, in every form a user may
/// write it; and the profile-key reference committed in docs/ is the one the table makes.
@Suite(.timeLimit(.minutes(5)))
struct SettingsTableTests {
    /// The forms a setting's keys are written in: per-direction keys bare and with each prefix, the others bare.
    static func forms(_ entry: ProfileSetting) -> [(prefix: String, rendered: [String])] {
        guard case .direction = entry else { return [("", [""])] }
        return [("", ["downlink.", "uplink."]), ("downlink.", ["downlink."]), ("uplink.", ["uplink."])]
    }

    static let entries = ProfileSettings.all.indices.map { $0 }

    @Test(arguments: entries)
    func everyKeyParsesRendersAsWrittenAndRoundTrips(_ index: Int) throws {
        let entry = ProfileSettings.all[index]
        let reference = entry.declaration.reference
        for form in Self.forms(entry) {
            // A setting's keys together, as some only mean something with the others (a cut's mode, a slice's
            // variation, blocked ports' mode).
            let text = reference.map { "\(form.prefix)\($0.key) = \($0.example)" }.joined(separator: "\n")
            let profile = try Profile(parsing: text, name: "table")
            #expect(profile != Profile(name: "table"), "\(text) changes nothing")
            let lines = Set(profile.rendered.split(separator: "\n").map(String.init))
            for key in reference {
                for prefix in form.rendered {
                    let rendered = "\(prefix)\(key.key) = \(key.example)"
                    #expect(lines.contains(rendered), "\(rendered) not in:\n\(profile.rendered)")
                }
                #expect(try Profile.none.setting(form.prefix + key.key, to: key.example) != Profile.none)
            }
            #expect(try Profile(parsing: profile.rendered, name: "table") == profile, "\(text)")
        }
    }

    @Test func everyKeyHasOneOwnerAndAReferenceLine() {
        let keys = ProfileSettings.all.flatMap { $0.declaration.reference.map(\.key) }
        #expect(Set(keys).count == keys.count)
        for entry in ProfileSettings.all {
            for key in entry.declaration.reference {
                #expect(!key.value.isEmpty && !key.defaultValue.isEmpty && !key.meaning.isEmpty, "\(key.key)")
                #expect(!key.meaning.hasSuffix("."), "\(key.key): the table's cells end without a full stop")
            }
        }
    }

    /// docs/reference/profiles.md, as committed.
    static let referencePage = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("docs/reference/profiles.md")

    @Test func theCommittedProfileKeyReferenceIsCurrent() throws {
        let committed = try String(contentsOf: Self.referencePage, encoding: .utf8)
        let current = try #require(ProfileKeyReference.updating(committed), "a profile-keys marker is missing")
        #expect(current == committed, "docs/reference/profiles.md is stale: run scripts/generate-docs and commit it")
    }
}
