import Logging

/// What a relay needs from whoever accepted its client: the loop, the shared link, limits, and a way to say it closed.
///
/// Lives on the event loop thread.
protocol RelayHost: AnyObject {
    var loop: EventLoop { get }
    var logger: Logger { get }
    var uplink: ShapedLink { get }
    var downlink: ShapedLink { get }
    var options: ProxyOptions { get }
    var readBuffer: ReadBuffer { get }
    /// The profile's connection faults (stall, blocked ports), or nil for a link that has none.
    var connectionFaults: ListenerFaults? { get }
    /// Where pass-through connections are handed to be carried by splice(2) on other cores; nil keeps every
    /// connection on the main loop.
    var spliceLoops: SpliceLoops? { get }
    /// Every address linkcond listens on, told of upstream connections that could come back to one (a loop);
    /// nil for a host whose upstreams never reach linkcond's namespace (an exec'd program's).
    var ownListeners: OwnListeners? { get }
    func relayClosed(_ relay: TCPRelay)
}

extension RelayHost {
    var ownListeners: OwnListeners? { nil }
    /// A host without faults of its own: an excluded destination's direct link.
    var connectionFaults: ListenerFaults? { nil }
    /// A host whose connections all stay on the main loop.
    var spliceLoops: SpliceLoops? { nil }
}

/// A front end's part in a relay whose upstream was chosen by a proxy protocol (SOCKS5, HTTP CONNECT).
///
/// Its replies go to the client through the downlink, so they pay the link's delay like any upstream byte.
protocol UpstreamHandshake: AnyObject {
    /// Whether the front end answers the client once the upstream accepted, which plays the TCP handshake's part.
    var repliesOnConnect: Bool { get }
    /// Bytes for the client once the upstream accepted (a SOCKS or HTTP success reply); `local` reads linkcond's
    /// end, a `getsockname` only a reply that names it pays for.
    func replyOnConnect(local: () -> SocketAddress?) -> [UInt8]
    /// Bytes for the client, before closing, when no upstream address accepted (the protocol's error reply).
    func replyOnFailure(_ error: Errno) -> [UInt8]
}

/// One client connection relayed to its upstream through a listener's uplink and downlink.
///
/// Lives on the event loop thread. Both sockets are registered edge-triggered, the upstream for reading, writing
/// and hang-up, the client for reading and hang-up until a write to it first would block: an accepted socket is
/// writable, and its edge would only cost an event per connection. The pumps remember readiness between edges. A
/// FIN is forwarded as a half-close after the data before it, a reset as a reset, and a failed upstream connect
/// resets the client. The loop holds the relay while it watches either socket (`EventReceiver`); every way out
/// (closing, handing over to a splice loop, an upstream given up) deregisters the socket it leaves.
final class TCPRelay {
    enum State {
        case connecting
        case blackholed
        case relaying
        /// The upstream failed and the front end's error reply is on its way to the client.
        case failing
        /// A fault cut the connection silently: nothing crosses until the client gives up.
        case hung
        /// A splice loop carries both sockets; the pumps wait, holding nothing, until it hands them back.
        case spliced
        case closed
    }

