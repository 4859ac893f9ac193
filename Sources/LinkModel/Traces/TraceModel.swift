// The stochastic model behind linkcond's shipped traces (profiles/traces/*.down, *.up).
//
// Capacity changes every 10 ms epoch. While connected, the rate r follows a mean-reverting multiplicative walk
//
//     r ← clamp(r + θ·(μ − r) + σ·r·z, floor, ceiling),     z ~ N(0, 1) (Irwin–Hall: 12 uniforms − 6)
//
// so it wanders around μ with bursts and fades, like a moving radio link. An outage process runs alongside:
// each epoch a connected link enters an outage with probability pₒ and an outage ends with probability p_b
// (geometric durations, mean 10 ms / p). In an outage the rate is zero. Each millisecond then offers
// ⌊r · 1 ms / 12 000 bit + u⌋ delivery opportunities of 1500 bytes (u uniform in [0, 1)), which is r on average.
// The last millisecond always has one opportunity, so the trace's period is its full duration.
// Only +, −, ×, ÷ and comparisons are used on the draws, so the same seed gives the same file on every machine.

/// A seeded stochastic capacity model that writes mahimahi traces; the built-in traces are its presets.
public struct TraceModel: Hashable, Sendable {
    /// Mean rate μ while connected.
    public var mean: BitRate
    /// σ: relative rate change per epoch (standard deviation).
    public var volatility: Double
    /// θ: fraction of the distance to the mean recovered per epoch.
    public var reversion: Double
    public var floor: BitRate
    public var ceiling: BitRate
    /// Mean time between outages (connected time), or nil for none.
    public var meanTimeBetweenOutages: Duration?
    /// Mean length of an outage.
    public var meanOutage: Duration
    public var duration: Duration
    public var seed: UInt64

    static let epochMilliseconds = 10

    /// The presets, by the name of the trace they generate.
    public static let presets: [String: TraceModel] = [
        "lte-driving.down": TraceModel(
            mean: .mbps(12), volatility: 0.15, reversion: 0.02, floor: .kbps(500), ceiling: .mbps(40),
            meanTimeBetweenOutages: .seconds(40), meanOutage: .milliseconds(800), duration: .seconds(60), seed: 1),
        "lte-driving.up": TraceModel(
            mean: .mbps(4), volatility: 0.15, reversion: 0.02, floor: .kbps(200), ceiling: .mbps(12),
            meanTimeBetweenOutages: .seconds(40), meanOutage: .milliseconds(800), duration: .seconds(60), seed: 2),
        "subway.down": TraceModel(
            mean: .mbps(4), volatility: 0.2, reversion: 0.05, floor: .kbps(100), ceiling: .mbps(15),
            meanTimeBetweenOutages: .seconds(25), meanOutage: .seconds(6), duration: .seconds(120), seed: 3),
        "subway.up": TraceModel(
            mean: .kbps(1500), volatility: 0.2, reversion: 0.05, floor: .kbps(50), ceiling: .mbps(5),
            meanTimeBetweenOutages: .seconds(25), meanOutage: .seconds(6), duration: .seconds(120), seed: 4),
    ]

    public static var presetNames: [String] { presets.keys.sorted() }

    /// The opportunity times the model draws, in milliseconds.
    public func generate() -> [UInt32] {
        var random = SeededRandom(seed: seed)
        let totalMilliseconds = max(Int(duration.nanoseconds / 1_000_000), 1)
        let epochs = Double(Self.epochMilliseconds)
        let enterOutage = meanTimeBetweenOutages.map { epochs / max($0.seconds * 1000, epochs) } ?? 0
        let leaveOutage = epochs / max(meanOutage.seconds * 1000, epochs)
        var rate = mean.bitsPerSecond
        var inOutage = false
        var times: [UInt32] = []
        for millisecond in 1...totalMilliseconds {
            if millisecond % Self.epochMilliseconds == 1 {
                var z = -6.0
                for _ in 0..<12 { z += random.nextUnit() }
                rate += reversion * (mean.bitsPerSecond - rate) + volatility * rate * z
                rate = min(max(rate, floor.bitsPerSecond), ceiling.bitsPerSecond)
                inOutage = random.chance(inOutage ? 1 - leaveOutage : enterOutage)
            }
            let expected = inOutage ? 0 : rate / 1000 / Double(DeliveryTrace.opportunityBytes * 8)
            var count = Int(expected + random.nextUnit())
            if millisecond == totalMilliseconds { count = max(count, 1) }
            times += repeatElement(UInt32(millisecond), count: count)
        }
        return times
    }

    /// The trace in mahimahi's file format.
    public func fileText() -> String {
        generate().map(String.init).joined(separator: "\n") + "\n"
    }
}

extension DeliveryTrace {
    /// The built-in trace `name` (a `TraceModel` preset), generated on demand.
    public static func builtIn(named name: String) -> DeliveryTrace? {
        TraceModel.presets[name].map { DeliveryTrace(name: name, validated: $0.generate()) }
    }
}
