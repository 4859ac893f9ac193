import Logging

/// What a SOCKS5 and HTTP proxy listener needs beyond the profile: credentials, extra exclusions and limits.
public struct ProxyFrontEndSettings: Hashable, Sendable {
    /// The user name and password every client must give, or nil to accept any client that reaches the listener.
    public var credentials: ProxyCredentials?
    /// Destinations relayed untouched in addition to the profile's `exclude` list (kept when the profile changes).
    public var exclude: [HostPattern]
    /// How long a client may take to send its whole request, from accept.
    public var handshakeTimeout: Duration
    /// How long a name lookup may take before the client is told it timed out.
    public var lookupTimeout: Duration
    /// Connections (handshaking or relaying) one client may hold at once: one address, and on loopback one user
    /// of it (the owner of the connecting socket). Beyond it, a new connection displaces that client's connection
    /// that has waited longest for its request; when none is waiting, it is reset.
    public var connectionsPerClient: Int
    /// How long a connect to the destination may take (after the uplink delay) before the client is told it timed out.
    public var connectTimeout: Duration

    public init(
        credentials: ProxyCredentials? = nil, exclude: [HostPattern] = [], handshakeTimeout: Duration = .seconds(10),
        lookupTimeout: Duration = .seconds(5), connectionsPerClient: Int = 512, connectTimeout: Duration = .seconds(15)
    ) {
        self.credentials = credentials
        self.exclude = exclude
        self.handshakeTimeout = handshakeTimeout
        self.lookupTimeout = lookupTimeout
        self.connectionsPerClient = connectionsPerClient
        self.connectTimeout = connectTimeout
    }
}

/// A SOCKS5 and HTTP proxy listener: each client names its destination, which is reached through the listener's
/// shaped link, or through an unconditioned one when the destination is excluded.
///
/// Lives on the event loop thread. A `ProxyClientSession` owns each client socket until its request is complete,
/// then a `TCPRelay` takes it over. Every connection shares one uplink/downlink pair, as with `TCPListener`.
final class ProxyFrontEnd: RelayHost, ConditionedListener {
    let loop: EventLoop
    let acceptor: TCPAcceptor
    var localAddress: SocketAddress { acceptor.localAddress }
    let uplink: ShapedLink
    let downlink: ShapedLink
    let options: ProxyOptions
    let logger: Logger
    let readBuffer: ReadBuffer
    let settings: ProxyFrontEndSettings
    let resolver: HostResolver
    /// Every address linkcond listens on, never relayed to.
    let ownListeners: OwnListeners?
    /// The unconditioned link excluded destinations are relayed through.
    private(set) var direct: DirectLinkHost!
    private(set) var profile: Profile
    private var sessions: [UInt64: ProxyClientSession] = [:]
    /// Sessions whose destination's name is being looked up.
    var sessionsResolving: Int { sessions.values.filter(\.isResolving).count }
    private(set) var relays: [UInt64: TCPRelay] = [:]
    private var clients: [UInt64: ProxyClient] = [:]
    private var connectionsByClient: [ProxyClient: Int] = [:]
    private var nextID: UInt64 = 1
    private var connectionsAccepted = 0
    private var connectionsRefused = 0
    private var connectionsExcluded = 0
    private var connectionsLooped = 0
    /// Whether a displaced client has been logged; once per listener, so a flood of silent clients logs one line.
    private var loggedDisplacement = false
    let faults: ListenerFaults
    var connectionFaults: ListenerFaults? { faults }
    /// Whether the captive portal has let traffic through (`online`, or a POST to its form).
    private(set) var portalReleased = false

