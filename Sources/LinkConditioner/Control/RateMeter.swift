import DequeModule

/// Each listener's delivered rate per direction over the last second, kept up to date on the loop.
///
/// The loop samples the delivered byte counters four times a second and keeps the samples of the last second, so a
/// single read (the first `linkcond status`, `/metrics`, the dashboard) sees the running instance's current rate
/// instead of needing two samples of its own; the rate follows a change within a quarter of a second.
///
/// When no counter moved for a whole window and no connection holds bytes, the meter stops its timer (an idle
/// linkcond wakes for nothing) and starts again from a fresh sample at the loop's next readiness event, which any
/// traffic begins with.
///
/// Once a second it adds a point to its `RateHistory` (ten minutes, bounded), which the dashboard reads on load.
///
/// Lives on the event loop thread.
final class RateMeter {
    /// How often the counters are sampled.
    static let interval = Duration.milliseconds(250)
    /// The span a rate is measured over once the meter has run that long.
    static let window = Duration.seconds(1)

    /// Bytes delivered so far per direction, keyed by listener so listeners added or removed while running
    /// (Toxiproxy proxies) never take another's figures.
    typealias Counts = [(listener: ObjectIdentifier, uplink: Int, downlink: Int)]

    private struct Sample {
        var at: Instant
        var bytes: [ObjectIdentifier: (uplink: Int, downlink: Int)]
    }

    private let loop: EventLoop
    private let sample: () -> Counts
    /// Whether connections hold bytes that timers alone may still deliver (delayed data), which keeps it awake.
    private let isHolding: () -> Bool
    private var samples: Deque<Sample> = []
    /// Bits per second per listener, uplink and downlink, over the samples kept; zero before the first interval.
    private(set) var rates: [ObjectIdentifier: (uplink: Double, downlink: Double)] = [:]
    private var timer: EventLoop.TimerID?
    /// The second's point, from the summed rates (uplink, downlink); the proxy adds queue delays and capacity.
    private let describe: (Double, Double) -> RateHistory.Point
    private var history = RateHistory()
    private var lastRecorded: Instant?

    /// The proxy's other event loops, whose listeners `sample` reads too: their traffic raises no event on this loop,
    /// so each is asked to wake the meter at its own next readiness event.
    private let otherLoops: [EventLoop]

    /// Starts sampling `sample` (every listener's delivered bytes, uplink and downlink). Called on the loop thread.
    init(
        loop: EventLoop, otherLoops: [EventLoop] = [], sample: @escaping () -> Counts,
        isHolding: @escaping () -> Bool = { false },
        describe: @escaping (Double, Double) -> RateHistory.Point = {
            RateHistory.Point(uplinkBitsPerSecond: $0, downlinkBitsPerSecond: $1)
        }
    ) {
        self.loop = loop
        self.otherLoops = otherLoops
        self.sample = sample
        self.isHolding = isHolding
        self.describe = describe
        samples.append(Sample(at: loop.clock.now(), bytes: Self.keyed(sample())))
        schedule()
    }

    private static func keyed(_ counts: Counts) -> [ObjectIdentifier: (uplink: Int, downlink: Int)] {
        Dictionary(counts.map { ($0.listener, ($0.uplink, $0.downlink)) }, uniquingKeysWith: { first, _ in first })
    }

    private func schedule() {
        timer = loop.schedule(at: loop.clock.now() + Self.interval) { [weak self] in self?.tick() }
    }

    private func tick() {
        let now = loop.clock.now()
        samples.append(Sample(at: now, bytes: Self.keyed(sample())))
        while samples.count > 2, now - samples[1].at >= Self.window { samples.removeFirst() }
        let (oldest, newest) = (samples.first!, samples.last!)
        let seconds = max((newest.at - oldest.at).seconds, 1e-3)
        rates = [:]
        for (listener, current) in newest.bytes {
            guard let previous = oldest.bytes[listener] else { continue }
            rates[listener] = (
                Double(max(current.uplink - previous.uplink, 0)) * 8 / seconds,
                Double(max(current.downlink - previous.downlink, 0)) * 8 / seconds
            )
        }
        recordSecond(at: now)
        if newest.at - oldest.at >= Self.window, Self.same(oldest.bytes, newest.bytes), !isHolding() {
            timer = nil
            isSleeping = true
            loop.whenNextEvent { [weak self] in self?.wake() }
            wakeOnOtherLoopsEvents()
            return
        }
        schedule()
    }

    /// Adds the history's point when a second passed since the last one (less half a tick, for a late loop).
    private func recordSecond(at now: Instant) {
        if let lastRecorded, now - lastRecorded < RateHistory.spacing - Self.interval / 2 { return }
        lastRecorded = now
        let totals = rates.values.reduce((0.0, 0.0)) { ($0.0 + $1.uplink, $0.1 + $1.downlink) }
        history.record(describe(totals.0, totals.1), at: now)
    }

    /// The history's points up to now: zeros for the seconds slept fill it to the present.
    func historyPoints() -> [(at: Instant, point: RateHistory.Point)] {
        isSleeping ? history.points(idleUntil: loop.clock.now()) : Array(history.points)
    }

    /// Whether the meter stopped its timer because nothing moved.
    private(set) var isSleeping = false

    /// Asks each other loop to post `wake` to this one before handling its next readiness event. A wake that arrives
    /// once the meter is awake again does nothing.
    private func wakeOnOtherLoopsEvents() {
        let meter = LoopBound(self)
        let loop = self.loop
        for other in otherLoops {
            _ = other.execute {
                other.whenNextEvent { _ = loop.execute { meter.value.wake() } }
            }
        }
    }

    /// Starts sampling again from now, after the loop saw a readiness event.
    private func wake() {
        guard isSleeping else { return }
        isSleeping = false
        samples = [Sample(at: loop.clock.now(), bytes: Self.keyed(sample()))]
        schedule()
    }

    private static func same(
        _ a: [ObjectIdentifier: (uplink: Int, downlink: Int)],
        _ b: [ObjectIdentifier: (uplink: Int, downlink: Int)]
    ) -> Bool {
        a.count == b.count && a.allSatisfy { key, value in b[key].map { $0 == value } ?? false }
    }

    func stop() {
        if let timer { loop.cancel(timer) }
        timer = nil
        isSleeping = false
    }
}
