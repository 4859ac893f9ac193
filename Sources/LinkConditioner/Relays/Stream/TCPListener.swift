import Foundation
import Logging

/// Tunables of the proxy that are not part of the network being emulated.
public struct ProxyOptions: Sendable {
    /// Bytes held per connection and direction before reading from the sender stops.
    public var connectionBuffer: Int = 4 * 1024 * 1024
    /// Bytes held across every TCP connection and direction of the proxy before all reading stops.
    public var maximumBuffered: Int = 256 * 1024 * 1024
    /// A UDP flow (one client address) with no datagram either way for this long is forgotten.
    public var udpIdleTimeout: Duration = .seconds(60)
    /// UDP flows a listener keeps at once; datagrams that would open more are dropped.
    public var udpFlowLimit: Int = 4096
    /// UDP flows one client host may hold at once (one per source port), so one client cannot take them all.
    public var udpFlowsPerClient: Int = 256
    /// A DNS-over-TCP connection is closed when neither a complete query nor an answer crossed it for this long
    /// (plus the profile's `dns.delay`), so a client trickling bytes cannot hold it forever.
    public var dnsTCPIdleTimeout: Duration = .seconds(10)
    /// Where `run --record` writes its event log; nil records nothing.
    public var recording: RecordingOptions?
    /// Event loop threads: the main loop plus `threads - 1` others. The `tcp` listeners are spread over all of them
    /// round-robin, each owned with its link and connections by one loop, which shapes and splices them; the other
    /// loops also carry the main loop's pass-through TCP connections by splice(2). One (the default for a proxy made
    /// in-process, such as a test suite's) keeps everything on the main loop, so its behaviour does not depend on
    /// the machine's cores; at least one.
    public var threads: Int = 1
    /// SCHED_FIFO priority for the main loop, which shapes and times every delivery, so a loaded machine cannot hold
    /// its wake-ups back, and for each other loop once it owns a listener; nil keeps the default scheduling class.
    /// Loops that only splice, and every other thread, keep the default.
    public var realtimePriority: Int32?

    /// One event loop thread per online core: `linkcond run`'s default.
    public static var threadsPerCore: Int { max(1, ProcessInfo.processInfo.activeProcessorCount) }

    public init(
        connectionBuffer: Int = 4 * 1024 * 1024, maximumBuffered: Int = 256 * 1024 * 1024,
        udpIdleTimeout: Duration = .seconds(60), udpFlowLimit: Int = 4096, udpFlowsPerClient: Int = 256,
        dnsTCPIdleTimeout: Duration = .seconds(10)
    ) {
        self.dnsTCPIdleTimeout = dnsTCPIdleTimeout
        self.connectionBuffer = connectionBuffer
        self.maximumBuffered = maximumBuffered
        self.udpIdleTimeout = udpIdleTimeout
        self.udpFlowLimit = udpFlowLimit
        self.udpFlowsPerClient = udpFlowsPerClient
    }
}

/// A listening socket, its upstream, and the link (uplink and downlink) its connections share.
///
/// Lives on the thread of the event loop that owns it (`loop`): the main loop's, or another's with
/// `ProxyOptions.threads`, where the main loop reaches it through a `LoopOwnedListener`.
final class TCPListener: RelayHost, ConditionedListener {
    let loop: EventLoop
    let acceptor: TCPAcceptor
    var localAddress: SocketAddress { acceptor.localAddress }
    let upstream: Endpoint
    /// The upstream as the user named it, spelled once here rather than for every connection.
    private let upstreamName: String
    /// Every address the upstream resolved to, tried in order until one accepts.
    let upstreamAddresses: [SocketAddress]
    let uplink: ShapedLink
    let downlink: ShapedLink
    let options: ProxyOptions
    let logger: Logger
    let readBuffer: ReadBuffer
    private(set) var profile: Profile
    private(set) var relays: [UInt64: TCPRelay] = [:]
    private var nextRelayID: UInt64 = 1
    private(set) var connectionsAccepted = 0
    private(set) var connectionsRefused = 0
    private(set) var connectionsLooped = 0
    let ownListeners: OwnListeners?
    /// Where each new connection's stages come from (a Toxiproxy proxy's toxics); nil gives it the profile's
    /// faults alone.
    var stageSource: StageSource?
    let faults: ListenerFaults
    var connectionFaults: ListenerFaults? { faults }
    /// Where pass-through connections are handed over; nil for listeners whose connections stay on their own loop
    /// (a Toxiproxy proxy's, whose toxics may change at any time, and those another loop than the main one owns).
    var spliceLoops: SpliceLoops?
    /// The name of the Toxiproxy proxy this listener serves, for `status`; nil for `--listen` listeners.
    var toxiproxyName: String?

    /// Binds and listens on `address`, and starts accepting.
    convenience init(
        address: SocketAddress, upstream: Endpoint, upstreamAddresses: [SocketAddress], context: ListenerContext
    ) throws(SystemError) {
        try self.init(
            acceptor: TCPAcceptor(address: address, loop: context.loop, logger: context.logger), upstream: upstream,
            upstreamAddresses: upstreamAddresses, context: context)
    }

    /// Takes over `socket`, already bound and listening (a restarted listener's own), and starts accepting.
    convenience init(
        adopting socket: Socket, upstream: Endpoint, upstreamAddresses: [SocketAddress], context: ListenerContext
    ) throws(SystemError) {
        try self.init(
            acceptor: TCPAcceptor(adopting: socket, loop: context.loop, logger: context.logger), upstream: upstream,
            upstreamAddresses: upstreamAddresses, context: context)
    }

