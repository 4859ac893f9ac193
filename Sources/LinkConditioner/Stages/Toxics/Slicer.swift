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

    /// Why `attributes` make no slicer: an average size below one byte, or a variation that could make a slice empty.
    static func inconsistency(_ attributes: [String: Int64]) -> String? {
        let average = attributes["average_size"] ?? 0
        let variation = attributes["size_variation"] ?? 0
        if average < 1 { return "slicer: average_size must be at least 1 byte" }
        if variation >= average {
            return "slicer: size_variation (\(variation)) must be less than average_size (\(average))"
        }
        return nil
    }

    var slices: Bool { true }

    func nextSlice(of available: Int) -> (size: Int, pause: Duration)? {
        let drawn =
            averageSize + (sizeVariation > 0 ? Int.random(in: -sizeVariation...sizeVariation, using: &random) : 0)
        return (min(available, max(1, drawn)), delay)
    }
}

extension ToxicKind {
    static let slicer = ToxicKind(
        "slicer",
        attributes: [("average_size", 1 << 30), ("size_variation", 1 << 30), ("delay", longestMilliseconds * 1000)],
        inconsistency: { SlicerToxic.inconsistency($0) },
        makeEffect: { toxic, random in
            SlicerToxic(
                averageSize: Int(toxic.attribute("average_size")),
                sizeVariation: Int(toxic.attribute("size_variation")),
                delay: .microseconds(toxic.attribute("delay")), random: random)
        }
    )
}
