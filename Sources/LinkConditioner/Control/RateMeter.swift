import DequeModule

/// Each listener's delivered rate per direction over the last second, kept up to date on the loop.
///
/// The loop samples the delivered byte counters four times a second and keeps the samples of the last second, so a
/// single read (the first `linkcond status`, `/metrics`, the dashboard) sees the running instance's current rate
/// instead of needing two samples of its own; the rate follows a change within a quarter of a second.
///
/// Lives on the event loop thread.
final class RateMeter {
    /// How often the counters are sampled.
    static let interval = Duration.milliseconds(250)
    /// The span a rate is measured over once the meter has run that long.
    static let window = Duration.seconds(1)

    private struct Sample {
        var at: Instant
        var bytes: [(uplink: Int, downlink: Int)]
    }

    private let loop: EventLoop
    private let sample: () -> [(uplink: Int, downlink: Int)]
    private var samples: Deque<Sample> = []
    /// Bits per second per listener, uplink and downlink, over the samples kept; zero before the first interval.
    private(set) var rates: [(uplink: Double, downlink: Double)] = []
    private var timer: EventLoop.TimerID?

    /// Starts sampling `sample` (every listener's delivered bytes, uplink and downlink). Called on the loop thread.
    init(loop: EventLoop, sample: @escaping () -> [(uplink: Int, downlink: Int)]) {
        self.loop = loop
        self.sample = sample
        samples.append(Sample(at: loop.clock.now(), bytes: sample()))
        schedule()
    }

    private func schedule() {
        timer = loop.schedule(at: loop.clock.now() + Self.interval) { [weak self] in self?.tick() }
    }

    private func tick() {
        let now = loop.clock.now()
        samples.append(Sample(at: now, bytes: sample()))
        while samples.count > 2, now - samples[1].at >= Self.window { samples.removeFirst() }
        let (oldest, newest) = (samples.first!, samples.last!)
        let seconds = max((newest.at - oldest.at).seconds, 1e-3)
        rates = zip(newest.bytes, oldest.bytes).map { current, previous in
            (Double(max(current.uplink - previous.uplink, 0)) * 8 / seconds,
             Double(max(current.downlink - previous.downlink, 0)) * 8 / seconds)
        }
        schedule()
    }

    func stop() {
        if let timer { loop.cancel(timer) }
        timer = nil
    }
}