    let id: UInt64
    unowned let host: RelayHost
    let client: Socket
    let clientAddress: SocketAddress
    /// The upstream as the user named it, for logs.
    let upstreamName: String
    /// Every address the upstream resolved to, tried in order until one accepts.
    let upstreamAddresses: [SocketAddress]
    private let handshake: UpstreamHandshake?
    /// Client bytes a front end read past its request (pipelined data), sent upstream ahead of anything read later.
    private var preloadedClientBytes: [UInt8]
    /// Whether the client's stream ends with the preloaded bytes (a front end decided nothing after them is forwarded).
    private let preloadEndsStream: Bool
    /// Rewrites what the client sends later (an HTTP proxy's requests); nil relays it as read.
    private let uplinkFilter: StreamFilter?
    private(set) var upstream: Socket?
    /// Where the stages (faults, toxics) of each direction come from; nil relays without stages.
    var stageSource: StageSource?
    /// The seeds drawn for the stages when the pumps were made, kept for stages made later (a fault set while the
    /// connection is open), so they draw what stages made with the pumps would have.
    private var stageSeeds: StageSeeds?
    private(set) var state: State
    private var uplink: StreamPump!
    private var downlink: StreamPump!
    private var upstreamAttempt = 0
    /// The front end's connect timeout while the upstream has not accepted (`limitConnect`).
    private var connectTimer: EventLoop.TimerID?
    /// Whether the upstream's port is blackholed by `blocked.ports`: the connect is never made.
    private var portBlackholed = false
    /// Why the front end gave up a connect it had not yet made (`abandonConnect`): the upstream socket is opened
    /// only to carry the failure reply, never connected.
    private var connectGivenUp: Errno?
    /// The client's registration; one a front end's session handed over is taken over at `start`, with the read
    /// events the session was told of and left unread (`unreadClientEvents`).
    private var clientRegistration: EventLoop.RegistrationID?
    /// Whether the client's registration asks for writable edges: from the first write to it that would block.
    private var clientWatchesWritable = false
    /// Every event the client reported before the upstream accepted (its front end's session's unread ones first),
    /// or'ed: the uplink starts from them, so it reads only a client that has sent something, and stops at a short
    /// read (`StreamPump.startReading`).
    private var clientEventsBeforeRelaying: UInt32 = 0
    private var upstreamRegistration: EventLoop.RegistrationID?
    /// The upstream connection's local address, noted with `OwnListeners` because its port is one linkcond listens
    /// on: a client arriving from it is this relay coming back (a loop).
    private var notedUpstreamLocal: SocketAddress?
    /// This connection's number in the recording, when `run --record` records it.
    private var recordedID: UInt64?
    /// Who closed first, for the recording: the side whose stream ended or failed first.
    private var closingParty: ClosingParty?
    /// The host's loop and read buffer, kept: reached through the unowned host, each use paid a checked retain.
    private let loop: EventLoop
    private let readBuffer: ReadBuffer
    private var logger: Logger { host.logger }

    var isClosed: Bool { state == .closed }

    /// Whether the link emulates the TCP handshake for this connection; a front end's reply on connect plays it.
    var emulatesHandshake: Bool { !(handshake?.repliesOnConnect ?? false) }

    /// The emulated handshake's fate over the lossy link, drawn when the connect was scheduled; nil when the link
    /// does not emulate it.
    private(set) var handshakeAttempts: HandshakeAttempts?
    /// Why a blackholed connection is held, for the recording: the profile's blackhole, or a handshake all lost.
    private var heldCause = StallCause.offline
    /// What the splice loop carrying the connection moved and the pumps have not counted yet; nil on the main loop.
    private var splicedBytes: SplicedBytes?
    /// The ticket the splice loops know the connection by while one carries it.
    private var spliceTicket: UInt64?
    /// Set when a splice loop could not carry the connection (it found no pipe): it stays on the main loop.
    private var staysOnMainLoop = false

    /// Bytes a connection carries on the main loop before it may go to a splice loop, so a short exchange (a request
    /// and its answer) is not handed between threads for nothing; a bulk transfer passes it in a few reads.
    static let bytesBeforeHandOver = 64 * 1024

    init(id: UInt64, host: RelayHost, client: Socket, clientAddress: SocketAddress, upstreamName: String,
         upstreamAddresses: [SocketAddress], handshake: UpstreamHandshake? = nil,
         preloadedClientBytes: [UInt8] = [], preloadEndsStream: Bool = false, uplinkFilter: StreamFilter? = nil,
         clientRegistration: EventLoop.RegistrationID? = nil, unreadClientEvents: UInt32 = 0) {
        precondition(!upstreamAddresses.isEmpty, "a relay needs at least one upstream address")
        self.id = id
        self.host = host
        self.loop = host.loop
        self.readBuffer = host.readBuffer
        self.client = client
        self.clientAddress = clientAddress
        self.upstreamName = upstreamName
        self.upstreamAddresses = upstreamAddresses
        self.handshake = handshake
        self.preloadedClientBytes = preloadedClientBytes
        self.preloadEndsStream = preloadEndsStream
        self.uplinkFilter = uplinkFilter
        self.clientRegistration = clientRegistration
        self.clientEventsBeforeRelaying = unreadClientEvents
        self.state = .connecting
    }

