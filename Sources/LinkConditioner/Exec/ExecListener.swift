import Logging

/// What `linkcond exec` hands the proxy: the namespace helper's descriptors and the DNS forwarder's upstream.
public struct ExecSettings: Hashable, Sendable {
    public var plumbing: ExecNamespace.Plumbing
    /// The resolver the DNS forwarder asks; nil for the first nameserver in `resolverConfiguration`.
    public var dnsUpstream: Endpoint?
    /// The resolv.conf whose first nameserver the DNS forwarder asks when `dnsUpstream` is nil: the host's for
    /// `exec`, the namespace's own for `attach` (`NamespaceAttachment.Target.resolverConfiguration`).
    public var resolverConfiguration: String
    /// Destinations whose packets bypass the link (`--exclude`, added to the profile's); packets carry addresses
    /// only, so host names match nothing here.
    public var exclude: [HostPattern]

    public init(
        plumbing: ExecNamespace.Plumbing, dnsUpstream: Endpoint?, resolverConfiguration: String = "/etc/resolv.conf",
        exclude: [HostPattern] = []
    ) {
        self.plumbing = plumbing
        self.dnsUpstream = dnsUpstream
        self.resolverConfiguration = resolverConfiguration
        self.exclude = exclude
    }
}

/// The listener for an exec'd program's plumbing: packets across the link model (tun mode) or connections through
/// the proxy's TCP model (proxy mode).
func makeExecListener(_ settings: ExecSettings, context: ListenerContext) throws -> ConditionedListener {
    switch settings.plumbing {
    case .tunnel(let programTun, let gatewayTun, let listenerV4, let listenerV6):
        return try ExecListener(
            programTun: programTun, gatewayTun: gatewayTun, listeners: [listenerV4, listenerV6],
            settings: settings, context: context)
    case .redirect(let listenerV4, let listenerV6, let dnsQueries, _):
        return try ExecRedirectListener(
            listeners: [(listenerV4, Namespaces.familyV4), (listenerV6, Namespaces.familyV6)], dnsQueries: dnsQueries,
            settings: settings, context: context)
    case .attached(let listenerV4, let listenerV6, let dnsQueries):
        return try ExecRedirectListener(
            listeners: [(listenerV4, Namespaces.familyV4)] + (listenerV6.map { [($0, Namespaces.familyV6)] } ?? []),
            dnsQueries: dnsQueries, settings: settings, context: context)
    }
}

extension ExecNamespace {
    /// Where a destination inside is reached from the host. The gateway's address stands for the host's loopback
    /// (as slirp4netns's 10.0.2.2 does): its port 53 is the DNS forwarder (`dns`), any other port the same port on
    /// 127.0.0.1 (or ::1).
    static func hostAddress(for destination: SocketAddress, dns: SocketAddress?) -> SocketAddress {
        let bytes = AddressBytes.parse(destination.host) ?? []
        guard bytes == gatewayAddressV4 || bytes == gatewayAddressV6 else { return destination }
        if destination.port == 53, let dns { return dns }
        return SocketAddress(numericHost: bytes.count == 4 ? "127.0.0.1" : "::1", port: destination.port)!
    }
}

/// The link between an exec'd program's namespace and the gateway namespace, packet by packet.
///
/// Lives on the event loop thread. Packets the program sends (read from its TUN device) cross the uplink's
/// datagram link model (rate, queue, delay, jitter, loss, duplication, reordering: the `UDPLink` every UDP
/// listener uses, one flow per direction) and go to the gateway's TUN device, where the gateway kernel's TCP ends
/// the connection on a redirected listener; linkcond connects to the original destination from the host's
/// namespace and relays the bytes unshaped, since shaping already happened on the packets. Packets the gateway
/// sends back cross the downlink the same way. UDP datagrams leave the link in linkcond instead: each flow (source
/// and destination address and port) gets a host socket, and replies are built into IP packets that cross the
/// downlink. DNS to the gateway's address goes to a DNS forwarder on the host's loopback, which adds dns.delay.
final class ExecListener: RelayHost, ConditionedListener {
    let loop: EventLoop
    let logger: Logger
    let options: ProxyOptions
    let readBuffer: ReadBuffer
    /// The relays' stream links: unshaped, as the packets were shaped on their way.
    let uplink: ShapedLink
    let downlink: ShapedLink
    private let packetUplink: UDPLink
    private let packetDownlink: UDPLink
    private var towardGateway: DatagramPump!
    private var towardProgram: DatagramPump!
    private let programTun: TunDevice
    private let gatewayTun: TunDevice
    private var registrations: [EventLoop.RegistrationID] = []
    private var acceptors: [(TCPAcceptor, Int32)] = []
    private let dns: DNSForwarder?
    /// The profile's connection faults, acting on the relayed streams as on any TCP listener's.
    let faults: ListenerFaults
    var connectionFaults: ListenerFaults? { faults }
    private var profile: Profile
    private let exclude: [HostPattern]
    private(set) var relays: [UInt64: TCPRelay] = [:]
    private var nextRelayID: UInt64 = 1
    private var flows: [IPPacketHeader: ExecDatagramFlow] = [:]
    private var connectionsAccepted = 0
    private var connectionsRefused = 0
    private var destinations = DestinationTally()
    /// The destination (`IP:port`) of each live relay, as the destination table counts it.
    private var relayDestinations: [UInt64: String] = [:]
    private var packetBuffer = [UInt8](repeating: 0, count: 65536)
    private lazy var idleSweep = DeadlineAlarm(loop: loop) { [weak self] now in self?.forgetIdleFlows(at: now) }