    /// Binds and listens on `address`, and starts accepting.
    init(address: SocketAddress, settings: ProxyFrontEndSettings, context: ListenerContext) throws(SystemError) {
        acceptor = try TCPAcceptor(address: address, loop: context.loop, logger: context.logger)
        self.loop = context.loop
        self.settings = settings
        self.profile = context.profile
        self.options = context.options
        self.readBuffer = context.readBuffer
        self.logger = context.logger
        self.resolver = HostResolver(loop: context.loop)
        self.ownListeners = context.ownListeners
        (uplink, downlink) = ShapedLink.pair(for: context)
        faults = ListenerFaults(
            loop: context.loop, profile: context.profile, seed: context.directionSeeds.downlink &+ 1)
        uplink.listenerName = "proxy \(acceptor.localAddress)"
        direct = DirectLinkHost(owner: self)
        do {
            try acceptor.start(
                onFailure: readBuffer.pipes.shortageHandler(logger: context.logger),
                shortage: .turnAway(context.descriptorReserve)
            ) { [weak self] client, address in
                self?.accepted(client, from: address)
            }
        } catch {
            resolver.shutDown()
            throw error
        }
    }

    var bound: BoundListener { BoundListener(kind: "proxy", address: localAddress, upstream: nil) }

    var addresses: ListenerAddresses {
        ListenerAddresses(
            name: "proxy front end", role: .commandLine,
            listening: [TransportAddress(transport: .tcp, address: localAddress)])
    }

    func status() -> ListenerStatus {
        var status = ListenerStatus(
            kind: "proxy", address: localAddress, upstream: nil, activeConnections: sessions.count + relays.count,
            connectionsAccepted: connectionsAccepted, connectionsRefused: connectionsRefused,
            uplink: uplink.counters, downlink: downlink.counters)
        status.connectionsExcluded = connectionsExcluded
        status.connectionsLooped = connectionsLooped
        status.connectionsTurnedAway = acceptor.turnedAway
        status.uplinkLateness = uplink.lateness
        status.downlinkLateness = downlink.lateness
        return status
    }

    func connectionEntries() -> [ConnectionEntry] {
        sessions.values.map {
            ConnectionEntry(
                id: $0.id, listener: localAddress.description, client: $0.clientAddress.description,
                upstream: "", state: "handshake")
        }
            + relays.values.map { $0.entry(listener: localAddress) }
    }

    /// Whether the profile makes TCP connections carry nothing: an explicit blackhole or 100 % loss either way.
    var isBlackholed: Bool {
        profile.fault == .blackhole || profile.uplink.loss.percent >= 100 || profile.downlink.loss.percent >= 100
    }

    /// The profile's DNS delay, which every conditioned name lookup pays on top of the real lookup.
    var dnsDelay: Duration { profile.dnsDelay }

    /// Whether connections to the name `host` bypass the link, judged before any lookup.
    func isExcluded(name host: String) -> Bool {
        (profile.exclude + settings.exclude).contains { $0.matches(name: host) }
    }

    /// Whether connections to any of `addresses` bypass the link.
    func isExcluded(addresses: [SocketAddress]) -> Bool {
        let patterns = profile.exclude + settings.exclude
        return addresses.contains { address in patterns.contains { $0.matches(addressBytes: address.addressBytes) } }
    }

    /// Whether `address` is one of linkcond's own listeners (this one, a relay, DNS, the control endpoint, the
    /// Toxiproxy API), in any spelling that reaches it (see `OwnListeners.reaches`), or an unspecified address:
    /// relaying there would loop, or hand whoever may use the proxy (other hosts with `--allow-remote`, every page
    /// of a browser pointed at it) linkcond's own APIs as a local program.
    func isForbidden(_ address: SocketAddress) -> Bool {
        if address.canonicalAddressBytes.allSatisfy({ $0 == 0 }) { return true }
        return ownListeners?.listener(reachedBy: address) != nil
    }