    /// Registers the client and starts the upstream connection, or holds the client if the link is blackholed.
    func start(blackholed: Bool) {
        if let recorder = host.uplink.recorder {
            let destination = upstreamAddresses[0].description
            recordedID = recorder.connectionOpened(
                listener: host.uplink.listenerName, client: clientAddress.description, destination: destination,
                name: upstreamName == destination ? nil : upstreamName, at: loop.clock.now())
        }
        do {
            if let handedOver = clientRegistration {
                clientRegistration = try loop.transfer(handedOver, interest: Self.clientInterest, receiver: self)
            } else {
                clientRegistration = try loop.register(client.descriptor, interest: Self.clientInterest, receiver: self)
            }
        } catch {
            logger.warning("connection \(id): cannot watch client \(clientAddress): \(error)")
            client.close()
            state = .closed
            host.relayClosed(self)
            return
        }
        if blackholed {
            state = .blackholed
            if let recordedID { host.uplink.recorder?.stall(recordedID, .up, cause: .offline, ended: false, at: loop.clock.now()) }
        } else {
            connectAfterUplinkDelay()
        }
    }

    /// Connects once the first SYN crossed the emulated link (the uplink's delay, plus 1, 2, 4 … s for each SYN
    /// lost and resent) and the profile's `connect.stall` has passed. A handshake whose every attempt is lost
    /// holds the client as a blackhole does, until a profile change releases it.
    private func connectAfterUplinkDelay() {
        let stall = host.connectionFaults?.connection.connectStall ?? .zero
        var reach = host.uplink.currentDelay
        if emulatesHandshake {
            let attempts = host.uplink.model.drawHandshake(answeredOver: host.downlink.model)
            guard let reached = attempts.serverReached, !attempts.isAbandoned else {
                handshakeAttempts = nil
                state = .blackholed
                heldCause = .loss
                if let recordedID { host.uplink.recorder?.stall(recordedID, .up, cause: .loss, ended: false, at: loop.clock.now()) }
                return
            }
            handshakeAttempts = attempts
            reach = reached
        }
        let delay = reach + stall
        if delay <= .zero {
            connectUpstream()
            return
        }
        if stall > .zero { recordFaultStall(ended: false) }
        loop.schedule(at: loop.clock.now() + delay) { [weak self] in
            guard let self, self.state == .connecting else { return }
            if stall > .zero { self.recordFaultStall(ended: true) }
            self.connectUpstream()
        }
    }

    /// Records the client's bytes held by a connection fault (a connect stall, a blackholed port) while no pump
    /// exists yet to report it.
    private func recordFaultStall(ended: Bool) {
        if let recordedID { host.uplink.recorder?.stall(recordedID, .up, cause: .fault, ended: ended, at: loop.clock.now()) }
    }

    /// Whether the relay holds, blackholed, a client that has closed its side: the first connection to give up
    /// when descriptors run out, since its client may be gone for good.
    var holdsFinishedClient: Bool { state == .blackholed && clientEventsBeforeRelaying & Epoll.readHangUp != 0 }

    /// Resets a held client that has closed its side; its request is lost. Does nothing to any other relay.
    func giveUpFinishedClient() {
        guard holdsFinishedClient else { return }
        close(reset: true)
    }

    /// Leaves the blackhole: connects upstream and starts relaying what the client sent meanwhile.
    func release() {
        guard state == .blackholed else { return }
        state = .connecting
        if let recordedID { host.uplink.recorder?.stall(recordedID, .up, cause: heldCause, ended: true, at: loop.clock.now()) }
        heldCause = .offline
        connectAfterUplinkDelay()
    }

