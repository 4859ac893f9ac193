/// Toxiproxy's `latency`: every chunk waits `latency` ± a uniform draw within `jitter` from when it was read,
/// never before an earlier chunk (order is kept, so a later chunk may wait a little longer than drawn).
final class LatencyToxic: ToxicEffect {
    let latency: Duration
    let jitter: Duration
    private var random: SeededRandom

    init(latency: Duration, jitter: Duration, random: SeededRandom) {
        self.latency = latency
        self.jitter = jitter
        self.random = random
    }

    func shape(_ pieces: inout [StagePiece], at now: Instant, stage: ToxicStage) {
        let spread = jitter.nanoseconds
        let offset = spread > 0 ? Int64.random(in: -spread...spread, using: &random) : 0
        let delay = Duration.nanoseconds(max(0, latency.nanoseconds.addingSaturating(offset)))
        for index in pieces.indices { pieces[index].due = pieces[index].due + delay }
    }
}

extension ToxicKind {
    static let latency = ToxicKind(
        "latency", attributes: [("latency", longestMilliseconds), ("jitter", longestMilliseconds)]
    ) { toxic, random in
        LatencyToxic(
            latency: .milliseconds(toxic.attribute("latency")), jitter: .milliseconds(toxic.attribute("jitter")),
            random: random)
    }
}
