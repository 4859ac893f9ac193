import Testing

@testable import LinkConditioner

/// The slow_close toxic delays only the end of the stream: its data moves on when it arrives.
struct SlowCloseToxicTests {
    let stage = try! ToxicModel.stage()

    @Test func dataIsDueWhenItArrivesAndOnlyTheEndWaitsTheDelay() {
        let toxic = SlowCloseToxic(delay: .milliseconds(300))
        var pieces = [StagePiece(count: 3, due: .zero + .seconds(1))]

        toxic.shape(&pieces, at: .zero + .seconds(1), stage: stage)

        #expect(pieces == [StagePiece(count: 3, due: .zero + .seconds(1))])
        #expect(!toxic.holdsData)
        #expect(toxic.endOfStreamDelay == .milliseconds(300))
    }
}