    private static let edgeInterest = Epoll.readable | Epoll.writable | Epoll.readHangUp | Epoll.priority | Epoll.edgeTriggered
    /// The client's interest until a write to it would block (`destinationBlocked`); a front end's session watches
    /// its client for the same, so the relay takes the registration over without an `epoll_ctl`.
    static let clientInterest = edgeInterest & ~Epoll.writable

    /// A TCP socket for the upstream, noted with the pool as the loop's newest descriptor; when descriptors are
    /// exhausted, the kept splice pipes are closed and the socket tried once more, so kept pipes never cost a
    /// connection.
    private static func openUpstreamSocket(family: Int32, pipes: SplicePipePool, logger: Logger) throws(SystemError) -> Socket {
        let socket: Socket
        do {
            socket = try Socket.tcp(family: family)
        } catch {
            guard error.isDescriptorShortage, pipes.releaseForShortage(logger: logger) else { throw error }
            socket = try Socket.tcp(family: family)
        }
        pipes.noteOpened(socket.descriptor)
        return socket
    }

    private func connectUpstream() {
        let address = upstreamAddresses[upstreamAttempt]
        let socket: Socket
        do {
            socket = try Self.openUpstreamSocket(family: address.family, pipes: readBuffer.pipes, logger: logger)
        } catch {
            fail("cannot open a socket for upstream \(address): \(error)")
            return
        }
        upstream = socket
        uplink?.close()
        downlink?.close()
        let buffer = host.options.connectionBuffer
        uplink = StreamPump(relay: self, link: host.uplink, source: client, destination: socket, capacity: buffer, readBuffer: readBuffer)
        downlink = StreamPump(relay: self, link: host.downlink, source: socket, destination: client, capacity: buffer, readBuffer: readBuffer)
        uplink.filter = uplinkFilter
        uplink.noDelayBeforeSecondWrite = true
        if let stageSource {
            let seeds = stageSource.drawStageSeeds()
            stageSeeds = seeds
            if stageSource.needsStages { (uplink.stage, downlink.stage) = stageSource.makeStages(for: self, seeds: seeds, speaker: nil) }
        }
        if let recordedID, let recorder = host.uplink.recorder {
            uplink.recording = PumpRecording(recorder: recorder, connection: recordedID, direction: .up)
            downlink.recording = PumpRecording(recorder: recorder, connection: recordedID, direction: .down)
        }
        downlink.destinationReady = true
        downlink.destinationWritable = true
        uplink.sourceReadable = true
        if let connectGivenUp {
            upstreamAttempt = upstreamAddresses.count - 1
            upstreamFailed(address: address, connectGivenUp)
            return
        }
        switch host.connectionFaults?.connection.blocking(port: address.port) {
        case .refuse?:
            upstreamAttempt = upstreamAddresses.count - 1
            upstreamFailed(address: address, .connectionRefused)
            return
        case .blackhole?:
            portBlackholed = true
            recordFaultStall(ended: false)
            return
        case nil:
            portBlackholed = false
        }
        do {
            upstreamRegistration = try loop.register(socket.descriptor, interest: Self.edgeInterest, receiver: self)
            let connected = try socket.connect(to: address)
            notedUpstreamLocal = host.ownListeners?.noteUpstream(socket, to: address)
            if connected { upstreamConnected(events: 0) }
        } catch {
            upstreamFailed(address: address, error.errno)
            return
        }
    }

    /// Gives up the connect as timed out (`abandonConnect`) unless the upstream accepted by `deadline`: a front
    /// end's connect timeout. The timer goes once the upstream accepted or the relay closed, so a connection that
    /// set up in microseconds holds none for the whole timeout.
    func limitConnect(until deadline: Instant) {
        guard state == .connecting || state == .blackholed else { return }
        connectTimer = loop.schedule(at: deadline) { [weak self] in
            self?.connectTimer = nil
            self?.abandonConnect(.timedOut)
        }
    }

    private func cancelConnectTimer() {
        if let connectTimer { loop.cancel(connectTimer) }
        connectTimer = nil
    }

