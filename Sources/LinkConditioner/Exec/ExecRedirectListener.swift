import Logging

/// An exec'd program's TCP connections and DNS lookups in proxy mode, where no TUN device could be opened:
/// nftables in its namespace redirected them to sockets the namespace helper opened there, and linkcond relays them
/// through the proxy's TCP model, as `run`'s listeners do. `linkcond attach` uses it the same way for the
/// namespace it runs in, whose upstream connections leave from that namespace, marked so that they are not
/// redirected again (`NamespaceAttachment`).
///
/// Lives on the event loop thread. Each accepted connection's original destination (SO_ORIGINAL_DST) is connected
/// to from the host's namespace through the listener's shaped uplink and downlink, with the profile's faults and
/// the offline switch; an excluded destination goes through an unconditioned link. UDP queries to port 53 arrive
/// on the DNS socket and are answered by the DNS forwarder, which adds dns.delay; nothing else leaves the
/// namespace. The program's own TCP talks to linkcond over its loopback, so its connect() returns at once and the
/// link's round trip shows before its first byte instead, as with the proxy.
final class ExecRedirectListener: RelayHost, ConditionedListener {
    let loop: EventLoop
    let logger: Logger
    let options: ProxyOptions
    let readBuffer: ReadBuffer
    let uplink: ShapedLink
    let downlink: ShapedLink
    /// The unconditioned link excluded destinations are relayed through.
    private var direct: DirectLinkHost!
    let faults: ListenerFaults
    var connectionFaults: ListenerFaults? { faults }
    private var profile: Profile
    private let exclude: [HostPattern]
    private var acceptors: [TCPAcceptor] = []
    /// Where the acceptors listen, IPv4 first: a connection whose original destination is one of them reached a
    /// listener without being redirected, and relaying it would connect to the listener again.
    private var listenerAddresses: [SocketAddress] = []
    private let dns: DNSForwarder?
    private var relays: [UInt64: TCPRelay] = [:]
    private var nextRelayID: UInt64 = 1
    private var connectionsAccepted = 0
    private var connectionsRefused = 0
    private var connectionsExcluded = 0
    private var connectionsLooped = 0
    private var destinations = DestinationTally()
    /// The destination (`IP:port`) of each live relay, as the destination table counts it.
    private var relayDestinations: [UInt64: String] = [:]

    /// Which namespace the redirected connections come from; its raw value names the listener in status and logs.
    private enum Origin: String {
        /// The namespace linkcond made for `exec`, whose gateway address stands for the host.
        case exec
        /// A namespace linkcond runs in (`attach`), whose destinations are what they say.
        case attach
    }

    private let origin: Origin
    private var kind: String { origin.rawValue }

    /// Takes the listeners (a descriptor and its family) and the DNS socket the namespace helper, or `attach`,
    /// opened (none when `attach` does not redirect DNS); they are closed when it throws.
    init(listeners: [(Int32, Int32)], dnsQueries: Int32?, settings: ExecSettings, context: ListenerContext) throws {
        let origin: Origin
        if case .attached = settings.plumbing { origin = .attach } else { origin = .exec }
        self.origin = origin
        loop = context.loop
        logger = context.logger
        options = context.options
        readBuffer = context.readBuffer
        profile = context.profile
        exclude = settings.exclude
        (uplink, downlink) = ShapedLink.pair(for: context)
        uplink.listenerName = origin.rawValue
        faults = ListenerFaults(
            loop: context.loop, profile: context.profile, seed: context.directionSeeds.downlink &+ 1)
        if let dnsQueries {
            let queries = Socket.adopting(dnsQueries)
            let upstream: [SocketAddress]
            do {
                upstream = try settings.dnsUpstream.map { try $0.resolve() } ?? []
            } catch {
                queries.close()
                for (fd, _) in listeners { Namespaces.close(fd) }
                throw error
            }
            do {
                dns = try DNSForwarder(
                    address: SocketAddress(numericHost: "127.0.0.1", port: 0)!, upstream: upstream,
                    resolverConfiguration: settings.resolverConfiguration, context: context, adoptingQueries: queries)
            } catch {
                context.logger.warning("\(origin.rawValue): no DNS forwarder (\(error)); name lookups inside will fail")
                dns = nil
            }
        } else {
            dns = nil
        }
        direct = DirectLinkHost(owner: self)
        var pending = listeners
        do {
            for (fd, family) in listeners {
                pending.removeFirst()
                let socket = Socket.adopting(fd)
                if let address = try? socket.localAddress() { listenerAddresses.append(address) }
                let acceptor = try TCPAcceptor(adopting: socket, loop: loop, logger: logger)
                try acceptor.start(onFailure: readBuffer.pipes.shortageHandler(logger: logger)) {
                    [weak self] client, address in
                    self?.accepted(client, from: address, family: family)
                }
                acceptors.append(acceptor)
            }
        } catch {
            for (fd, _) in pending { Namespaces.close(fd) }
            close()
            throw error
        }
        dns?.onAnswer = { [weak self] answer in self?.destinations.learned(answer) }
    }

