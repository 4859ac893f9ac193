/// Toxiproxy's `slicer`: data leaves in writes of `averageSize` ± `sizeVariation` bytes (uniform, from the seed),
/// with `delay` between writes; the last write of what is waiting may be smaller.
///
/// Slices are cut as they leave, so slicing a large buffer into single bytes holds no per-slice state.
final class SlicerToxic: ToxicEffect {
    let averageSize: Int
    let sizeVariation: Int
    let delay: Duration
    private var random: SeededRandom

    init(averageSize: Int, sizeVariation: Int, delay: Duration, random: SeededRandom) {
        self.averageSize = max(1, averageSize)
        self.sizeVariation = max(0, min(sizeVariation, averageSize - 1))
        self.delay = delay
        self.random = random
    }

    var slices: Bool { true }

    func nextSlice(of available: Int) -> (size: Int, pause: Duration)? {
        let drawn = averageSize + (sizeVariation > 0 ? Int.random(in: -sizeVariation...sizeVariation, using: &random) : 0)
        return (min(available, max(1, drawn)), delay)
    }
}