    /// Gives up a connect the upstream has not accepted (a front end's connect timeout): no further address is
    /// tried and the client gets the handshake's failure reply, or a reset. A connect not yet made (its SYN still
    /// crossing the uplink, a `connect.stall`, a blackhole) is given up all the same: the front end's timeout runs
    /// from the client's request, whatever holds the connect.
    func abandonConnect(_ error: Errno) {
        switch state {
        case .connecting where upstream != nil:
            upstreamAttempt = upstreamAddresses.count - 1
            upstreamFailed(address: upstreamAddresses[upstreamAttempt], error)
        case .connecting, .blackholed:
            if state == .blackholed, let recordedID {
                host.uplink.recorder?.stall(recordedID, .up, cause: heldCause, ended: true, at: loop.clock.now())
            }
            state = .connecting
            connectGivenUp = error
            connectUpstream()
        case .relaying, .failing, .hung, .spliced, .closed:
            return
        }
    }

    /// Tries the upstream's next address, or resets the client when none is left.
    private func upstreamFailed(address: SocketAddress, _ error: Errno) {
        if upstreamAttempt + 1 < upstreamAddresses.count, let upstream {
            logger.debug("connection \(id): upstream \(address): \(error); trying the next address")
            if let registration = upstreamRegistration { loop.deregister(registration) }
            upstreamRegistration = nil
            forgetUpstreamLocal()
            upstream.close()
            self.upstream = nil
            upstreamAttempt += 1
            connectUpstream()
            return
        }
        logger.warning("connection \(id) from \(clientAddress): upstream \(upstreamName) (\(address)) unreachable: \(error)")
        if let handshake {
            let reply = handshake.replyOnFailure(error)
            if !reply.isEmpty {
                state = .failing
                if let registration = upstreamRegistration { loop.deregister(registration) }
                upstreamRegistration = nil
                uplink.forwarding = false
                downlink.inject(reply, endOfStream: true, at: loop.clock.now())
                return
            }
        }
        close(reset: true)
    }

    /// Starts relaying once the upstream accepted; `events` is what its socket reported with the connect (0 for
    /// a connect that completed at once), so the downlink reads only an upstream that has already sent something.
    private func upstreamConnected(events: UInt32) {
        guard state == .connecting else { return }
        state = .relaying
        cancelConnectTimer()
        if let recordedID { host.uplink.recorder?.connectionEstablished(recordedID, at: loop.clock.now()) }
        uplink.destinationReady = true
        uplink.destinationWritable = true
        uplink.startReading(after: clientEventsBeforeRelaying)
        downlink.sourceReadable = true
        downlink.startReading(after: events)
        let now = loop.clock.now()
        if let handshake {
            let reply = handshake.replyOnConnect(local: { try? self.upstream?.localAddress() })
            if !reply.isEmpty { downlink.inject(reply, endOfStream: false, at: now) }
        }
        if !preloadedClientBytes.isEmpty || preloadEndsStream {
            uplink.inject(preloadedClientBytes, endOfStream: preloadEndsStream, at: now)
            preloadedClientBytes = []
        }
        pumpMayRead(uplink, at: now)
        pumpMayRead(downlink, at: now)
    }

    private func clientEvent(_ events: UInt32) {
        if state == .connecting || state == .blackholed { clientEventsBeforeRelaying |= events }
        switch state {
        case .blackholed:
            // A half-close (FIN) is held with the bytes before it and delivered after them once the link is back, as
            // a blackholed network's retransmissions would; only a client gone for good (a reset) ends the wait.
            if events & (Epoll.hangUp | Epoll.error) != 0 { close(reset: true) }
            return
        case .hung:
            // What the client sent before leaving was never relayed: the stream is cut, so it is reset.
            if events & (Epoll.readHangUp | Epoll.hangUp | Epoll.error) != 0 { close(reset: true) }
            return
        case .connecting where portBlackholed:
            if events & (Epoll.readHangUp | Epoll.hangUp | Epoll.error) != 0 { close(reset: true) }
            return
        case .connecting, .closed, .spliced:
            return
        case .failing:
            if events & (Epoll.writable | Epoll.hangUp | Epoll.error) != 0 {
                downlink.destinationWritable = true
                handle(downlink.writeDeliverable())
            }
            return
        case .relaying:
            break
        }
        let now = loop.clock.now()
        if events & StreamPump.readEvents != 0 {
            uplink.sourceEvent(events)
            pumpMayRead(uplink, at: now)
        }
        if state != .closed, events & (Epoll.writable | Epoll.hangUp | Epoll.error) != 0 {
            downlink.destinationWritable = true
            pumpProgressed(downlink, outcome: downlink.writeDeliverable())
        }
        handOverIfPassThrough()
    }