    /// Starts a session for a new client, or resets it while the profile refuses connections or the client
    /// already holds its share with no connection waiting for its request.
    ///
    /// Every local program connects from 127.0.0.1, so a share per address would be shared by all of them: a
    /// program holding it would lock every other one out. On loopback each user therefore has a share of its own
    /// (the kernel names the connecting socket's owner, `ProxyClient`), so another user's program cannot lock
    /// yours out, even with established, idle tunnels. Within one share, a new connection displaces the one that
    /// has waited longest for its request (as the control endpoint does), so a program that sends its request at
    /// once gets through any number of silent ones of its own user.
    private func accepted(_ client: Socket, from address: SocketAddress) {
        if let ownListeners,
            ownListeners.closeIfLooped(
                client, from: address, at: "proxy \(localAddress)",
                looped: &connectionsLooped, logger: logger)
        {
            return
        }
        let clientKey = ProxyClient(client, from: address)
        let full = connectionsByClient[clientKey, default: 0] >= settings.connectionsPerClient
        if profile.fault == .refuse || (full && !displaceLongestWaiting(from: clientKey)) {
            if profile.fault != .refuse {
                logger.warning(
                    "client \(clientKey) already holds \(settings.connectionsPerClient) connections past their request; resetting a new one"
                )
            }
            connectionsRefused += 1
            try? client.setResetOnClose()
            client.close()
            return
        }
        connectionsAccepted += 1
        let id = nextID
        nextID += 1
        clients[id] = clientKey
        connectionsByClient[clientKey, default: 0] += 1
        let session = ProxyClientSession(id: id, frontEnd: self, client: client, clientAddress: address)
        sessions[id] = session
        session.start()
    }

    /// Resets the session of `client` that has waited longest for its request (the lowest id: ids follow accept
    /// order) to make room for a new connection; false when none of its connections is displaceable.
    private func displaceLongestWaiting(from client: ProxyClient) -> Bool {
        let oldest = sessions.values.filter { $0.isDisplaceable && clients[$0.id] == client }.min {
            $0.id < $1.id
        }
        guard let oldest else { return false }
        if !loggedDisplacement {
            loggedDisplacement = true
            logger.warning(
                "client \(client) holds \(settings.connectionsPerClient) connections; resetting the one waiting longest for its request to make room (logged once)"
            )
        }
        oldest.displace()
        return true
    }

    /// Takes a client whose request is complete from its session and relays it to `addresses`; the relay takes
    /// over the session's registration of the client, with the read events the session left unread.
    func relay(
        _ session: ProxyClientSession, to addresses: [SocketAddress], upstreamName: String, excluded: Bool,
        handshake: UpstreamHandshake, preloaded: [UInt8], preloadEndsStream: Bool, filter: StreamFilter?,
        clientRegistration: EventLoop.RegistrationID?, unreadClientEvents: UInt32
    ) {
        sessions.removeValue(forKey: session.id)
        let host: RelayHost = excluded ? direct : self
        let relay = TCPRelay(
            id: session.id, host: host, client: session.client, clientAddress: session.clientAddress,
            upstreamName: upstreamName, upstreamAddresses: addresses, handshake: handshake,
            preloadedClientBytes: preloaded, preloadEndsStream: preloadEndsStream, uplinkFilter: filter,
            clientRegistration: clientRegistration, unreadClientEvents: unreadClientEvents)
        if excluded { connectionsExcluded += 1 } else { relay.stageSource = faults }
        relays[relay.id] = relay
        logger.debug(
            "connection \(session.id) from \(session.clientAddress): \(upstreamName)\(excluded ? " (excluded, unconditioned)" : "")"
        )
        relay.start(blackholed: !excluded && isBlackholed)
        relay.limitConnect(until: loop.clock.now() + host.uplink.currentDelay + settings.connectTimeout)
    }

    /// Forgets a session that closed its client without relaying it.
    func sessionClosed(_ session: ProxyClientSession) {
        guard sessions.removeValue(forKey: session.id) != nil else { return }
        releaseClient(session.id)
    }

    func relayClosed(_ relay: TCPRelay) {
        guard relays.removeValue(forKey: relay.id) != nil else { return }
        releaseClient(relay.id)
    }

    private func releaseClient(_ id: UInt64) {
        guard let client = clients.removeValue(forKey: id) else { return }
        let remaining = connectionsByClient[client, default: 1] - 1
        connectionsByClient[client] = remaining > 0 ? remaining : nil
    }

    /// The captive portal's style while it holds traffic back, nil when there is none or it let traffic through.
    var activePortal: CaptivePortalSetting.Style? {
        let style = profile.connection.captivePortal
        return style == .off || portalReleased ? nil : style
    }

    /// Lets traffic past the captive portal, as logging in to it would.
    func releasePortal() { portalReleased = true }

    func cameOnline() { releasePortal() }

