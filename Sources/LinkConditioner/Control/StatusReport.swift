/// A running proxy's state as `linkcond status --json` prints it and the control endpoint serves it.
public struct StatusReport: Codable, Sendable {
    public struct ScenarioState: Codable, Sendable {
        public var name: String
        /// The scenario file line of the step applied last.
        public var step: Int?
        /// When that step was applied, in seconds from the start of its repetition, as the scenario's own clock
        /// read it on the event loop: at or after the step's time, later by however late the loop woke (absent
        /// before the first step and from an older linkcond's answer).
        public var stepAppliedSeconds: Double?
        public var elapsedSeconds: Double
        public var repetitions: Int
        public var finished: Bool
        /// The step in force as its author wrote it (`edge`, `set downlink.delay = 800 ms`); nil before the first
        /// step and absent from an older linkcond's answer.
        public var currentStep: String?
        /// The step due next as written; nil once a scenario that does not repeat applied its last step.
        public var nextStep: String?
        /// Seconds until the next step applies; nil without a next step.
        public var secondsToNextStep: Double?
        /// Whether the next step starts the scenario over (`repeat`); nil without a next step.
        public var nextStepStartsOver: Bool?
    }

    /// One direction's counters.
    public struct Direction: Codable, Sendable {
        public var bytesDelivered: Int
        public var queuedBytes: Int
        public var inFlightBytes: Int
        public var segmentsLost: Int
        /// ACKs of this direction's TCP flows lost on the reverse direction; their senders never resend for them.
        public var acksLost: Int
        /// Handshake segments resent after a loss: SYNs on the uplink, SYN-ACKs on the downlink.
        public var handshakeRetransmissions: Int
        /// Datagrams delivered (UDP and DNS listeners).
        public var datagramsDelivered: Int
        /// Datagrams dropped: tail drop at a full queue, random loss, Gilbert-Elliott burst loss.
        public var datagramsDropped: Int
        /// Datagrams the kernel dropped at linkcond's full receive buffer before linkcond read them: loss no
        /// profile asked for, shown so it is never silent.
        public var kernelDrops: Int
        /// Datagrams a connection fault (a blocked port, a cut flow) kept from crossing (UDP listeners).
        public var faultDrops: Int
        public var duplicates: Int
        /// Datagrams delivered with one payload bit flipped (`corrupt`); absent from an older linkcond's answer.
        public var datagramsCorrupted: Int?
        /// Delivered payload over the last second.
        public var bitsPerSecond: Double
        /// The profile's rate for this direction now (following scenario steps and `set`), which `bitsPerSecond`
        /// reads against; absent when the profile sets none, and from an older linkcond's answer.
        public var bandwidthBitsPerSecond: Double?
        /// How long a byte arriving now waits in the queue before the link's rate lets it through; nil when the
        /// link carries nothing (offline or zero rate) and bytes are queued.
        public var queueDelaySeconds: Double?
        /// How late linkcond handed released TCP bytes, or datagrams its link delayed, to their sockets, after the
        /// instant its model released them; nil before any. Every emulated delay was that much longer.
        public var deliveryLateness: Lateness?
    }

    /// Quantiles of a direction's delivery lateness since the start, over its writes of released bytes.
    public struct Lateness: Codable, Sendable, Equatable {
        public var writes: Int
        public var p50Seconds: Double
        public var p99Seconds: Double
        public var maxSeconds: Double
        public var sumSeconds: Double

        /// The figures of `histogram`; nil when it recorded nothing.
        init?(_ histogram: LatenessHistogram) {
            guard let p50 = histogram.quantile(0.5), let p99 = histogram.quantile(0.99) else { return nil }
            writes = histogram.samples
            p50Seconds = p50.seconds
            p99Seconds = p99.seconds
            maxSeconds = histogram.maximum.seconds
            sumSeconds = histogram.total.seconds
        }
    }

    /// Traffic to one destination of an exec'd program.
    public struct Destination: Codable, Sendable, Equatable {
        /// `IP:port` as the program named it, or `other` for the destinations past the table's limit.
        public var destination: String
        /// The name the program looked up for its address through the DNS forwarder, when it did.
        public var host: String?
        /// TCP connections and UDP flows opened to it.
        public var connections: Int
        /// Payload bytes the program sent to it, and received from it.
        public var bytesUp: Int
        public var bytesDown: Int

        public init(
            destination: String, host: String? = nil, connections: Int = 0, bytesUp: Int = 0, bytesDown: Int = 0
        ) {
            self.destination = destination
            self.host = host
            self.connections = connections
            self.bytesUp = bytesUp
            self.bytesDown = bytesDown
        }
    }

    public struct Listener: Codable, Sendable {
        public var kind: String
        public var address: String
        public var upstream: String?
        public var activeConnections: Int
        /// Of the live connections, those a splice loop carries now (absent from an older linkcond's answer).
        public var connectionsOnSpliceLoops: Int?
        /// The event loop thread that owns the listener, its link and its connections: 0 is the main loop, 1 and up
        /// the others of `run --threads` (absent from an older linkcond's answer).
        public var loop: Int?
        public var connectionsAccepted: Int
        public var connectionsRefused: Int
        /// Of the accepted connections, those relayed untouched because their destination matched `exclude`
        /// (proxy listeners and exec's proxy mode; absent from an older linkcond's answer).
        public var connectionsExcluded: Int?
        /// Connections closed at accept because they came from one of linkcond's own upstream connections (a relay
        /// loop); absent from an older linkcond's answer.
        public var connectionsLooped: Int?
        /// Connections closed at accept because the process was out of descriptors; absent from an older
        /// linkcond's answer.
        public var connectionsTurnedAway: Int?
        /// Messages a DNS listener dropped as malformed.
        public var malformedMessages: Int
        public var uplink: Direction
        public var downlink: Direction
        /// Traffic by destination, busiest first (kind `exec`); nil for listeners that keep no such table.
        public var destinations: [Destination]?
        /// The name of the Toxiproxy proxy a `tcp` listener serves (its kind stays `tcp`, which it is); absent for
        /// every other listener and from an older linkcond's answer.
        public var toxiproxy: String?

