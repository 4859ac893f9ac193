import Testing

@testable import LinkConditioner

/// The slicer toxic cuts what leaves into writes of average ± variation bytes, with a pause after each.
struct SlicerToxicTests {
    @Test func slicesStayWithinTheVariationAndPauseByTheDelay() throws {
        let toxic = SlicerToxic(
            averageSize: 100, sizeVariation: 20, delay: .microseconds(500), random: SeededRandom(seed: 3))

        let slices = (0..<1000).compactMap { _ in toxic.nextSlice(of: 10_000) }

        #expect(slices.allSatisfy { (80...120).contains($0.size) && $0.pause == .microseconds(500) })
        #expect(Set(slices.map(\.size)).count > 20)
    }

    @Test func theLastSliceTakesWhatIsLeft() throws {
        let toxic = SlicerToxic(averageSize: 100, sizeVariation: 0, delay: .zero, random: SeededRandom(seed: 3))

        #expect(toxic.nextSlice(of: 30)?.size == 30)
    }

    @Test func anAverageBelowTheVariationIsRefusedByTheAPI() {
        #expect(ToxicKind.slicer.inconsistency(["average_size": 10, "size_variation": 10]) != nil)
        #expect(ToxicKind.slicer.inconsistency(["size_variation": 0]) != nil)
        #expect(ToxicKind.slicer.inconsistency(["average_size": 10, "size_variation": 9]) == nil)
    }
}