    /// Takes the TUN devices and the gateway's listeners (one per family) the namespace helper opened.
    init(
        programTun programTunDescriptor: Int32, gatewayTun gatewayTunDescriptor: Int32, listeners: [Int32],
        settings: ExecSettings, context: ListenerContext
    ) throws {
        loop = context.loop
        logger = context.logger
        options = context.options
        readBuffer = context.readBuffer
        profile = context.profile
        exclude = settings.exclude
        var unshaped = context
        unshaped.profile = .none
        (uplink, downlink) = ShapedLink.pair(for: unshaped)
        uplink.listenerName = "exec"
        (packetUplink, packetDownlink) = UDPLink.pair(for: context, kind: .ipPacket)
        faults = ListenerFaults(
            loop: context.loop, profile: context.profile, seed: context.directionSeeds.downlink &+ 1)
        programTun = try TunDevice(adopting: programTunDescriptor)
        gatewayTun = try TunDevice(adopting: gatewayTunDescriptor)
        let upstream = try settings.dnsUpstream.map { try $0.resolve() } ?? []
        do {
            dns = try DNSForwarder(
                address: SocketAddress(numericHost: "127.0.0.1", port: 0)!, upstream: upstream,
                resolverConfiguration: settings.resolverConfiguration, context: context)
        } catch {
            context.logger.warning("exec: no DNS forwarder (\(error)); name lookups inside will fail")
            dns = nil
        }
        towardGateway = DatagramPump(link: packetUplink) { [unowned self] packet, _ in self.leaveUplink(packet) }
        towardProgram = DatagramPump(link: packetDownlink) { [unowned self] packet, _ in
            self.write(packet, to: self.programTun)
        }
        registrations.append(
            try loop.register(programTun.descriptor, interest: Epoll.readable) { [weak self] _ in
                self?.readPackets(from: self?.programTun, uplink: true)
            })
        registrations.append(
            try loop.register(gatewayTun.descriptor, interest: Epoll.readable) { [weak self] _ in
                self?.readPackets(from: self?.gatewayTun, uplink: false)
            })
        for (fd, family) in zip(listeners, [Namespaces.familyV4, Namespaces.familyV6]) {
            let acceptor = try TCPAcceptor(adopting: Socket.adopting(fd), loop: loop, logger: logger)
            try acceptor.start(onFailure: readBuffer.pipes.shortageHandler(logger: logger)) {
                [weak self] client, address in
                self?.accepted(client, from: address, family: family)
            }
            acceptors.append((acceptor, family))
        }
        dns?.onAnswer = { [weak self] answer in self?.destinations.learned(answer) }
    }

    var bound: BoundListener {
        BoundListener(
            kind: "exec",
            address: SocketAddress(numericHost: AddressBytes.format(ExecNamespace.programAddressV4), port: 0)!,
            upstream: nil)
    }

    func status() -> ListenerStatus {
        ListenerStatus(
            kind: "exec", address: bound.address, upstream: nil, activeConnections: relays.count + flows.count,
            connectionsAccepted: connectionsAccepted, connectionsRefused: connectionsRefused,
            uplink: packetUplink.counters, downlink: packetDownlink.counters,
            uplinkLateness: packetUplink.model.lateness, downlinkLateness: packetDownlink.model.lateness,
            destinations: destinations.report(
                live: relays.values.compactMap { relay in
                    relayDestinations[relay.id].map { ($0, relay.bytesUp, relay.bytesDown) }
                }
                    + flows.values.map { ($0.destination.description, $0.bytesUp, $0.bytesDown) }))
    }

    func connectionEntries() -> [ConnectionEntry] {
        relays.values.map { $0.entry(listener: bound.address) }
            + flows.values.map {
                ConnectionEntry(
                    id: 0, listener: bound.address.description, client: $0.client.description,
                    upstream: $0.destination.description, state: "flow", bytesUp: $0.bytesUp, bytesDown: $0.bytesDown)
            }
    }

