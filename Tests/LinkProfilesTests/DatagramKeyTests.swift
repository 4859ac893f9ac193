import LinkModel
import LinkProfiles
import Testing

/// The datagram keys: loss model, Gilbert-Elliott parameters, duplication and reordering.
@Suite(.timeLimit(.minutes(5)))
struct DatagramKeyTests {
    @Test func unprefixedKeysSetBothDirections() throws {
        let profile = try Profile(
            parsing: """
                loss.model = gilbert-elliott
                ge.p = 2 %
                ge.r = 30 %
                ge.loss-bad = 90 %
                ge.loss-good = 0.5 %
                duplicate = 1 %
                reorder = 5 %
                """)
        let expected = DirectionProfile(
            lossModel: .gilbertElliott,
            gilbertElliott: GilbertElliottParameters(
                goodToBad: Percentage(2), badToGood: Percentage(30),
                lossInBad: Percentage(90), lossInGood: Percentage(0.5)),
            duplicate: Percentage(1), reorder: Percentage(5))

        #expect(profile.uplink == expected)
        #expect(profile.downlink == expected)
    }

    @Test func aPrefixedKeyWinsOverTheUnprefixedOne() throws {
        let profile = try Profile(parsing: "downlink.reorder = 10 %\nreorder = 1 %\nuplink.ge.r = 50 %")

        #expect(profile.downlink.reorder == Percentage(10))
        #expect(profile.uplink.reorder == Percentage(1))
        #expect(profile.uplink.gilbertElliott.badToGood == Percentage(50))
        #expect(profile.downlink.gilbertElliott.badToGood == GilbertElliottParameters().badToGood)
    }

    @Test func defaultsChangeNothing() {
        let direction = DirectionProfile()

        #expect(direction.lossModel == .random)
        #expect(direction.duplicate == .zero && direction.reorder == .zero)
        #expect(EntryImpairments(profile: direction).isEmpty)
        #expect(DepartureImpairments(profile: direction).isEmpty)
    }

    @Test func anUnknownLossModelSaysWhichExist() {
        #expect {
            try Profile(parsing: "loss.model = bursty")
        } throws: { error in
            (error as? ProfileError)?.description.contains("one of random, gilbert-elliott") == true
        }
    }

    @Test func percentagesAboveAHundredAreRefused() {
        #expect(throws: ProfileError.self) { try Profile(parsing: "duplicate = 120 %") }
        #expect(throws: ProfileError.self) { try Profile(parsing: "uplink.ge.p = 101 %") }
    }

    @Test func datagramKeysRenderOnlyWhenSetAndSurviveARoundTrip() throws {
        let plain = try Profile(parsing: "delay = 10 ms")
        let profile = try Profile(
            parsing: """
                uplink.loss.model = gilbert-elliott
                uplink.ge.p = 3 %
                downlink.duplicate = 2 %
                reorder = 0.5 %
                """, name: "datagrams")

        #expect(
            !plain.rendered.contains("ge.") && !plain.rendered.contains("duplicate")
                && !plain.rendered.contains("reorder"))
        #expect(
            profile.rendered.contains(
                "uplink.loss.model = gilbert-elliott\nuplink.ge.p = 3 %\nuplink.reorder = 0.5 %\n"))
        #expect(profile.rendered.contains("downlink.duplicate = 2 %\ndownlink.reorder = 0.5 %\n"))
        #expect(try Profile(parsing: profile.rendered, name: "datagrams") == profile)
    }

    @Test func theSummaryNamesBurstyLossDuplicationAndReordering() throws {
        let profile = try Profile(
            parsing: "loss.model = gilbert-elliott\nge.p = 1 %\nge.r = 25 %\nduplicate = 1 %\nuplink.reorder = 5 %")

        #expect(
            profile.summary
                == "unlimited bandwidth, 0 ms delay, 0 % loss, bursty datagram loss p 1 % r 25 %, 1 % duplicated, 0 %/5 % reordered"
        )
    }
}
