/// What one direction of a link does to the data crossing it.
///
/// A `nil` bandwidth is unlimited; zero delay, jitter and loss are no impairment.
public struct DirectionProfile: Hashable, Sendable {
    /// The bottleneck rate, in payload bits per second; `nil` is unlimited.
    public var bandwidth: BitRate?
    /// One-way propagation delay added to every byte.
    public var delay: Duration = .zero
    /// Random variation added to `delay`, uniform in ±jitter (never reorders a TCP stream).
    public var jitter: Duration = .zero
    /// Probability that a packet (a datagram, or a TCP segment on the emulated path) is lost.
    public var loss: Percentage = .zero
    /// The link's buffer: bytes that may wait behind the bandwidth cap before senders are pushed back.
    public var queue: ByteCount = DirectionProfile.defaultQueue
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
    /// Connection faults: cuts, slow close, slicing, slow first byte, connect stall, blocked ports, captive portal.
    public var faults = FaultSettings()

    /// The bottleneck's queue limit: `queue` in bytes, or in packets when given in packets.
    public var queueLimit: QueueLimit {
        queueCountsPackets ? .packets(max(queue.bytes / ProfileValue.packetSize, 1)) : .bytes(queue.bytes)
    }

    public static let defaultQueue = ByteCount.kib(256)

    public init(
        bandwidth: BitRate? = nil, delay: Duration = .zero, jitter: Duration = .zero,
        loss: Percentage = .zero, queue: ByteCount = DirectionProfile.defaultQueue, burst: ByteCount? = nil,
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

/// What happens to new and existing connections regardless of rate and delay.
public enum ConnectionFault: String, Hashable, Sendable, CaseIterable {
    /// Connections work normally.
    case none
    /// Connections are accepted but nothing is forwarded in either direction (TCP's view of 100 % loss).
    case blackhole
    /// New connections are reset as soon as they are accepted.
    case refuse
}

/// A complete description of the network a proxy presents: both directions, DNS delay and faults.
///
/// Uplink is client → upstream; downlink is upstream → client.
public struct Profile: Hashable, Sendable {
    public var name: String
    public var description: String
    public var uplink: DirectionProfile
    public var downlink: DirectionProfile
    /// Latency added to DNS lookups made by, or relayed through, linkcond.
    public var dnsDelay: Duration
    public var fault: ConnectionFault
    /// Seed for every random draw (jitter, loss); `nil` picks one at start.
    public var seed: UInt64?
    /// Destinations a proxy front end relays untouched, through an unconditioned link.
    public var exclude: [HostPattern] = []
    /// How the emulated TCP senders on the link behave (`tcp.*` keys).
    public var tcp = TCPSettings()

    public init(
        name: String = "", description: String = "",
        uplink: DirectionProfile = DirectionProfile(), downlink: DirectionProfile = DirectionProfile(),
        dnsDelay: Duration = .zero, fault: ConnectionFault = .none, seed: UInt64? = nil
    ) {
        self.name = name
        self.description = description
        self.uplink = uplink
        self.downlink = downlink
        self.dnsDelay = dnsDelay
        self.fault = fault
        self.seed = seed
    }

    /// Whether a TCP stream already open fares the same under `other`: the same links and faults both ways, and
    /// the same connection fault. Names, DNS delay, exclusions and TCP settings reach only connections opened later.
    public func treatsOpenStreamsAs(_ other: Profile) -> Bool {
        uplink == other.uplink && downlink == other.downlink && fault == other.fault
    }

    /// The profile that changes nothing.
    public static let none = Profile(name: "none", description: "No impairment")

    /// The round-trip time the profile adds, used to size TCP retransmission stalls.
    public var roundTrip: Duration { uplink.delay + downlink.delay }
}
