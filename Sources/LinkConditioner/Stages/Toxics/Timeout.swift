/// Toxiproxy's `timeout`: nothing gets through while it acts, and the connection is closed `timeout` after it
/// started; with a timeout of 0 the data waits until the toxic is removed and then flows again, none lost.
final class TimeoutToxic: ToxicEffect {
    let timeout: Duration
    private var timer: EventLoop.TimerID?
    private weak var stage: ToxicStage?

    init(timeout: Duration) { self.timeout = timeout }

    func start(at now: Instant, stage: ToxicStage) {
        self.stage = stage
        guard timeout > .zero else { return }
        timer = stage.loop.schedule(at: now + timeout) { [weak self] in
            self?.timer = nil
            self?.stage?.endConnection(.close)
        }
    }

    var holdsData: Bool { true }

    func stop() {
        if let timer, let stage { stage.loop.cancel(timer) }
        timer = nil
    }
}

extension ToxicKind {
    static let timeout = ToxicKind("timeout", attributes: [("timeout", longestMilliseconds)]) { toxic, _ in
        TimeoutToxic(timeout: .milliseconds(toxic.attribute("timeout")))
    }
}
