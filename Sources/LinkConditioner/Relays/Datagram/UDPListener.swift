import Logging

/// A UDP socket that relays each client address's datagrams to one upstream through the listener's link.
///
/// Lives on the event loop thread. Each client address is a flow with its own connected upstream socket, so
/// answers find their way back; a flow idle for `ProxyOptions.udpIdleTimeout` is forgotten. Datagram boundaries
/// are kept: one datagram in, one (or, duplicated, two, or, lost, no) datagram out.
final class UDPListener: ConditionedListener {
    let loop: EventLoop
    let socket: Socket
    let localAddress: SocketAddress
    let upstream: Endpoint
    let upstreamAddress: SocketAddress
    let uplink: UDPLink
    let downlink: UDPLink
    let options: ProxyOptions
    let logger: Logger
    let readBuffer: ReadBuffer
    private(set) var profile: Profile
    private var registration: EventLoop.RegistrationID?
    private var flows: [SocketAddress: UDPFlow] = [:]
    /// The flow the last datagram belonged to: a burst from one client finds it without hashing its address.
    private var lastFlow: UDPFlow?
    private var flowsPerHost: [String: Int] = [:]
    private var flowsOpened = 0
    private var flowsRefused = 0
    private var readScheduled = false
    private var clientDropCounter = KernelDropCounter()
    /// Client datagrams the kernel dropped at the listening socket's full receive buffer.
    private var uplinkKernelDrops = 0
    /// Upstream datagrams the kernel dropped at the flows' full receive buffers, closed flows included.
    private var downlinkKernelDrops = 0
    /// Datagrams a fault (a blocked port, a cut flow) kept from crossing, client to upstream and back.
    private var uplinkFaultDrops = 0
    private var downlinkFaultDrops = 0
    /// Where flows are reported under `run --record`; nil when not recording.
    let recorder: TrafficRecorder?
    /// Client datagrams the flows' upstream sockets refused to send.
    let uplinkRefused = RefusedDatagrams()
    /// Upstream datagrams the listening socket refused to send back to clients.
    let downlinkRefused = RefusedDatagrams()

    /// Batches read per loop turn before other sockets get their turn.
    static let batchesPerTurn = 4
    /// The receive buffer asked for every relay socket: a burst of a few thousand datagrams waits in the kernel
    /// while the loop is busy instead of being dropped.
    static let receiveBufferBytes: Int32 = 4 << 20

    /// Binds `address` and starts receiving; `upstreamAddresses` must hold at least one address.
    init(address: SocketAddress, upstream: Endpoint, upstreamAddresses: [SocketAddress], context: ListenerContext)
        throws
    {
        guard let upstreamAddress = upstreamAddresses.first else {
            throw ResolutionError(host: upstream.host, reason: "no address to relay UDP to")
        }
        let socket = try Socket.datagram(boundTo: address)
        do {
            socket.enlargeReceiveBuffer(to: Self.receiveBufferBytes)
            try socket.reportKernelDrops()
            localAddress = try socket.localAddress()
        } catch {
            socket.close()
            throw error
        }
        self.socket = socket
        self.loop = context.loop
        self.upstream = upstream
        self.upstreamAddress = upstreamAddress
        self.profile = context.profile
        self.options = context.options
        self.logger = context.logger
        self.readBuffer = context.readBuffer
        self.recorder = context.recorder
        (uplink, downlink) = UDPLink.pair(for: context)
        uplink.outbox = readBuffer.outbox
        downlink.outbox = readBuffer.outbox
        uplink.stampsArrivals(on: socket)
        do {
            registration = try loop.register(socket.descriptor, interest: Epoll.readable | Epoll.edgeTriggered) {
                [weak self] _ in
                self?.receiveFromClients()
            }
        } catch {
            socket.close()
            throw error
        }
    }

    var bound: BoundListener { BoundListener(kind: "udp", address: localAddress, upstream: upstream.description) }

    var addresses: ListenerAddresses {
        ListenerAddresses(
            name: "udp relay", role: .commandLine,
            listening: [TransportAddress(transport: .udp, address: localAddress)],
            upstreams: [TransportAddress(transport: .udp, address: upstreamAddress)])
    }