        init(_ status: ListenerStatus, uplinkBitsPerSecond: Double, downlinkBitsPerSecond: Double, conditions: Profile)
        {
            kind = status.kind
            address = status.address.description
            upstream = status.upstream
            activeConnections = status.activeConnections
            connectionsOnSpliceLoops = status.connectionsOnSpliceLoops
            loop = status.loop
            connectionsAccepted = status.connectionsAccepted
            connectionsRefused = status.connectionsRefused
            connectionsExcluded = status.connectionsExcluded
            connectionsLooped = status.connectionsLooped
            connectionsTurnedAway = status.connectionsTurnedAway
            malformedMessages = status.malformedMessages
            uplink = Direction(
                status.uplink, kernelDrops: status.uplinkKernelDrops, faultDrops: status.uplinkFaultDrops,
                lateness: status.uplinkLateness, bitsPerSecond: uplinkBitsPerSecond,
                bandwidth: conditions.uplink.bandwidth)
            downlink = Direction(
                status.downlink, kernelDrops: status.downlinkKernelDrops, faultDrops: status.downlinkFaultDrops,
                lateness: status.downlinkLateness, bitsPerSecond: downlinkBitsPerSecond,
                bandwidth: conditions.downlink.bandwidth)
            destinations = status.destinations
            toxiproxy = status.toxiproxy
        }
    }

    /// The TCP handshake a new connection makes under the current conditions, for explaining SYNs resent on a
    /// link that loses nothing.
    public struct Handshake: Codable, Sendable {
        /// The uplink's delay plus the downlink's: a SYN's trip and its SYN-ACK's. Over Linux's 1 s initial
        /// retransmission timeout (`HandshakeAttempts.initialTimeout`) the client resends its SYN before the answer
        /// arrives, as the kernel would, with no loss.
        public var roundTripSeconds: Double
        /// Whether neither direction can lose a TCP packet (no random loss, no burst loss).
        public var lossless: Bool

        init(_ conditions: Profile) {
            roundTripSeconds = conditions.roundTrip.seconds
            lossless = !conditions.uplink.shape.losesTCPPackets && !conditions.downlink.shape.losesTCPPackets
        }
    }

    /// The running linkcond's version.
    public var version: String = linkcondVersion
    public var profile: String
    public var profileSummary: String
    /// `refuse` or `blackhole` while offline, else nil.
    public var offline: String?
    public var scenario: ScenarioState?
    public var listeners: [Listener]
    /// Empty splice pipes the event loop keeps for the next connections, two descriptors each (absent from an
    /// older linkcond's answer).
    public var splicePipesKept: Int?
    /// Splice loop threads carrying pass-through TCP connections besides the main loop (`run --threads` minus one;
    /// absent from an older linkcond's answer).
    public var spliceLoops: Int?
    /// Times a connection was handed to a splice loop since the start; one that comes back for a change of
    /// conditions and leaves again counts twice (absent from an older linkcond's answer).
    public var spliceHandOvers: Int?
    /// The main loop's SCHED_FIFO priority when it runs in the real-time class (`run --realtime`); absent otherwise.
    public var mainLoopRealtimePriority: Int?
    /// The handshake under the current conditions (absent from an older linkcond's answer).
    public var handshake: Handshake?
}

extension StatusReport.Direction {
    init(
        _ counters: LinkCounters, kernelDrops: Int, faultDrops: Int = 0,
        lateness: LatenessHistogram = LatenessHistogram(),
        bitsPerSecond: Double, bandwidth: BitRate?
    ) {
        bytesDelivered = counters.bytesDelivered
        queuedBytes = counters.queuedBytes
        inFlightBytes = counters.inFlightBytes
        segmentsLost = counters.segmentsLost
        acksLost = counters.acksLost
        handshakeRetransmissions = counters.handshakeRetransmissions
        datagramsDelivered = counters.datagramsDelivered
        datagramsDropped = counters.tailDrops + counters.codelDrops + counters.randomLosses + counters.burstLosses
        self.kernelDrops = kernelDrops
        self.faultDrops = faultDrops
        duplicates = counters.duplicates
        datagramsCorrupted = counters.datagramsCorrupted
        self.bitsPerSecond = bitsPerSecond
        bandwidthBitsPerSecond = bandwidth?.bitsPerSecond
        queueDelaySeconds = Self.queueDelay(queuedBytes: counters.queuedBytes, bandwidth: bandwidth)
        deliveryLateness = StatusReport.Lateness(lateness)
    }

    /// The queue's bytes at the link's rate: no wait without a rate limit, none to say when nothing passes.
    static func queueDelay(queuedBytes: Int, bandwidth: BitRate?) -> Double? {
        guard queuedBytes > 0, let bandwidth else { return 0 }
        guard bandwidth.bitsPerSecond > 0 else { return nil }
        return Double(queuedBytes) * 8 / bandwidth.bitsPerSecond
    }
}
