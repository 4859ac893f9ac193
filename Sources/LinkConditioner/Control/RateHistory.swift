import DequeModule

/// The instance's throughput, queue delay and link capacity, one point a second for the last ten minutes, so the
/// dashboard draws what happened before it was opened (`GET /history`).
///
/// One point sums every listener (rates) or takes the worst (queue delay), as the dashboard's charts do, so the
/// memory is bounded by `capacity` points whatever the listeners or their peers do. The rate meter stops sampling
/// while nothing moves; the seconds it slept read as zeros, both when it records again and when the history is read
/// during the sleep, so a chart drawn from it falls to zero across an idle gap instead of joining its two ends.
/// Time is passed in. A value owned by the rate meter on the event loop thread.
struct RateHistory {
    /// The figures of one second.
    struct Point: Equatable {
        var uplinkBitsPerSecond: Double
        var downlinkBitsPerSecond: Double
        /// The worst listener's queue delay; nil when a link carries nothing and holds bytes (stalled).
        var uplinkQueueDelaySeconds: Double? = 0
        var downlinkQueueDelaySeconds: Double? = 0
        /// The profile's rate; nil when it sets none.
        var uplinkCapacityBitsPerSecond: Double? = nil
        var downlinkCapacityBitsPerSecond: Double? = nil

        /// A second in which nothing moved and nothing waited, on a link of the given capacity.
        static func idle(capacityOf point: Point) -> Point {
            Point(
                uplinkBitsPerSecond: 0, downlinkBitsPerSecond: 0, uplinkQueueDelaySeconds: 0,
                downlinkQueueDelaySeconds: 0, uplinkCapacityBitsPerSecond: point.uplinkCapacityBitsPerSecond,
                downlinkCapacityBitsPerSecond: point.downlinkCapacityBitsPerSecond)
        }
    }

    /// Ten minutes of points, at most.
    static let capacity = 600
    /// The spacing of the points.
    static let spacing = Duration.seconds(1)

    private(set) var points: Deque<(at: Instant, point: Point)> = []

    /// Adds `point` for the second ending at `now`, after zeros for the seconds slept since the last point, and
    /// drops the points past `capacity`.
    mutating func record(_ point: Point, at now: Instant) {
        fillIdleSeconds(before: now)
        points.append((now, point))
        while points.count > Self.capacity { points.removeFirst() }
    }

    /// The points with zeros for the seconds from the last point up to `now`: the history of a meter that sleeps.
    func points(idleUntil now: Instant) -> [(at: Instant, point: Point)] {
        var history = self
        history.fillIdleSeconds(before: now + Self.spacing)
        return Array(history.points)
    }

    /// Appends a zero point per whole second between the last point and `now` (exclusive), at most `capacity`.
    private mutating func fillIdleSeconds(before now: Instant) {
        guard let last = points.last else { return }
        // A point late by up to half a second is the loop being late, not a second slept.
        let missed = Int(((now - last.at).seconds - 0.5) / Self.spacing.seconds)
        guard missed >= 1 else { return }
        let idle = Point.idle(capacityOf: last.point)
        let first = max(1, missed - Self.capacity + 1)
        if missed >= Self.capacity { points.removeAll() }
        for second in first...missed {
            points.append((last.at + Self.spacing * second, idle))
        }
        while points.count > Self.capacity { points.removeFirst() }
    }
}

/// `GET /history`: the last ten minutes of throughput, queue delay and capacity, one point a second, oldest first.
public struct HistoryReport: Codable, Sendable, Equatable {
    public struct Point: Codable, Sendable, Equatable {
        /// The end of the second, in seconds since 1970 (the instance's wall clock when it answered, less the
        /// point's age on its monotonic clock).
        public var time: Double
        /// Delivered payload in that second, summed over the listeners.
        public var uplinkBitsPerSecond: Double
        public var downlinkBitsPerSecond: Double
        /// The worst listener's queue delay; absent when a link carried nothing while holding bytes (stalled).
        public var uplinkQueueDelaySeconds: Double?
        public var downlinkQueueDelaySeconds: Double?
        /// The profile's rate then; absent when it set none.
        public var uplinkCapacityBitsPerSecond: Double?
        public var downlinkCapacityBitsPerSecond: Double?
    }

    /// The spacing of the points, in seconds.
    public var intervalSeconds: Double
    /// At most 600 points.
    public var points: [Point]

    /// `points`, timed on the wall clock: `wallClock` is the Unix time at `now`.
    init(_ points: [(at: Instant, point: RateHistory.Point)], now: Instant, wallClock: Double) {
        intervalSeconds = RateHistory.spacing.seconds
        self.points = points.map { at, point in
            Point(
                time: wallClock - (now - at).seconds, uplinkBitsPerSecond: point.uplinkBitsPerSecond,
                downlinkBitsPerSecond: point.downlinkBitsPerSecond,
                uplinkQueueDelaySeconds: point.uplinkQueueDelaySeconds,
                downlinkQueueDelaySeconds: point.downlinkQueueDelaySeconds,
                uplinkCapacityBitsPerSecond: point.uplinkCapacityBitsPerSecond,
                downlinkCapacityBitsPerSecond: point.downlinkCapacityBitsPerSecond)
        }
    }
}
