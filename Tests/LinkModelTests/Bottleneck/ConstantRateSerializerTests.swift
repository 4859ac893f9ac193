import LinkModel
import LinkProfiles
import Testing

struct ConstantRateSerializerTests {
    @Test func constantRateTakesSizeOverRate() {
        var serializer = ConstantRateSerializer(rate: .mbps(12))

        let end = serializer.transmissionEnd(bytes: 1500, startingAt: .ms(10))

        #expect(end == .ms(11))
    }

    @Test func backToBackPacketsFollowEachOther() {
        var serializer = ConstantRateSerializer(rate: .mbps(12))

        let first = serializer.transmissionEnd(bytes: 1500, startingAt: .zero)!
        let second = serializer.transmissionEnd(bytes: 1500, startingAt: first)

        #expect(second == .ms(2))
    }

    @Test func idleLinkBanksAtMostItsBurst() {
        var serializer = ConstantRateSerializer(rate: .mbps(12), burst: ByteCount(bytes: 3000))

        let atOnce = (0..<2).map { _ in serializer.transmissionEnd(bytes: 1500, startingAt: .s(5)) }
        let third = serializer.transmissionEnd(bytes: 1500, startingAt: .s(5))

        #expect(atOnce == [.s(5), .s(5)])
        #expect(third == .s(5) + .milliseconds(1))
    }

    @Test func zeroRateSendsNothing() {
        var serializer = ConstantRateSerializer(rate: BitRate(bitsPerSecond: 0))

        #expect(serializer.transmissionEnd(bytes: 1, startingAt: .zero) == nil)
    }

    @Test func unlimitedSerializerSendsAtOnce() {
        var serializer = UnlimitedSerializer()

        #expect(serializer.transmissionEnd(bytes: 1_000_000, startingAt: .ms(3)) == .ms(3))
    }
}
