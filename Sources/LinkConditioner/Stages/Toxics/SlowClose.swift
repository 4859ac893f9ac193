/// Toxiproxy's `slow_close`: the end of the stream (the FIN) reaches the other side `delay` after it arrived.
final class SlowCloseToxic: ToxicEffect {
    let delay: Duration

    init(delay: Duration) { self.delay = delay }

    var endOfStreamDelay: Duration { delay }
}

extension ToxicKind {
    static let slowClose = ToxicKind("slow_close", attributes: [("delay", longestMilliseconds)]) { toxic, _ in
        SlowCloseToxic(delay: .milliseconds(toxic.attribute("delay")))
    }
}
