/// Holds the first bytes of each new turn of its direction by `delay` from when they were read; the rest of the
/// turn follows them in order.
final class FirstByteDelay: ToxicEffect {
    let delay: Duration

    init(delay: Duration) { self.delay = delay }

    func shape(_ pieces: inout [StagePiece], at now: Instant, stage: ToxicStage) {
        guard stage.turn.speaker != stage.side, !pieces.isEmpty else { return }
        pieces[0].due = max(pieces[0].due, now + delay)
    }
}
