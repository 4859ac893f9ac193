/// What one direction of a link does to the data crossing it: the bottleneck and the impairments the link model
/// reads. A profile's `DirectionProfile` holds one, beside the connection faults the model knows nothing of.
///
/// A `nil` bandwidth is unlimited; zero delay, jitter and loss are no impairment.
public struct DirectionShape: Hashable, Sendable {
    /// The bottleneck rate, in bits per second of what `accounting` counts; `nil` is unlimited.
    public var bandwidth: BitRate?
    /// What `bandwidth`, a byte `queue`, `burst` and a trace's opportunities count: payload bytes, or Ethernet
    /// frames as tc counts them (`bandwidth.counts`).
    public var accounting: RateAccounting = .payload
    /// One-way propagation delay added to every byte.
    public var delay: Duration = .zero
    /// Random variation added to `delay`, uniform in ±jitter (never reorders a TCP stream).
    public var jitter: Duration = .zero
    /// Probability that a packet (a datagram, or a TCP segment on the emulated path) is lost.
    public var loss: Percentage = .zero
    /// The link's buffer: bytes that may wait behind the bandwidth cap before senders are pushed back.
    public var queue: ByteCount = DirectionShape.defaultQueue
    /// How many bytes the token bucket lets through at line speed after an idle period.
    public var burst: ByteCount?
    /// How packets are lost: independently at `loss`, or in bursts by the Gilbert-Elliott model (datagrams and
    /// TCP segments alike).
    public var lossModel: LossModel = .random
    /// The Gilbert-Elliott model's parameters, used when `lossModel` is `.gilbertElliott`.
    public var gilbertElliott = GilbertElliottParameters()
    /// Probability that a datagram is delivered twice.
    public var duplicate: Percentage = .zero
    /// Probability that a datagram is held back behind later ones (by `Reordering.holdBack(delay:)`).
    public var reorder: Percentage = .zero
    /// The probabilities of the datagram impairments that declare themselves (`ProbabilityImpairment`).
    public var declaredImpairments = DeclaredImpairments()
    /// Whether `queue` was given in packets (`queue = 100 packets`): the bottleneck then counts packets.
    public var queueCountsPackets = false
    /// The bottleneck's queue discipline (`queue.discipline` and its parameters).
    public var queueManagement = QueueManagement()
    /// A capacity trace that replaces `bandwidth` (`trace`), or nil.
    public var trace: DeliveryTrace?

    /// The bottleneck's queue limit: `queue` in bytes, or in packets when given in packets.
    public var queueLimit: QueueLimit {
        queueCountsPackets ? .packets(max(queue.bytes / Self.packetSize, 1)) : .bytes(queue.bytes)
    }

    public static let defaultQueue = ByteCount.kib(256)

    /// The bytes one packet stands for when a queue is counted in packets.
    public static let packetSize = 1500

    public init(
        bandwidth: BitRate? = nil, delay: Duration = .zero, jitter: Duration = .zero,
        loss: Percentage = .zero, queue: ByteCount = DirectionShape.defaultQueue, burst: ByteCount? = nil,
        lossModel: LossModel = .random, gilbertElliott: GilbertElliottParameters = GilbertElliottParameters(),
        duplicate: Percentage = .zero, reorder: Percentage = .zero
    ) {
        self.bandwidth = bandwidth
        self.delay = delay
        self.jitter = jitter
        self.loss = loss
        self.queue = queue
        self.burst = burst
        self.lossModel = lossModel
        self.gilbertElliott = gilbertElliott
        self.duplicate = duplicate
        self.reorder = reorder
    }
}