    func connectionEntries() -> [ConnectionEntry] {
        flows.keys.map {
            ConnectionEntry(
                id: 0, listener: localAddress.description, client: $0.description,
                upstream: upstream.description, state: "flow")
        }
    }

    func status() -> ListenerStatus {
        ListenerStatus(
            kind: "udp", address: localAddress, upstream: upstream.description, activeConnections: flows.count,
            connectionsAccepted: flowsOpened, connectionsRefused: flowsRefused,
            uplink: uplink.counters, downlink: downlink.counters,
            uplinkKernelDrops: uplinkKernelDrops + uplinkRefused.count,
            downlinkKernelDrops: downlinkKernelDrops + downlinkRefused.count,
            uplinkFaultDrops: uplinkFaultDrops, downlinkFaultDrops: downlinkFaultDrops,
            uplinkLateness: uplink.model.lateness, downlinkLateness: downlink.model.lateness)
    }

    /// Reads client datagrams in batches until the socket is empty, at most `batchesPerTurn` batches per loop turn;
    /// what each batch releases at once is sent together.
    private func receiveFromClients() {
        readScheduled = false
        let now = loop.clock.now()
        let batch = readBuffer.datagrams
        for _ in 0..<Self.batchesPerTurn {
            let received: IOResult<Int>
            do {
                received = try socket.receiveDatagrams(into: batch)
            } catch {
                logger.debug("udp \(localAddress): receive: \(error)")
                continue
            }
            guard case .processed(let count) = received else { return }
            readBuffer.outbox.holding {
                for index in 0..<count { fromClient(batch, index, at: now) }
                uplink.serviceAfterBatch(at: now)
            }
            // Fewer than asked: the socket was empty, and the next datagram raises a new edge.
            if count < batch.capacity { return }
        }
        scheduleRead()
    }

    /// Hands datagram `index` of `batch` to its client's flow, and counts the kernel drops it reports.
    private func fromClient(_ batch: DatagramBatch, _ index: Int, at now: Instant) {
        let datagram = batch[index]
        uplinkKernelDrops += clientDropCounter.newDrops(reported: datagram.kernelDropCount)
        guard profile.fault != .blackhole else { return }
        if profile.connection.blocking(port: upstreamAddress.port) != nil, flows[datagram.sender] == nil {
            return countFaultDrop(up: true)
        }
        guard let flow = flow(for: datagram.sender, at: now) else { return }
        batch.withDatagram(index) { flow.cross($0, up: true, arrival: datagram.arrival, at: now) }
    }

    /// The flow of `client`, opened if the limits and the profile allow; nil drops the datagram.
    private func flow(for client: SocketAddress, at now: Instant) -> UDPFlow? {
        if let lastFlow, lastFlow.client == client { return lastFlow }
        if let flow = flows[client] {
            lastFlow = flow
            return flow
        }
        let host = client.host
        guard profile.fault != .refuse, flows.count < options.udpFlowLimit,
            flowsPerHost[host, default: 0] < options.udpFlowsPerClient
        else {
            flowsRefused += 1
            return nil
        }
        let flow: UDPFlow
        do {
            flow = try UDPFlow(listener: self, client: client, upstream: upstreamAddress, at: now)
        } catch {
            logger.warning("udp flow from \(client): cannot open a socket to \(upstreamAddress): \(error)")
            flowsRefused += 1
            return nil
        }
        flows[client] = flow
        flowsPerHost[host, default: 0] += 1
        flowsOpened += 1
        logger.debug("udp flow from \(client) to \(upstream)")
        return flow
    }

    /// Continues reading on a later loop turn, so a flood of datagrams cannot monopolise the loop.
    private func scheduleRead() {
        guard !readScheduled else { return }
        readScheduled = true
        loop.schedule(at: loop.clock.now()) { [weak self] in self?.receiveFromClients() }
    }

    /// Sends one datagram to `client` from the listening socket, through the loop's outbox (a refusal is counted
    /// with the downlink's kernel drops).
    func send(_ bytes: UnsafeRawBufferPointer, to client: SocketAddress) {
        readBuffer.outbox.send(bytes, on: socket, to: client, refusals: downlinkRefused)
    }

