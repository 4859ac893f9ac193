@testable import LinkConditioner

/// Profile files: `Profile(parsing:)`, which also reads profiles sent to the control endpoint. A profile that
/// parses must render to text that parses back to the same profile, as `Profile.rendered` promises.
enum ProfileTextTarget {
    static func run(_ input: FuzzInput) {
        guard let profile = try? Profile(parsing: input.text, name: "fuzz", file: "fuzz.profile") else { return }
        _ = profile.summary
        let again: Profile
        do {
            again = try Profile(parsing: profile.rendered, name: "fuzz")
        } catch {
            fatalError("a parsed profile renders to text that does not parse: \(error)\n\(profile.rendered)")
        }
        guard again == profile else {
            fatalError("a parsed profile does not survive rendering:\n\(profile.rendered)")
        }
    }
}
