/// Where the profile-key reference (docs/reference/profiles.md) lists a setting's keys.
public enum ReferenceSection: String, CaseIterable, Sendable {
    /// The bottleneck and its queue.
    case link
    /// Settings of the profile as a whole.
    case wholeProfile = "whole-profile"
    /// Loss models and datagram impairments.
    case datagram
    /// Connection faults.
    case faults
}

/// The key tables of docs/reference/profiles.md, made from `ProfileSettings.all`: `scripts/generate-docs` writes them
/// into the page between markers, leaving the prose around them as written, and a test checks the committed page.
public enum ProfileKeyReference {
    /// The line before a section's table.
    static func beginMarker(_ section: ReferenceSection) -> String {
        "<!-- profile keys: \(section.rawValue), generated from ProfileSettings.all by scripts/generate-docs -->"
    }

    static let endMarker = "<!-- end of profile keys -->"

    /// `page` with each section's table, between its markers, made anew; nil when a marker is missing.
    public static func updating(_ page: String) -> String? {
        var lines = page.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        for section in ReferenceSection.allCases {
            guard let begin = lines.firstIndex(of: beginMarker(section)),
                let end = lines[begin...].firstIndex(of: endMarker)
            else { return nil }
            lines.replaceSubrange((begin + 1)..<end, with: table(section))
        }
        return lines.joined(separator: "\n")
    }

    /// The table of `section`'s keys, one row each, in the settings table's order.
    static func table(_ section: ReferenceSection) -> [String] {
        let header = ["| key | value | default | set for | `linkcond tc` | meaning |", "|---|---|---|---|---|---|"]
        return header
            + ProfileSettings.all.filter { $0.declaration.referenceSection == section }.flatMap { entry in
                let declaration = entry.declaration
                let reach = scope(entry)
                let kernelSupport = kernel(declaration.kernelSupport)
                return declaration.reference.map { key in
                    "| `\(key.key)` | \(key.value) | \(key.defaultValue) | \(reach) | \(kernelSupport) | \(key.meaning) |"
                }
            }
    }

    private static func scope(_ entry: ProfileSetting) -> String {
        switch entry {
        case .direction(let setting): setting.isDatagramOnly ? "each direction, datagrams only" : "each direction"
        case .connection: "the whole connection"
        case .wholeProfile: "the whole profile"
        }
    }

    private static func kernel(_ support: KernelSupport) -> String {
        switch support {
        case .programmed: "programmed"
        case .partly(let words): words
        case .refused: "refused"
        case .ignored: "ignored"
        }
    }
}