    // MARK: packets

    private func readPackets(from device: TunDevice?, uplink: Bool) {
        guard let device else { return }
        let now = loop.clock.now()
        for _ in 0..<256 {
            let count: Int
            do {
                let result = try packetBuffer.withUnsafeMutableBytes { try device.read(into: $0) }
                guard case .processed(let read) = result, read > 0 else { return }
                count = read
            } catch {
                logger.warning("exec: \(error)")
                return
            }
            let packet = Array(packetBuffer[0..<count])
            let header = IPPacketHeader(parsing: packet)
            if uplink {
                if let header, isExcluded(header.destination) {
                    _ = leaveUplink(packet)
                } else if admitFromProgram(packet) {
                    towardGateway.offer(packet, at: now)
                }
            } else if let header, isExcluded(header.source) {
                _ = write(packet, to: programTun)
            } else {
                towardProgram.offer(packet, at: now)
            }
        }
    }

    /// Whether packets to or from `address` bypass the link: `--exclude` or the profile's `exclude`.
    private func isExcluded(_ address: [UInt8]) -> Bool {
        guard !exclude.isEmpty || !profile.exclude.isEmpty else { return false }
        return exclude.contains { $0.matches(addressBytes: address) }
            || profile.exclude.contains { $0.matches(addressBytes: address) }
    }

    /// Applies the offline switch to a packet the program sent: a blackhole takes everything, a refusal answers
    /// a connection request with a reset and takes the rest.
    private func admitFromProgram(_ packet: [UInt8]) -> Bool {
        switch profile.fault {
        case .none:
            return true
        case .blackhole:
            return false
        case .refuse:
            if let header = IPPacketHeader(parsing: packet), header.isConnectionRequest(packet) {
                connectionsRefused += 1
                _ = write(
                    IPPacketBuilder.reset(answering: header, sequence: header.sequenceNumber(packet)), to: programTun)
            }
            return false
        }
    }

    /// A packet at the end of the uplink: UDP leaves through a host socket, everything else enters the gateway.
    private func leaveUplink(_ packet: [UInt8]) -> Bool {
        if let header = IPPacketHeader(parsing: packet), header.transport == IPPacketHeader.udp,
            let payload = header.udpPayload(of: packet)
        {
            relayDatagram(payload, header: header)
            return true
        }
        return write(packet, to: gatewayTun)
    }

    private func write(_ packet: [UInt8], to device: TunDevice) -> Bool {
        guard case .processed? = try? device.write(packet) else { return false }
        return true
    }

    // MARK: TCP

    private func accepted(_ client: Socket, from address: SocketAddress, family: Int32) {
        guard let destination = client.originalDestinationOrClose(family: family, from: address, logger: logger) else {
            return
        }
        connectionsAccepted += 1
        destinations.opened(destination)
        let relay = TCPRelay(
            id: nextRelayID, host: self, client: client, clientAddress: address,
            upstreamName: destinations.upstreamName(for: destination), upstreamAddresses: [mapToHost(destination)])
        nextRelayID += 1
        relay.stageSource = faults
        relays[relay.id] = relay
        relayDestinations[relay.id] = destination.description
        logger.debug("exec: connection \(relay.id) from \(address) to \(destination)")
        relay.start(blackholed: false)
    }

    func relayClosed(_ relay: TCPRelay) {
        guard relays.removeValue(forKey: relay.id) != nil,
            let destination = relayDestinations.removeValue(forKey: relay.id)
        else { return }
        destinations.closed(destination, bytesUp: relay.bytesUp, bytesDown: relay.bytesDown)
    }

    private func mapToHost(_ destination: SocketAddress) -> SocketAddress {
        ExecNamespace.hostAddress(for: destination, dns: dns?.bound.address)
    }

    // MARK: UDP

    private func relayDatagram(_ payload: ArraySlice<UInt8>, header: IPPacketHeader) {
        let key = IPPacketHeader(flowOf: header)
        let flow: ExecDatagramFlow
        if let existing = flows[key] {
            flow = existing
        } else {
            guard flows.count < options.udpFlowLimit,
                let client = SocketAddress(numericHost: AddressBytes.format(header.source), port: header.sourcePort),
                let inside = SocketAddress(
                    numericHost: AddressBytes.format(header.destination), port: header.destinationPort)
            else { return }
            do {
                flow = try ExecDatagramFlow(
                    client: client, destination: inside, host: mapToHost(inside), header: header,
                    loop: loop
                ) { [weak self] reply, flow in self?.replied(reply, on: flow) }
            } catch {
                logger.debug("exec: UDP to \(inside): \(error)")
                return
            }
            flows[key] = flow
            destinations.opened(inside)
            idleSweep.arm(at: loop.clock.now() + options.udpIdleTimeout)
        }
        flow.send(payload, at: loop.clock.now())
    }

