import LinkModel
import LinkProfiles
import Testing

/// The `exclude` key: destinations a proxy front end relays untouched.
@Suite(.timeLimit(.minutes(5)))
struct ExcludeKeyTests {
    @Test func parsesHostsDomainsAddressesAndNetworks() throws {
        let profile = try Profile(parsing: "exclude = 10.0.0.0/8, api.internal, ::1, *.corp.example\n")

        #expect(profile.exclude.map(\.description) == ["10.0.0.0/8", "api.internal", "::1", "*.corp.example"])
    }

    @Test func noneIsTheEmptyListAndTheDefault() throws {
        #expect(try Profile(parsing: "exclude = none\n").exclude.isEmpty)
        #expect(Profile.none.exclude.isEmpty)
    }

    @Test func rendersTheListAndParsesItBack() throws {
        let profile = try Profile(parsing: "exclude = 10.1.2.3/8, API.internal, ::1\n", name: "x")

        #expect(profile.rendered.contains("\nexclude = 10.0.0.0/8, api.internal, ::1\n"))
        #expect(try Profile(parsing: profile.rendered, name: "x") == profile)
    }

    @Test func rendersNoneForAnEmptyList() {
        #expect(Profile.none.rendered.contains("\nexclude = none\n"))
    }

    @Test func summaryMentionsExclusionsOnlyWhenThereAreSome() throws {
        let profile = try Profile.none.setting("exclude", to: "10.0.0.0/8")

        #expect(profile.summary.hasSuffix("excluding 10.0.0.0/8"))
        #expect(!Profile.none.summary.contains("exclud"))
    }

    @Test func rejectsAnEntryThatIsNeitherNameNorAddressNorNetwork() {
        #expect(throws: ProfileError.self) { try Profile(parsing: "exclude = 10.0.0.0/40\n") }
        #expect(throws: ProfileError.self) { try Profile(parsing: "exclude = a b\n") }
        #expect(throws: ProfileError.self) { try Profile(parsing: "exclude = 10.0.0.1,,\n") }
    }
}