    private func upstreamEvent(_ events: UInt32) {
        guard let upstream, state != .closed, state != .spliced else { return }
        let now = loop.clock.now()
        if state == .connecting {
            guard events & (Epoll.writable | Epoll.error | Epoll.hangUp) != 0 else { return }
            // A connect that failed reports an error or a hang-up; writable alone means it is established.
            let error = events & (Epoll.error | Epoll.hangUp) != 0 ? (try? upstream.pendingError()) ?? nil : nil
            if let error {
                upstreamFailed(address: upstreamAddresses[upstreamAttempt], error)
                return
            }
            upstreamConnected(events: events)
            return
        }
        if events & StreamPump.readEvents != 0 {
            downlink.sourceEvent(events)
            pumpMayRead(downlink, at: now)
        }
        if state != .closed, events & (Epoll.writable | Epoll.hangUp | Epoll.error) != 0 {
            uplink.destinationWritable = true
            pumpProgressed(uplink, outcome: uplink.writeDeliverable())
        }
        handOverIfPassThrough()
    }

    /// Hands the connection to a splice loop once it has carried `bytesBeforeHandOver` and both directions are
    /// pass-through with nothing held in user space or in the model: its sockets leave this loop's epoll, and any
    /// pipe still holding bytes goes with them.
    private func handOverIfPassThrough() {
        guard state == .relaying, !staysOnMainLoop, handshake == nil, uplinkFilter == nil, let spliceLoops = host.spliceLoops,
              spliceLoops.canHandOver, let upstream, let uplink, let downlink,
              uplink.bytesDelivered + downlink.bytesDelivered >= Self.bytesBeforeHandOver else { return }
        let now = loop.clock.now()
        guard uplink.canLeaveMainLoop(at: now), downlink.canLeaveMainLoop(at: now) else { return }
        if let registration = clientRegistration { loop.deregister(registration) }
        if let registration = upstreamRegistration { loop.deregister(registration) }
        clientRegistration = nil
        upstreamRegistration = nil
        let bytes = SplicedBytes()
        splicedBytes = bytes
        state = .spliced
        let client = self.client
        spliceTicket = spliceLoops.handOver(self) { ticket in
            HandedOverConnection(ticket: ticket, client: client, upstream: upstream, uplink: uplink.handOver(),
                                 downlink: downlink.handOver(), bytes: bytes)
        }
    }

    /// Whether a splice loop carries the connection now.
    var isOnSpliceLoop: Bool { state == .spliced }

    /// Counts what the splice loop delivered since the last call into the pumps and the link's counters.
    func settleSplicedBytes() {
        guard let splicedBytes else { return }
        let moved = splicedBytes.take()
        uplink.countSpliced(moved.uplink)
        downlink.countSpliced(moved.downlink)
    }

    /// Carries the connection on this loop again from where its splice loop left it: both sockets are watched
    /// again, and bytes a pipe still holds go before anything read later (a profile that shapes copies them out).
    func resume(from connection: HandedOverConnection) {
        guard state == .spliced, let upstream else { return }
        settleSplicedBytes()
        splicedBytes = nil
        spliceTicket = nil
        staysOnMainLoop = staysOnMainLoop || connection.needsMainLoop
        state = .relaying
        let now = loop.clock.now()
        uplink.resume(from: connection.uplink, at: now)
        downlink.resume(from: connection.downlink, at: now)
        do {
            clientWatchesWritable = false
            clientRegistration = try loop.register(client.descriptor, interest: Self.clientInterest, receiver: self)
            upstreamRegistration = try loop.register(upstream.descriptor, interest: Self.edgeInterest, receiver: self)
        } catch {
            logger.warning("connection \(id): cannot watch its sockets again after a splice loop: \(error); resetting")
            close(reset: true)
            return
        }
        handle(.open)
    }