    private func replied(_ payload: [UInt8], on flow: ExecDatagramFlow) {
        let header = flow.header
        let packet = IPPacketBuilder.udp(
            from: header.destination, port: header.destinationPort,
            to: header.source, port: header.sourcePort, payload: payload[...])
        if isExcluded(header.destination) {
            _ = write(packet, to: programTun)
        } else {
            towardProgram.offer(packet, at: loop.clock.now())
        }
    }

    private func forgetIdleFlows(at now: Instant) {
        for (key, flow) in flows where flow.lastActivity + options.udpIdleTimeout <= now {
            forget(flow)
            flows.removeValue(forKey: key)
        }
        if !flows.isEmpty { idleSweep.arm(at: now + options.udpIdleTimeout) }
    }

    private func forget(_ flow: ExecDatagramFlow) {
        flow.close()
        destinations.closed(flow.destination.description, bytesUp: flow.bytesUp, bytesDown: flow.bytesDown)
    }

    // MARK: listener

    func apply(_ profile: Profile) {
        self.profile = profile
        packetUplink.update(profile: profile.uplink)
        packetDownlink.update(profile: profile.downlink)
        dns?.apply(profile)
        faults.apply(profile, to: relays.values)
    }

    /// Resets every live TCP connection (the gateway's kernel sends the program its reset across the link) and
    /// forgets every UDP flow.
    func resetConnections() {
        for relay in Array(relays.values) { relay.close(reset: true) }
        for flow in flows.values { forget(flow) }
        flows.removeAll()
    }

    func close() {
        for (acceptor, _) in acceptors { acceptor.close() }
        acceptors.removeAll()
        for relay in Array(relays.values) { relay.close(reset: true) }
        for flow in flows.values { flow.close() }
        flows.removeAll()
        idleSweep.cancel()
        for registration in registrations { loop.deregister(registration) }
        registrations.removeAll()
        towardGateway.close()
        towardProgram.close()
        packetUplink.close()
        packetDownlink.close()
        uplink.close()
        downlink.close()
        dns?.close()
        programTun.close()
        gatewayTun.close()
    }
}

extension IPPacketHeader {
    /// The key of a UDP flow: the header without its payload offset.
    init(flowOf header: IPPacketHeader) {
        self = header
        transportOffset = 0
    }
}

/// One UDP flow of an exec'd program, relayed from a host socket connected to its destination.
///
/// Lives on the event loop thread.
final class ExecDatagramFlow {
    let client: SocketAddress
    let destination: SocketAddress
    let header: IPPacketHeader
    private let socket: Socket
    private let loop: EventLoop
    private var registration: EventLoop.RegistrationID?
    private(set) var lastActivity: Instant
    /// Payload bytes sent toward the destination, and received from it.
    private(set) var bytesUp = 0
    private(set) var bytesDown = 0
    private var buffer = [UInt8](repeating: 0, count: 65536)

    init(
        client: SocketAddress, destination: SocketAddress, host: SocketAddress, header: IPPacketHeader, loop: EventLoop,
        onReply: @escaping ([UInt8], ExecDatagramFlow) -> Void
    ) throws {
        self.client = client
        self.destination = destination
        self.header = header
        self.loop = loop
        lastActivity = loop.clock.now()
        socket = try Socket.datagram(connectedTo: host)
        do {
            registration = try loop.register(socket.descriptor, interest: Epoll.readable) { [weak self] _ in
                guard let self else { return }
                for _ in 0..<64 {
                    let result = try? self.buffer.withUnsafeMutableBytes { try self.socket.read(into: $0) }
                    guard case .processed(let count)? = result else { return }
                    self.lastActivity = self.loop.clock.now()
                    self.bytesDown += count
                    onReply(Array(self.buffer[0..<count]), self)
                }
            }
        } catch {
            socket.close()
            throw error
        }
    }

    func send(_ payload: ArraySlice<UInt8>, at now: Instant) {
        lastActivity = now
        if case .processed? = try? Array(payload).withUnsafeBytes({ try socket.write($0) }) { bytesUp += payload.count }
    }

    func close() {
        if let registration { loop.deregister(registration) }
        registration = nil
        socket.close()
    }
}

extension Socket {
    /// Where the program sent this redirected connection (`SO_ORIGINAL_DST`), or nil after logging why and closing
    /// it. Both exec modes' listeners accept through it. On the event loop thread.
    func originalDestinationOrClose(family: Int32, from address: SocketAddress, logger: Logger) -> SocketAddress? {
        do {
            return try originalDestination(family: family)
        } catch {
            logger.warning("exec: connection from \(address): \(error)")
            close()
            return nil
        }
    }
}