    /// Counts a datagram a fault kept from crossing.
    func countFaultDrop(up: Bool) {
        if up { uplinkFaultDrops += 1 } else { downlinkFaultDrops += 1 }
    }

    /// Counts upstream datagrams the kernel dropped at a flow's socket.
    func countDownlinkKernelDrops(_ drops: Int) {
        downlinkKernelDrops += drops
    }

    func flowClosed(_ flow: UDPFlow) {
        if lastFlow === flow { lastFlow = nil }
        guard flows[flow.client] === flow else { return }
        flows.removeValue(forKey: flow.client)
        let host = flow.client.host
        flowsPerHost[host, default: 1] -= 1
        if flowsPerHost[host] == 0 { flowsPerHost.removeValue(forKey: host) }
    }

    /// Switches both directions to `profile`; datagrams already on the link keep their fate.
    func apply(_ profile: Profile) {
        self.profile = profile
        uplink.update(profile: profile.uplink)
        downlink.update(profile: profile.downlink)
        uplink.stampsArrivals(on: socket)
        for flow in flows.values { flow.stampsArrivals() }
    }

    /// Forgets every flow: datagrams on the link are dropped, and a client's next datagram opens a new flow
    /// (a new upstream port), as after a NAT rebinding.
    func resetConnections() {
        for flow in Array(flows.values) { flow.close() }
    }

    func close() {
        if let registration { loop.deregister(registration) }
        registration = nil
        resetConnections()
        readBuffer.outbox.flush()
        socket.close()
        uplink.close()
        downlink.close()
    }
}

/// One client address's datagrams to and from the upstream, with its own connected upstream socket.
///
/// Lives on the event loop thread.
final class UDPFlow {
    let client: SocketAddress
    private unowned let listener: UDPListener
    private let upstream: Socket
    private var registration: EventLoop.RegistrationID?
    private var uplink: DatagramPump!
    private var downlink: DatagramPump!
    private var lastActivity: Instant
    private var idleTimer: EventLoop.TimerID?
    private var isClosed = false
    private var dropCounter = KernelDropCounter()
    private var faults: DatagramFlowFaults
    /// What `run --record` is told about this flow; nil when not recording.
    private var recording: DatagramFlowRecording?
    /// Send one datagram on toward the upstream or the client, and record it.
    private let sendUp: (UnsafeRawBufferPointer) -> Void
    private let sendDown: (UnsafeRawBufferPointer) -> Void
    private var loop: EventLoop { listener.loop }

    init(listener: UDPListener, client: SocketAddress, upstream address: SocketAddress, at now: Instant) throws {
        self.listener = listener
        self.client = client
        self.lastActivity = now
        self.faults = DatagramFlowFaults(opened: now, upstreamPort: address.port)
        let upstream = try Socket.datagram(connectedTo: address)
        upstream.enlargeReceiveBuffer(to: UDPListener.receiveBufferBytes)
        do {
            try upstream.reportKernelDrops()
        } catch {
            upstream.close()
            throw error
        }
        self.upstream = upstream
        let recording = listener.recorder.map {
            DatagramFlowRecording(
                recorder: $0, loop: listener.loop, listener: listener.localAddress.description,
                client: client.description, destination: address.description, at: now)
        }
        self.recording = recording
        let sendUp: (UnsafeRawBufferPointer) -> Void = { [unowned listener] bytes in
            listener.readBuffer.outbox.send(bytes, on: upstream, to: nil, refusals: listener.uplinkRefused)
            recording?.delivered(bytes.count, up: true)
        }
        let sendDown: (UnsafeRawBufferPointer) -> Void = { [unowned listener] bytes in
            listener.send(bytes, to: client)
            recording?.delivered(bytes.count, up: false)
        }
        (self.sendUp, self.sendDown) = (sendUp, sendDown)
        uplink = DatagramPump(link: listener.uplink) { bytes, _ in
            bytes.withUnsafeBytes(sendUp)
            return true
        }
        downlink = DatagramPump(link: listener.downlink) { bytes, _ in
            bytes.withUnsafeBytes(sendDown)
            return true
        }
        uplink.lost = { recording?.dropped(up: true, cause: .loss) }
        downlink.lost = { recording?.dropped(up: false, cause: .loss) }
        do {
            registration = try listener.loop.register(
                upstream.descriptor, interest: Epoll.readable | Epoll.edgeTriggered
            ) { [weak self] _ in
                self?.receiveFromUpstream()
            }
        } catch {
            uplink.close()
            downlink.close()
            upstream.close()
            throw error
        }
        armIdleTimer()
        stampsArrivals()
    }

