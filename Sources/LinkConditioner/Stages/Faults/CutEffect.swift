/// Cuts one direction of a connection after a byte count (exactly those bytes reach the other side first) or
/// after a time from when the connection opened, and ends the connection as its mode says.
final class CutEffect: ToxicEffect {
    let point: FaultSettings.CutPoint
    let mode: CutSetting.Mode
    /// Counts the bytes of a cut after a size, as Toxiproxy's limit_data does.
    private let counter: LimitDataToxic?
    private var timer: EventLoop.TimerID?
    private weak var stage: ToxicStage?

    init(at point: FaultSettings.CutPoint, mode: CutSetting.Mode) {
        self.point = point
        self.mode = mode
        if case .bytes(let bytes) = point { counter = LimitDataToxic(bytes: Int64(bytes)) } else { counter = nil }
    }

    func start(at now: Instant, stage: ToxicStage) {
        self.stage = stage
        guard case .time(let after) = point else { return }
        timer = stage.loop.schedule(at: now + after) { [weak self] in
            guard let self else { return }
            self.timer = nil
            self.stage?.endConnection(self.end)
        }
    }

    private var end: StreamEnd {
        switch mode {
        case .reset: .reset
        case .hang: .hang
        case .close: .close
        }
    }

    func limit(_ count: Int) -> (kept: Int, ended: Bool) { counter?.limit(count) ?? (count, false) }

    var cutEnd: StreamEnd { end }

    func stop() {
        if let timer, let stage { stage.loop.cancel(timer) }
        timer = nil
    }
}
