/// Toxiproxy's `reset_peer`: once data arrives, it is held and the connection is reset (TCP RST to both sides)
/// `timeout` later; with a timeout of 0, at once.
final class ResetPeerToxic: ToxicEffect {
    let timeout: Duration
    private var timer: EventLoop.TimerID?
    private weak var stage: ToxicStage?
    private(set) var triggered = false

    init(timeout: Duration) { self.timeout = timeout }

    func start(at now: Instant, stage: ToxicStage) { self.stage = stage }

    func shape(_ pieces: inout [StagePiece], at now: Instant, stage: ToxicStage) {
        guard !triggered else { return }
        triggered = true
        timer = stage.loop.schedule(at: now + timeout) { [weak self] in
            self?.timer = nil
            self?.stage?.endConnection(.reset)
        }
    }

    var holdsData: Bool { triggered }

    func stop() {
        if let timer, let stage { stage.loop.cancel(timer) }
        timer = nil
    }
}

extension ToxicKind {
    static let resetPeer = ToxicKind("reset_peer", attributes: [("timeout", longestMilliseconds)]) { toxic, _ in
        ResetPeerToxic(timeout: .milliseconds(toxic.attribute("timeout")))
    }
}