    /// Has the upstream socket stamp arrivals while the downlink may delay them.
    func stampsArrivals() {
        listener.downlink.stampsArrivals(on: upstream)
    }

    /// Hands one datagram read from the client (`up`) or the upstream at `now` to its direction's link, counted
    /// from when it reached the socket (`arrival`): sent on at once, with no copy, when the link passes it through
    /// unchanged; otherwise held as a copy until the link decides.
    func cross(_ datagram: UnsafeRawBufferPointer, up: Bool, arrival: Instant?, at now: Instant) {
        guard passesFaults(datagram.count, up: up, at: now) else { return }
        lastActivity = now
        recording?.read(datagram.count, up: up, at: now)
        let pump: DatagramPump = up ? uplink : downlink
        if pump.deliversAtOnce(datagram.count) { return (up ? sendUp : sendDown)(datagram) }
        if !pump.offer(Array(datagram), arrival: arrival, at: now) { recording?.dropped(up: up, cause: .queue) }
    }

    /// Whether the profile's faults let a datagram of `size` bytes cross; counts and records the ones they stop.
    private func passesFaults(_ size: Int, up: Bool, at now: Instant) -> Bool {
        guard faults.admit(size, up: up, profile: listener.profile, at: now) != nil else { return true }
        listener.countFaultDrop(up: up)
        recording?.dropped(up: up, cause: .fault)
        return false
    }

    /// Reads upstream datagrams in batches until the socket is empty, at most `batchesPerTurn` per loop turn.
    private func receiveFromUpstream() {
        guard !isClosed else { return }
        let now = loop.clock.now()
        let batch = listener.readBuffer.datagrams
        for _ in 0..<UDPListener.batchesPerTurn {
            let received: IOResult<Int>
            do {
                received = try upstream.receiveDatagrams(into: batch)
            } catch {
                // ECONNREFUSED and the like: an ICMP error for an earlier datagram; UDP carries on.
                continue
            }
            guard case .processed(let count) = received else { return }
            listener.readBuffer.outbox.holding {
                for index in 0..<count {
                    let datagram = batch[index]
                    listener.countDownlinkKernelDrops(dropCounter.newDrops(reported: datagram.kernelDropCount))
                    if listener.profile.fault == .blackhole {
                        lastActivity = now
                        continue
                    }
                    batch.withDatagram(index) { cross($0, up: false, arrival: datagram.arrival, at: now) }
                }
                listener.downlink.serviceAfterBatch(at: now)
            }
            if count < batch.capacity { return }
        }
        loop.schedule(at: now) { [weak self] in self?.receiveFromUpstream() }
    }

    /// Checks for idleness when the timeout since the last datagram has passed, and closes the flow if so.
    private func armIdleTimer() {
        let timeout = listener.options.udpIdleTimeout
        idleTimer = loop.schedule(at: lastActivity + timeout) { [weak self] in
            guard let self, !self.isClosed else { return }
            self.idleTimer = nil
            if self.loop.clock.now() - self.lastActivity >= timeout {
                self.listener.logger.debug("udp flow from \(self.client) idle for \(timeout): forgotten")
                self.close()
            } else {
                self.armIdleTimer()
            }
        }
    }

    func close() {
        guard !isClosed else { return }
        isClosed = true
        if let idleTimer { loop.cancel(idleTimer) }
        if let registration { loop.deregister(registration) }
        listener.readBuffer.outbox.flush()
        uplink.close()
        downlink.close()
        upstream.close()
        recording?.closed()
        listener.flowClosed(self)
    }
}
