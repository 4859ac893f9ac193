import LinkModel

/// What one direction of a link does to the data crossing it: the shape the link model reads, and the
/// connection faults the composition applies.
///
/// A `nil` bandwidth is unlimited; zero delay, jitter and loss are no impairment.
public struct DirectionProfile: Hashable, Sendable {
    /// The bottleneck and the impairments, as the link model takes them.
    public var shape = DirectionShape()
    /// Connection faults of this direction: cuts, slow close, slicing, slow first byte.
    public var faults = FaultSettings()

    // The shape's parameters, read and set through the profile as profile code always has (see `DirectionShape`).
    public var bandwidth: BitRate? {
        get { shape.bandwidth }
        set { shape.bandwidth = newValue }
    }
    public var delay: Duration {
        get { shape.delay }
        set { shape.delay = newValue }
    }
    public var jitter: Duration {
        get { shape.jitter }
        set { shape.jitter = newValue }
    }
    public var loss: Percentage {
        get { shape.loss }
        set { shape.loss = newValue }
    }
    public var queue: ByteCount {
        get { shape.queue }
        set { shape.queue = newValue }
    }
    public var burst: ByteCount? {
        get { shape.burst }
        set { shape.burst = newValue }
    }
    public var accounting: RateAccounting {
        get { shape.accounting }
        set { shape.accounting = newValue }
    }
    public var lossModel: LossModel {
        get { shape.lossModel }
        set { shape.lossModel = newValue }
    }
    public var gilbertElliott: GilbertElliottParameters {
        get { shape.gilbertElliott }
        set { shape.gilbertElliott = newValue }
    }
    public var duplicate: Percentage {
        get { shape.duplicate }
        set { shape.duplicate = newValue }
    }
    public var reorder: Percentage {
        get { shape.reorder }
        set { shape.reorder = newValue }
    }
    public var declaredImpairments: DeclaredImpairments {
        get { shape.declaredImpairments }
        set { shape.declaredImpairments = newValue }
    }
    public var queueCountsPackets: Bool {
        get { shape.queueCountsPackets }
        set { shape.queueCountsPackets = newValue }
    }
    public var queueManagement: QueueManagement {
        get { shape.queueManagement }
        set { shape.queueManagement = newValue }
    }
    public var trace: DeliveryTrace? {
        get { shape.trace }
        set { shape.trace = newValue }
    }

    /// The bottleneck's queue limit: `queue` in bytes, or in packets when given in packets.
    public var queueLimit: QueueLimit { shape.queueLimit }

    public static let defaultQueue = DirectionShape.defaultQueue

    public init(
        bandwidth: BitRate? = nil, delay: Duration = .zero, jitter: Duration = .zero,
        loss: Percentage = .zero, queue: ByteCount = DirectionProfile.defaultQueue, burst: ByteCount? = nil,
        lossModel: LossModel = .random, gilbertElliott: GilbertElliottParameters = GilbertElliottParameters(),
        duplicate: Percentage = .zero, reorder: Percentage = .zero
    ) {
        shape = DirectionShape(
            bandwidth: bandwidth, delay: delay, jitter: jitter, loss: loss, queue: queue, burst: burst,
            lossModel: lossModel, gilbertElliott: gilbertElliott, duplicate: duplicate, reorder: reorder)
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
    /// What happens to each connection as a whole: connect stall, blocked ports, captive portal.
    public var connection = ConnectionSettings()

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
    /// the same connection fault and connection-wide settings. Names, DNS delay, exclusions and TCP settings reach
    /// only connections opened later.
    public func treatsOpenStreamsAs(_ other: Profile) -> Bool {
        uplink == other.uplink && downlink == other.downlink && fault == other.fault && connection == other.connection
    }

    /// The profile that changes nothing.
    public static let none = Profile(name: "none", description: "No impairment")

    /// The round-trip time the profile adds, used to size TCP retransmission stalls.
    public var roundTrip: Duration { uplink.delay + downlink.delay }
}
