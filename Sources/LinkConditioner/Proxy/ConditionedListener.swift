import Logging

/// What a `linkcond run` listener does with what it accepts.
public enum ListenerKind: Hashable, Sendable {
    /// Relays TCP connections to one upstream.
    case tcp(upstream: Endpoint)
    /// Relays UDP datagrams, one flow per client address, to one upstream.
    case udp(upstream: Endpoint)
    /// Forwards DNS over UDP and TCP to `upstream`, or to the system's resolver when nil.
    case dns(upstream: Endpoint?)
    /// A SOCKS5 and HTTP proxy: every connection names its own destination.
    case proxy(ProxyFrontEndSettings)
    /// A program's namespace (`linkcond exec`): every packet it sends or receives crosses the link.
    case exec(ExecSettings)

    /// The word the ready line uses: `tcp`, `udp`, `dns` or `proxy`.
    public var name: String {
        switch self {
        case .tcp: "tcp"
        case .udp: "udp"
        case .dns: "dns"
        case .proxy: "proxy"
        case .exec: "exec"
        }
    }
}

/// A listen address and what to do with what arrives there.
public struct ListenerSpec: Hashable, Sendable {
    public var listen: Endpoint
    public var kind: ListenerKind

    public init(listen: Endpoint, kind: ListenerKind) {
        self.listen = listen
        self.kind = kind
    }

    /// A TCP relay from `listen` to `upstream`.
    public init(listen: Endpoint, upstream: Endpoint) {
        self.init(listen: listen, kind: .tcp(upstream: upstream))
    }
}

/// A bound listener: its kind, the real address (the kernel's port when port 0 was asked) and its upstream.
public struct BoundListener: Hashable, Sendable {
    public var kind: String
    public var address: SocketAddress
    /// The upstream as given or discovered, nil for a proxy whose clients name their own.
    public var upstream: String?

    /// The line `linkcond run` prints once the listener is bound: `ready KIND LISTEN [UPSTREAM]`.
    public var readyLine: String {
        ["ready", kind, address.description, upstream].compactMap { $0 }.joined(separator: " ")
    }
}

/// Traffic figures of one listener.
public struct ListenerStatus: Sendable {
    public var kind: String
    public var address: SocketAddress
    public var upstream: String?
    /// Live connections (TCP) or flows (UDP).
    public var activeConnections: Int
    /// Of the live TCP connections, those a splice loop carries now (pass-through, on another core).
    public var connectionsOnSpliceLoops = 0
    /// The event loop that owns the listener and its connections: 0 is the main loop, 1 and up the others
    /// (`ProxyOptions.threads`).
    public var loop = 0
    public var connectionsAccepted: Int
    public var connectionsRefused: Int
    /// Of the accepted connections, those relayed through the unconditioned link because their destination matched
    /// `exclude` (proxy front ends and `exec`'s proxy mode): the decision, counted when it is made.
    public var connectionsExcluded = 0
    public var uplink: LinkCounters
    public var downlink: LinkCounters
    /// Messages a protocol-aware listener (DNS) dropped as malformed: too short, badly framed or oversized.
    public var malformedMessages = 0
    /// Bytes a DNS listener holds for its TCP clients now (partial frames, delayed queries, unsent answers), and
    /// the most it ever held at once.
    public var streamBufferedBytes = 0
    public var streamBufferedPeak = 0
    /// Client datagrams the kernel dropped at a full receive buffer before linkcond read them (SO_RXQ_OVFL).
    public var uplinkKernelDrops = 0
    /// Upstream datagrams the kernel dropped at a full receive buffer before linkcond read them.
    public var downlinkKernelDrops = 0
    /// Datagrams a connection fault (a blocked port, a cut flow) kept from crossing, each way (UDP listeners).
    public var uplinkFaultDrops = 0
    public var downlinkFaultDrops = 0
    /// How late released TCP bytes, or datagrams the link delayed, were handed to their sockets, each way (TCP, UDP
    /// and DNS listeners, and `exec`'s packets).
    public var uplinkLateness = LatenessHistogram()
    public var downlinkLateness = LatenessHistogram()
    /// Traffic by destination (an exec'd program's); nil for listeners that keep no such table.
    public var destinations: [StatusReport.Destination]?
    /// The name of the Toxiproxy proxy a `tcp` listener serves; nil for every other listener.
    public var toxiproxy: String?
    /// Connections closed at accept because they came from one of linkcond's own upstream connections: a relay
    /// loop (TCP listeners and proxy front ends).
    public var connectionsLooped = 0
    /// Connections closed at accept because the process was out of descriptors (TCP listeners, proxy front ends and
    /// DNS over TCP), so none waited in the kernel's queue.
    public var connectionsTurnedAway = 0
}