    /// Switches the shaped link to `profile` (excluded destinations stay unconditioned); data in flight keeps its order.
    /// A captive portal that the profile turns on, or changes, holds traffic back again.
    func apply(_ profile: Profile) {
        if profile.connection.captivePortal != self.profile.connection.captivePortal { portalReleased = false }
        self.profile = profile
        uplink.update(profile)
        downlink.update(profile)
        faults.apply(profile, to: relays.values)
        if !isBlackholed {
            for relay in relays.values { relay.release() }
        }
    }

    func resetConnections() {
        for session in Array(sessions.values) { session.close() }
        for relay in Array(relays.values) { relay.close(reset: true) }
    }

    func close() {
        acceptor.close()
        resolver.shutDown()
        for session in Array(sessions.values) { session.close() }
        for relay in Array(relays.values) { relay.close(reset: true) }
        uplink.close()
        downlink.close()
        direct.close()
    }
}

/// The unconditioned link a proxy front end (or exec's proxy mode) relays excluded destinations through. Lives on
/// the event loop thread.
final class DirectLinkHost: RelayHost {
    unowned let owner: any RelayHost
    let uplink: ShapedLink
    let downlink: ShapedLink

    init(owner: any RelayHost) {
        self.owner = owner
        uplink = ShapedLink(loop: owner.loop, side: .connector, profile: .none, seed: 1, budget: owner.uplink.budget)
        downlink = ShapedLink(loop: owner.loop, side: .acceptor, profile: .none, seed: 2, budget: owner.downlink.budget)
        uplink.recorder = owner.uplink.recorder
        uplink.listenerName = owner.uplink.listenerName + " (excluded)"
    }

    var loop: EventLoop { owner.loop }
    var logger: Logger { owner.logger }
    var options: ProxyOptions { owner.options }
    var readBuffer: ReadBuffer { owner.readBuffer }
    var ownListeners: OwnListeners? { owner.ownListeners }
    func relayClosed(_ relay: TCPRelay) { owner.relayClosed(relay) }

    func close() {
        uplink.close()
        downlink.close()
    }
}

/// The replies a relay sends for a proxy client once its upstream connected or failed.
final class ProxyReplies: UpstreamHandshake {
    enum Style {
        case socks5
        case httpTunnel
        case httpForward
    }

    let style: Style
    let upstreamName: String
    /// The session's answers to a pipelining client's earlier steps (SOCKS5 method selection), written before
    /// whichever reply the connect brings.
    let answersFirst: [UInt8]

    init(style: Style, upstreamName: String, answersFirst: [UInt8] = []) {
        self.style = style
        self.upstreamName = upstreamName
        self.answersFirst = answersFirst
    }

    var repliesOnConnect: Bool { style != .httpForward }

    func replyOnConnect(local: () -> SocketAddress?) -> [UInt8] {
        answersFirst + reply(local: local)
    }

    private func reply(local: () -> SocketAddress?) -> [UInt8] {
        switch style {
        case .socks5: SOCKS5.reply(.succeeded, bound: local())
        case .httpTunnel: HTTPProxy.connectionEstablished
        case .httpForward: []
        }
    }

    func replyOnFailure(_ error: Errno) -> [UInt8] {
        answersFirst + failureReply(error)
    }

    private func failureReply(_ error: Errno) -> [UInt8] {
        switch style {
        case .socks5: SOCKS5.reply(SOCKS5.Reply(connectError: error))
        case .httpTunnel, .httpForward: HTTPProxy.response(HTTPProxy.status(connectError: error, origin: upstreamName))
        }
    }
}

/// Whose share of the front end's connections a connection counts against: its address, and on loopback the user
/// owning the connecting socket, which the kernel names (sock_diag, a few system calls per accept; the socket table
/// is never read here). Nil when the kernel cannot say: the connection then shares its address's share.
struct ProxyClient: Hashable, CustomStringConvertible {
    let host: String
    let user: UInt32?

    init(_ socket: Socket, from address: SocketAddress) {
        host = address.host
        user = address.isLoopback ? socket.localPeerUserIDFromKernel() : nil
    }

    var description: String { user.map { "\(host) (user \($0))" } ?? host }
}