    private init(
        acceptor: TCPAcceptor, upstream: Endpoint, upstreamAddresses: [SocketAddress], context: ListenerContext
    ) throws(SystemError) {
        self.acceptor = acceptor
        self.loop = context.loop
        self.upstream = upstream
        self.upstreamName = upstream.description
        self.upstreamAddresses = upstreamAddresses
        self.profile = context.profile
        self.options = context.options
        self.readBuffer = context.readBuffer
        self.logger = context.logger
        self.ownListeners = context.ownListeners
        (uplink, downlink) = ShapedLink.pair(for: context)
        faults = ListenerFaults(
            loop: context.loop, profile: context.profile, seed: context.directionSeeds.downlink &+ 1)
        uplink.listenerName = "tcp \(acceptor.localAddress)"
        // Unowned, not weak: the listener owns the acceptor and closes it before going, and a weak reference would
        // give the listener a side table that slows the unowned retain each of its relays makes to reach it.
        let givePipesUp = readBuffer.pipes.shortageHandler(logger: context.logger)
        let giveDescriptorsUp: () -> Bool = { [unowned self] in givePipesUp() || self.giveUpFinishedClients() }
        try acceptor.start(
            onFailure: giveDescriptorsUp,
            shortage: .turnAway(context.descriptorReserve)
        ) { [unowned self] client, address in
            self.accepted(client, from: address)
        }
    }

    var bound: BoundListener { BoundListener(kind: "tcp", address: localAddress, upstream: upstream.description) }

    var addresses: ListenerAddresses {
        ListenerAddresses(
            name: toxiproxyName.map { "Toxiproxy proxy \"\($0)\"" } ?? "tcp relay",
            role: toxiproxyName == nil ? .commandLine : .toxiproxy,
            listening: [TransportAddress(transport: .tcp, address: localAddress)],
            upstreams: upstreamAddresses.map { TransportAddress(transport: .tcp, address: $0) })
    }

    /// The listener's figures, with what splice loops delivered for its connections counted first.
    func status() -> ListenerStatus {
        var onSpliceLoops = 0
        if spliceLoops != nil {
            for relay in relays.values where relay.isOnSpliceLoop {
                relay.settleSplicedBytes()
                onSpliceLoops += 1
            }
        }
        var status = ListenerStatus(
            kind: "tcp", address: localAddress, upstream: upstream.description,
            activeConnections: relays.count, connectionsAccepted: connectionsAccepted,
            connectionsRefused: connectionsRefused, uplink: uplink.counters, downlink: downlink.counters)
        status.connectionsOnSpliceLoops = onSpliceLoops
        status.connectionsLooped = connectionsLooped
        status.connectionsTurnedAway = acceptor.turnedAway
        status.toxiproxy = toxiproxyName
        status.uplinkLateness = uplink.lateness
        status.downlinkLateness = downlink.lateness
        return status
    }

    /// Whether the profile makes TCP connections carry nothing: an explicit blackhole or 100 % loss either way.
    private var isBlackholed: Bool {
        profile.fault == .blackhole || profile.uplink.loss.percent >= 100 || profile.downlink.loss.percent >= 100
    }

    /// Relays a new client, or resets it at once while the profile refuses connections. A client that is one of
    /// linkcond's own upstream connections (a loop through relays pointing at each other) is closed at once.
    private func accepted(_ client: Socket, from address: SocketAddress) {
        if let ownListeners,
            ownListeners.closeIfLooped(
                client, from: address, at: "tcp \(localAddress)",
                looped: &connectionsLooped, logger: logger)
        {
            return
        }
        if profile.fault == .refuse {
            connectionsRefused += 1
            try? client.setResetOnClose()
            client.close()
            return
        }
        connectionsAccepted += 1
        let relay = TCPRelay(
            id: nextRelayID, host: self, client: client, clientAddress: address,
            upstreamName: upstreamName, upstreamAddresses: upstreamAddresses)
        nextRelayID += 1
        relay.stageSource = stageSource ?? faults
        relays[relay.id] = relay
        relay.start(blackholed: isBlackholed)
    }

    /// Resets the blackholed connections whose clients closed their side, when an accept finds descriptors
    /// exhausted: a client that closed may be gone for good, and holding it would keep the descriptor until
    /// `online`. True when any went.
    private func giveUpFinishedClients() -> Bool {
        let finished = relays.values.filter(\.holdsFinishedClient)
        guard !finished.isEmpty else { return false }
        logger.notice(
            "tcp \(localAddress): descriptors exhausted: reset \(finished.count) blackholed connections whose clients had closed their side; what they sent is lost"
        )
        for relay in finished { relay.giveUpFinishedClient() }
        return true
    }

    func relayClosed(_ relay: TCPRelay) {
        relays.removeValue(forKey: relay.id)
    }

    /// Switches the listener's link to `profile`; existing connections keep their data and its order.
    func apply(_ profile: Profile) {
        self.profile = profile
        uplink.update(profile)
        downlink.update(profile)
        faults.apply(profile, to: relays.values)
        if !isBlackholed {
            for relay in relays.values { relay.release() }
        }
    }

    /// Resets every live connection.
    func resetConnections() {
        for relay in Array(relays.values) { relay.close(reset: true) }
    }

    /// Closes the listening socket and resets every connection: a live one is cut, and a FIN would tell its app
    /// that the data it got was all there was.
    func close() {
        acceptor.close()
        for relay in Array(relays.values) { relay.close(reset: true) }
        uplink.close()
        downlink.close()
    }
}