    /// For `exec`, the program's address (its connections come from there); for `attach`, the IPv4 listener the
    /// rules redirect to, in the conditioned namespace.
    var bound: BoundListener {
        BoundListener(
            kind: kind,
            address: origin == .exec
                ? SocketAddress(numericHost: AddressBytes.format(ExecNamespace.programAddressV4), port: 0)!
                : listenerAddresses.first ?? SocketAddress(numericHost: "127.0.0.1", port: 0)!,
            upstream: nil)
    }

    func status() -> ListenerStatus {
        var status = ListenerStatus(
            kind: kind, address: bound.address, upstream: nil, activeConnections: relays.count,
            connectionsAccepted: connectionsAccepted, connectionsRefused: connectionsRefused,
            uplink: uplink.counters, downlink: downlink.counters,
            destinations: destinations.report(
                live: relays.values.compactMap { relay in
                    relayDestinations[relay.id].map { ($0, relay.bytesUp, relay.bytesDown) }
                }))
        status.connectionsExcluded = connectionsExcluded
        status.connectionsLooped = connectionsLooped
        status.uplinkLateness = uplink.lateness
        status.downlinkLateness = downlink.lateness
        return status
    }

    func connectionEntries() -> [ConnectionEntry] {
        relays.values.map { $0.entry(listener: bound.address) }
    }

    /// Whether the profile makes TCP connections carry nothing: an explicit blackhole or 100 % loss either way.
    private var isBlackholed: Bool {
        profile.fault == .blackhole || profile.uplink.loss.percent >= 100 || profile.downlink.loss.percent >= 100
    }

    /// Whether connections to `address` bypass the link: `--exclude` or the profile's `exclude`.
    private func isExcluded(_ address: SocketAddress) -> Bool {
        (exclude + profile.exclude).contains { $0.matches(addressBytes: address.addressBytes) }
    }

    /// Relays a redirected connection to where the program sent it, or resets it while the profile refuses
    /// connections. A connection made to a listener itself (not redirected, so its original destination is the
    /// listener) is closed at once and counted as looped: relaying it would connect to the listener again, for
    /// ever, in `attach`'s namespace.
    private func accepted(_ client: Socket, from address: SocketAddress, family: Int32) {
        guard let destination = client.originalDestinationOrClose(family: family, from: address, logger: logger) else {
            return
        }
        if listenerAddresses.contains(destination) || destination == (try? client.localAddress()) {
            connectionsLooped += 1
            if connectionsLooped == 1 {
                logger.warning(
                    "\(kind): connection from \(address) was made to linkcond's own listener \(destination), not redirected to it; closed, since relaying it would connect to the listener again. Later ones are counted in status (connectionsLooped), not logged"
                )
            }
            client.close()
            return
        }
        let excluded = isExcluded(destination)
        if profile.fault == .refuse && !excluded {
            connectionsRefused += 1
            try? client.setResetOnClose()
            client.close()
            return
        }
        connectionsAccepted += 1
        destinations.opened(destination)
        let host: RelayHost = excluded ? direct : self
        let relay = TCPRelay(
            id: nextRelayID, host: host, client: client, clientAddress: address,
            upstreamName: destinations.upstreamName(for: destination),
            upstreamAddresses: [
                origin == .exec ? ExecNamespace.hostAddress(for: destination, dns: dns?.bound.address) : destination
            ])
        nextRelayID += 1
        if excluded { connectionsExcluded += 1 } else { relay.stageSource = faults }
        relays[relay.id] = relay
        relayDestinations[relay.id] = destination.description
        logger.debug(
            "\(kind): connection \(relay.id) from \(address) to \(destination)\(excluded ? " (excluded, unconditioned)" : "")"
        )
        relay.start(blackholed: !excluded && isBlackholed)
    }

    func relayClosed(_ relay: TCPRelay) {
        guard relays.removeValue(forKey: relay.id) != nil,
            let destination = relayDestinations.removeValue(forKey: relay.id)
        else { return }
        destinations.closed(destination, bytesUp: relay.bytesUp, bytesDown: relay.bytesDown)
    }

    /// Switches the link to `profile`; data in flight keeps its order, and held connections go on when it carries
    /// traffic again.
    func apply(_ profile: Profile) {
        self.profile = profile
        uplink.update(profile)
        downlink.update(profile)
        faults.apply(profile, to: relays.values)
        dns?.apply(profile)
        if !isBlackholed {
            for relay in relays.values { relay.release() }
        }
    }

    /// Resets every live connection: the program sees its connections reset.
    func resetConnections() {
        for relay in Array(relays.values) { relay.close(reset: true) }
        dns?.resetConnections()
    }

    func close() {
        for acceptor in acceptors { acceptor.close() }
        acceptors.removeAll()
        for relay in Array(relays.values) { relay.close(reset: true) }
        uplink.close()
        downlink.close()
        direct?.close()
        dns?.close()
    }
}