    /// The splice loop carrying the connection let go of it because it ended there: closed normally once both ends
    /// of stream were forwarded, or reset after a socket failed.
    func endedOnSpliceLoop(reset: Bool) {
        guard state == .spliced else { return }
        settleSplicedBytes()
        splicedBytes = nil
        spliceTicket = nil
        close(reset: reset)
    }

    /// Gives the pumps their stages if they hold none and the source now needs them (a fault set while the
    /// connection is open): seeded as the pumps' own draw said, and told which direction sent last.
    func makeStagesIfNeeded() {
        guard let stageSource, stageSource.needsStages, let stageSeeds, let uplink, let downlink, uplink.stage == nil,
              !uplink.isClosed, !downlink.isClosed else { return }
        let speaker: ToxicStream? = switch (uplink.lastAdmission, downlink.lastAdmission) {
        case (0, 0): nil
        case let (up, down): up > down ? .upstream : .downstream
        }
        (uplink.stage, downlink.stage) = stageSource.makeStages(for: self, seeds: stageSeeds, speaker: speaker)
    }

    /// A write to `pump`'s destination would block: the client, watched for reading only until now, is watched for
    /// writing too, for the rest of the connection. The change of interest reports a socket already writable again,
    /// so no edge is missed.
    func destinationBlocked(_ pump: StreamPump) {
        guard pump === downlink, !clientWatchesWritable, state != .closed, let clientRegistration else { return }
        clientWatchesWritable = true
        loop.setInterest(clientRegistration, Self.edgeInterest)
    }

    /// Lets `pump` read as far as its limits allow.
    func pumpMayRead(_ pump: StreamPump, at now: Instant) {
        guard state == .relaying else { return }
        handle(pump.readAvailable(at: now, into: readBuffer), from: pump)
    }

    /// The client's first bytes reached the server's side of the link: they carry the acknowledgement of its
    /// SYN-ACK, so a server still waiting for a lost final ACK may send.
    func firstBytesReleased(by pump: StreamPump, at now: Instant) {
        guard pump === uplink, let downlink, !downlink.isClosed, let flow = downlink.flow else { return }
        if !downlink.link.open(flow, at: now) {
            logger.debug("connection \(id): the emulated server had dropped its handshake; resetting")
            close(reset: true)
        }
    }

    /// Whether the connection closes as soon as `pump` finishes: the other direction has finished after reading
    /// its source's end, so `pump`'s destination holds nothing unread and closing it sends the FIN a half-close
    /// would, after the same bytes.
    func closesWhenFinished(_ pump: StreamPump) -> Bool {
        guard state == .relaying, let uplink, let downlink else { return false }
        let other = pump === uplink ? downlink : uplink
        return other.isFinished && other.sourceReadToEnd
    }

    /// Reacts to a pump's writes: they may have made room to read again.
    func pumpProgressed(_ pump: StreamPump, outcome: StreamPump.Outcome) {
        guard state != .spliced else { return }
        handle(outcome, from: pump)
        if state != .closed && pump.sourceReadable && pump.hasRoom && !pump.sourceEnded && !pump.isReading {
            pumpMayRead(pump, at: loop.clock.now())
        }
    }

    /// Resets the connection on failure, and closes it once both directions have finished.
    private func handle(_ outcome: StreamPump.Outcome, from pump: StreamPump? = nil) {
        guard state != .closed, state != .spliced else { return }
        if closingParty == nil, let pump, !outcome.isOpen {
            if case .cut = outcome { closingParty = .linkcond } else { closingParty = pump === uplink ? .client : .upstream }
        }
        switch outcome {
        case .failed(let error):
            if error.errno == .connectionReset || error.errno == .brokenPipe {
                logger.debug("connection \(id): peer reset (\(error)); resetting the other side")
            } else {
                logger.info("connection \(id): \(error); resetting")
            }
            close(reset: true)
        case .cut(.close):
            close(reset: false)
        case .cut(.reset):
            close(reset: true)
        case .cut(.hang):
            hang()
        case .finished, .open:
            if (uplink.isFinished || state == .failing) && downlink.isFinished { close(reset: false) }
        }
    }

