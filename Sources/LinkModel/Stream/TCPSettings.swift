/// How the emulated TCP senders of a profile behave (`tcp.*` keys); the defaults are Linux's.
public struct TCPSettings: Hashable, Sendable {
    /// The congestion control (`tcp.congestion`, Linux's tcp_congestion_control).
    public var congestion: CongestionAlgorithm = .cubic
    /// The initial window in segments (`tcp.initial-window`, Linux's TCP_INIT_CWND).
    public var initialWindow = 10
    /// Whether an idle sender restarts from the initial window (`tcp.slow-start-after-idle`,
    /// net.ipv4.tcp_slow_start_after_idle).
    public var slowStartAfterIdle = true
    /// Whether senders send new data in units of several segments, as Linux's TCP does (TSO/GSO units)
    /// (`tcp.segmentation-offload`); off, every segment travels alone.
    public var segmentationOffload = true

    /// The largest accepted initial window: a bound for the profile value, far above any real stack's.
    public static let maximumInitialWindow = 1_000

    public init(
        congestion: CongestionAlgorithm = .cubic, initialWindow: Int = 10, slowStartAfterIdle: Bool = true,
        segmentationOffload: Bool = true
    ) {
        self.congestion = congestion
        self.initialWindow = initialWindow
        self.slowStartAfterIdle = slowStartAfterIdle
        self.segmentationOffload = segmentationOffload
    }
}