/// A listener of any kind, as the proxy drives it. Lives on the event loop thread.
protocol ConditionedListener: AnyObject {
    var bound: BoundListener { get }
    /// Switches to `profile`; data in flight keeps its order and is not lost.
    func apply(_ profile: Profile)
    /// Resets every live connection (and forgets every flow).
    func resetConnections()
    func status() -> ListenerStatus
    /// The live connections or flows, for the dashboard's list.
    func connectionEntries() -> [ConnectionEntry]
    /// Closes the listening socket and everything it accepted.
    func close()
    /// The user said `online`: a captive portal lets traffic through.
    func cameOnline()
    /// What it listens on in linkcond's network namespace and where it relays, for `OwnListeners`.
    var addresses: ListenerAddresses { get }
}

extension ConditionedListener {
    func cameOnline() {}

    /// A listener with no socket in linkcond's namespace (an exec'd program's, which listens in its own).
    var addresses: ListenerAddresses { ListenerAddresses(name: "\(bound.kind) listener", role: .commandLine) }
}

/// What every listener is built from. Lives on the event loop thread.
struct ListenerContext {
    var loop: EventLoop
    var profile: Profile
    var options: ProxyOptions
    var readBuffer: ReadBuffer
    var logger: Logger
    /// The cap on bytes held across every TCP connection of the proxy.
    var bufferBudget: BufferBudget
    /// Where connections and lookups are recorded (`run --record`); nil when not recording.
    var recorder: TrafficRecorder?
    /// Where plain TCP listeners hand pass-through connections; nil keeps them on the main loop.
    var spliceLoops: SpliceLoops?
    /// Every address the proxy listens on: no relay reaches one (see `OwnListeners`).
    var ownListeners: OwnListeners
    /// Descriptors kept for when the process runs out, so listeners still drain their queues.
    var descriptorReserve: DescriptorReserve

    /// The seeds of a listener's two directions: from the profile, so runs repeat, or fresh; never equal.
    var directionSeeds: (uplink: UInt64, downlink: UInt64) {
        StreamLink.directionSeeds(profileSeed: profile.seed ?? UInt64.random(in: 0...UInt64.max))
    }
}

extension StreamLink {
    /// The seeds a listener gives its uplink and downlink for a profile's `seed`, so a test can replay its draws.
    public static func directionSeeds(profileSeed seed: UInt64) -> (uplink: UInt64, downlink: UInt64) {
        (seed, seed &+ 0x9E37_79B9_7F4A_7C15)
    }
}

/// Builds the listener for `spec`, bound to `address`; `upstream` holds what `spec`'s upstream resolved to.
func makeListener(
    _ spec: ListenerSpec, address: SocketAddress, upstream: [SocketAddress],
    context: ListenerContext
) throws -> ConditionedListener {
    switch spec.kind {
    case .tcp(let endpoint):
        let listener = try TCPListener(
            address: address, upstream: endpoint, upstreamAddresses: upstream, context: context)
        listener.spliceLoops = context.spliceLoops
        return listener
    case .udp(let endpoint):
        return try UDPListener(address: address, upstream: endpoint, upstreamAddresses: upstream, context: context)
    case .dns:
        return try DNSForwarder(address: address, upstream: upstream, context: context)
    case .proxy(let settings):
        return try ProxyFrontEnd(address: address, settings: settings, context: context)
    case .exec(let settings):
        return try makeExecListener(settings, context: context)
    }
}