    /// Ends the connection the way a fault asks: closed, reset, or left hanging.
    func end(_ how: StreamEnd) {
        switch how {
        case .close: close(reset: false)
        case .reset: close(reset: true)
        case .hang: hang()
        }
    }

    /// Stops relaying without telling either side, as an unplugged cable would; the client's reset or close
    /// (or linkcond's shutdown) finally closes the connection.
    func hang() {
        guard state != .closed, state != .hung, state != .spliced else { return }
        state = .hung
        uplink?.forwarding = false
        downlink?.forwarding = false
        uplink?.close()
        downlink?.close()
        if let registration = upstreamRegistration { loop.deregister(registration) }
        upstreamRegistration = nil
    }

    private func fail(_ reason: String) {
        logger.warning("connection \(id) from \(clientAddress): \(reason); resetting the client")
        close(reset: true)
    }

    /// Closes both sockets, with a reset when `reset` is true, and releases the link flows.
    func close(reset: Bool) {
        // A splice loop carrying the connection lets go of its sockets before they are closed here.
        if state == .spliced, let spliceTicket { host.spliceLoops?.recall(spliceTicket) }
        guard state != .closed else { return }
        state = .closed
        cancelConnectTimer()
        if let recordedID {
            host.uplink.recorder?.connectionClosed(recordedID, by: closingParty ?? .linkcond, reset: reset, at: loop.clock.now())
        }
        if let registration = clientRegistration { loop.deregister(registration, closing: true) }
        if let registration = upstreamRegistration { loop.deregister(registration, closing: true) }
        if !reset {
            uplink?.flushReleased()
            downlink?.flushReleased()
        }
        uplink?.close()
        downlink?.close()
        if reset {
            try? client.setResetOnClose()
            if let upstream { try? upstream.setResetOnClose() }
        }
        client.close()
        forgetUpstreamLocal()
        upstream?.close()
        host.relayClosed(self)
    }

    private func forgetUpstreamLocal() {
        guard let notedUpstreamLocal else { return }
        host.ownListeners?.forgetUpstream(notedUpstreamLocal)
        self.notedUpstreamLocal = nil
    }

    /// What the relay decided for its connection so far, as a test sees it.
    var decisions: RelayDecisions {
        RelayDecisions(hasStages: uplink?.stage != nil, speaker: (uplink?.stage as? ToxicStage)?.turn.speaker,
                       clientInterest: clientRegistration.flatMap { loop.interest(of: $0) },
                       modelledDirections: [uplink?.flow, downlink?.flow].filter { $0 != nil }.count,
                       upstreamNoDelay: upstream.flatMap { try? $0.isNoDelay() })
    }

    var bytesUp: Int { uplink?.bytesDelivered ?? 0 }
    var bytesDown: Int { downlink?.bytesDelivered ?? 0 }
}

extension TCPRelay: EventReceiver {
    /// Events of the client's or the upstream's socket, told apart by descriptor: both are open while either is
    /// registered, so they differ.
    func receive(_ events: UInt32, on descriptor: Int32) {
        if descriptor == client.descriptor { clientEvent(events) } else { upstreamEvent(events) }
    }
}

/// What a relay decided for its connection, as a test sees it.
struct RelayDecisions: Sendable, Equatable {
    /// Whether its pumps hold stages (faults, toxics).
    var hasStages: Bool
    /// The direction its stages say sent last; nil before either did.
    var speaker: ToxicStream?
    /// The epoll events the client's socket is watched for; nil while the main loop does not watch it.
    var clientInterest: UInt32?
    /// How many of its two directions have a flow in their link's model (none while the link shapes nothing).
    var modelledDirections: Int
    /// Whether the upstream's socket has TCP_NODELAY, as the kernel reports it; nil without an upstream socket.
    var upstreamNoDelay: Bool?
}
