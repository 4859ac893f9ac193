import Testing

@testable import LinkConditioner

/// The bandwidth toxic paces a connection's direction at its rate in KB/s, in pieces of 100 ms.
struct BandwidthToxicTests {
    let stage = try! ToxicModel.stage()

    @Test func aLargeReadLeavesInPiecesOf100MillisecondsAtTheRate() {
        let toxic = BandwidthToxic(kilobytesPerSecond: 100)
        var pieces = [StagePiece(count: 45_000, due: .zero)]

        toxic.shape(&pieces, at: .zero, stage: stage)

        #expect(pieces.map(\.count) == [10_000, 10_000, 10_000, 10_000, 5_000])
        #expect(pieces.map(\.due.nanoseconds) == [0, 100_000_000, 200_000_000, 300_000_000, 400_000_000])
    }

    @Test func aLaterReadWaitsForTheEarlierOnesPacing() {
        let toxic = BandwidthToxic(kilobytesPerSecond: 100)
        var first = [StagePiece(count: 20_000, due: .zero)]
        var second = [StagePiece(count: 1_000, due: .zero + .milliseconds(1))]

        toxic.shape(&first, at: .zero, stage: stage)
        toxic.shape(&second, at: .zero + .milliseconds(1), stage: stage)

        #expect(second == [StagePiece(count: 1_000, due: .zero + .milliseconds(200))])
    }

    @Test func aRateOfZeroPassesDataThroughAsInToxiproxy() {
        let toxic = BandwidthToxic(kilobytesPerSecond: 0)
        var pieces = [StagePiece(count: 1_000_000, due: .zero)]

        toxic.shape(&pieces, at: .zero, stage: stage)

        #expect(pieces == [StagePiece(count: 1_000_000, due: .zero)])
    }
}
