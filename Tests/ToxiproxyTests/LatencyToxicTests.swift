import Testing

@testable import LinkConditioner

/// The latency toxic delays each read by its latency ± jitter from when it was read, from the seed.
struct LatencyToxicTests {
    let stage = try! ToxicModel.stage()

    @Test func aReadIsDueOneLatencyAfterItArrived() {
        let toxic = LatencyToxic(latency: .milliseconds(50), jitter: .zero, random: SeededRandom(seed: 1))
        var pieces = [StagePiece(count: 100, due: .zero + .seconds(1))]

        toxic.shape(&pieces, at: .zero + .seconds(1), stage: stage)

        #expect(pieces == [StagePiece(count: 100, due: .zero + .milliseconds(1050))])
    }

    @Test func jitterStaysWithinItsBoundsAndRepeatsWithTheSeed() {
        func dues(seed: UInt64) -> [Int64] {
            let toxic = LatencyToxic(
                latency: .milliseconds(50), jitter: .milliseconds(10), random: SeededRandom(seed: seed))
            return (0..<1000).map { _ in
                var pieces = [StagePiece(count: 1, due: .zero)]
                toxic.shape(&pieces, at: .zero, stage: stage)
                return pieces[0].due.nanoseconds
            }
        }

        let first = dues(seed: 7)

        #expect(first.allSatisfy { (40_000_000...60_000_000).contains($0) })
        #expect(Set(first).count > 100)
        #expect(first == dues(seed: 7))
    }
}

/// What the model tests of toxics share: a stage on a loop that is never started.
enum ToxicModel {
    static func stage() throws -> ToxicStage {
        let loop = try EventLoop()
        return ToxicStage(
            chains: [ToxicChain(loop: loop)], loop: loop, side: .downstream, turn: ConversationTurn(), seed: 1,
            end: { _ in })
    }
}
