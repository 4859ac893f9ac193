import Logging

/// One client connection relayed to its upstream through a listener's uplink and downlink.
///
/// Lives on the event loop thread. Both sockets are registered edge-triggered, the upstream for reading, writing
/// and hang-up, the client for reading and hang-up until a write to it first would block: an accepted socket is
/// writable, and its edge would only cost an event per connection. The pumps remember readiness between edges. A
/// FIN is forwarded as a half-close after the data before it, a reset as a reset, and a failed upstream connect
/// resets the client. The loop holds the relay while it watches either socket (`EventReceiver`); every way out
/// (closing, handing over to a splice loop, an upstream given up) deregisters the socket it leaves.
///
/// The connection's life is one `State`; what its pumps did comes back as their `Outcome`, which `handle` turns
/// into the connection's next state. The connect path is in `TCPRelay+Connect.swift`, the splice loops' in
/// `TCPRelay+SpliceLoop.swift`, the pumps' outcomes in `TCPRelay+Outcomes.swift`.
final class TCPRelay {
    enum State {
        /// Waiting for the upstream, at the step `Connect` says.
        case connecting(Connect)
        /// Held without an answer: the profile's blackhole, or (`cause` loss) a handshake all lost.
        case blackholed(cause: StallCause)
        case relaying
        /// The upstream failed and the front end's error reply is on its way to the client.
        case failing
        /// A fault cut the connection silently: nothing crosses until the client gives up.
        case hung
        /// A splice loop carries both sockets; the pumps wait, holding nothing, until it hands them back. Nil once
        /// the splice loop let go of the connection.
        case spliced(SpliceLoopCarriage?)
        case closed
    }

    /// Where a connect stands.
    enum Connect {
        /// The first SYN is crossing the emulated link, or the profile's `connect.stall` holds it.
        case crossingLink
        /// `blocked.ports` blackholes the upstream's port: the connect is never made.
        case portBlackholed
        /// The upstream socket is connecting.
        case connectingUpstream
    }

    /// Which edges the client's registration asks for.
    enum ClientWatch {
        /// Reading and hang-up: an accepted socket is writable, and its edge would only cost an event.
        case reading
        /// Writing too, from the first write to it that would block, for the rest of the connection.
        case readingAndWriting
    }

    /// Whether the connection may go to a splice loop.
    enum SpliceLoopChoice {
        /// Once it is pass-through and has carried `bytesBeforeHandOver`.
        case whenPassThrough
        /// Never: a splice loop could not carry it (it found no pipe).
        case mainLoopOnly
    }

    /// Client bytes a front end read past its request, and whether the client's stream ends with them.
    enum Preload {
        case nothing
        /// Pipelined bytes, sent upstream ahead of anything read later.
        case bytes([UInt8])
        /// Bytes after which a front end decided nothing more is forwarded (possibly none).
        case bytesThenEnd([UInt8])
    }

    let id: UInt64
    unowned let host: RelayHost
    let client: Socket
    let clientAddress: SocketAddress
    /// The upstream as the user named it, for logs.
    let upstreamName: String
    /// Every address the upstream resolved to, tried in order until one accepts.
    let upstreamAddresses: [SocketAddress]
    let handshake: UpstreamHandshake?
    var preload: Preload
    /// Rewrites what the client sends later (an HTTP proxy's requests); nil relays it as read.
    let uplinkFilter: StreamFilter?
    var upstream: Socket?
    /// Where the stages (faults, toxics) of each direction come from; nil relays without stages.
    var stageSource: StageSource?
    /// The seeds drawn for the stages when the pumps were made, kept for stages made later (a fault set while the
    /// connection is open), so they draw what stages made with the pumps would have.
    var stageSeeds: StageSeeds?
    var state: State
    var uplink: StreamPump!
    var downlink: StreamPump!
    var upstreamAttempt = 0
    /// The front end's connect timeout while the upstream has not accepted (`limitConnect`).
    var connectTimer: EventLoop.TimerID?
    /// The client's registration; one a front end's session handed over is taken over at `start`, with the read
    /// events the session was told of and left unread (`unreadClientEvents`).
    var clientRegistration: EventLoop.RegistrationID?
    var clientWatch = ClientWatch.reading
    /// Every event the client reported before the upstream accepted (its front end's session's unread ones first),
    /// or'ed: the uplink starts from them, so it reads only a client that has sent something, and stops at a short
    /// read (`StreamPump.startReading`).
    var clientEventsBeforeRelaying: UInt32 = 0
    var upstreamRegistration: EventLoop.RegistrationID?
    /// The upstream connection's local address, noted with `OwnListeners` because its port is one linkcond listens
    /// on: a client arriving from it is this relay coming back (a loop).
    var notedUpstreamLocal: SocketAddress?
    /// What watches the connection (`run --record`), set once at `start`; nil when nothing does.
    private(set) var observer: ConnectionObserver?
    /// Who closed first, for the observer: the side whose stream ended or failed first.
    var closingParty: ClosingParty?
    /// The host's loop and read buffer, kept: reached through the unowned host, each use paid a checked retain.
    let loop: EventLoop
    let readBuffer: ReadBuffer
    var logger: Logger { host.logger }

    var isClosed: Bool {
        if case .closed = state { return true }
        return false
    }

    /// Whether the link emulates the TCP handshake for this connection; a front end's reply on connect plays it.
    var emulatesHandshake: Bool { !(handshake?.repliesOnConnect ?? false) }

    /// The emulated handshake's fate over the lossy link, drawn when the connect was scheduled; nil when the link
    /// does not emulate it.
    var handshakeAttempts: HandshakeAttempts?
    var spliceLoopChoice = SpliceLoopChoice.whenPassThrough

    /// Bytes a connection carries on the main loop before it may go to a splice loop, so a short exchange (a request
    /// and its answer) is not handed between threads for nothing; a bulk transfer passes it in a few reads.
    static let bytesBeforeHandOver = 64 * 1024

    init(
        id: UInt64, host: RelayHost, client: Socket, clientAddress: SocketAddress, upstreamName: String,
        upstreamAddresses: [SocketAddress], handshake: UpstreamHandshake? = nil,
        preloadedClientBytes: [UInt8] = [], preloadEndsStream: Bool = false, uplinkFilter: StreamFilter? = nil,
        clientRegistration: EventLoop.RegistrationID? = nil, unreadClientEvents: UInt32 = 0
    ) {
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
        self.preload =
            preloadEndsStream
            ? .bytesThenEnd(preloadedClientBytes)
            : preloadedClientBytes.isEmpty ? .nothing : .bytes(preloadedClientBytes)
        self.uplinkFilter = uplinkFilter
        self.clientRegistration = clientRegistration
        self.clientEventsBeforeRelaying = unreadClientEvents
        self.state = .connecting(.crossingLink)
    }

    /// Registers the client and starts the upstream connection, or holds the client if the link is blackholed.
    func start(blackholed: Bool) {
        if let recorder = host.uplink.recorder {
            let destination = upstreamAddresses[0].description
            observer = RecordedConnection(
                recorder: recorder, listener: host.uplink.listenerName, client: clientAddress.description,
                destination: destination, name: upstreamName == destination ? nil : upstreamName, at: loop.clock.now())
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
            state = .blackholed(cause: .offline)
            observer?.connectionHeld(.offline, ended: false, at: loop.clock.now())
        } else {
            connectAfterUplinkDelay()
        }
    }

    static let edgeInterest = Epoll.readable | Epoll.writable | Epoll.readHangUp | Epoll.priority | Epoll.edgeTriggered
    /// The client's interest until a write to it would block (`watchClientForWriting`); a front end's session
    /// watches its client for the same, so the relay takes the registration over without an `epoll_ctl`.
    static let clientInterest = edgeInterest & ~Epoll.writable

    /// Makes the uplink and downlink pumps for the upstream `socket`, with their stages and observer.
    func makePumps(upstream socket: Socket) {
        let buffer = host.options.connectionBuffer
        uplink = StreamPump(
            relay: self, direction: .up, link: host.uplink, source: client, destination: socket,
            capacity: buffer, readBuffer: readBuffer, emulatingHandshake: emulatesHandshake,
            handshake: handshakeAttempts, observer: observer)
        downlink = StreamPump(
            relay: self, direction: .down, link: host.downlink, source: socket, destination: client,
            capacity: buffer, readBuffer: readBuffer, emulatingHandshake: emulatesHandshake,
            handshake: handshakeAttempts, observer: observer)
        uplink.filter = uplinkFilter
        uplink.setNoDelayBeforeSecondWrite()
        if let stageSource {
            let seeds = stageSource.drawStageSeeds()
            stageSeeds = seeds
            if stageSource.needsStages {
                (uplink.stage, downlink.stage) = stageSource.makeStages(for: self, seeds: seeds, speaker: nil)
            }
        }
        downlink.destinationConnected()
    }

    /// The upstream accepted: the observer hears of it.
    func noteEstablished() {
        observer?.established(at: loop.clock.now())
    }

    private func clientEvent(_ events: UInt32) {
        switch state {
        case .connecting, .blackholed: clientEventsBeforeRelaying |= events
        default: break
        }
        switch state {
        case .blackholed:
            // A half-close (FIN) is held with the bytes before it and delivered after them once the link is back, as
            // a blackholed network's retransmissions would; only a client gone for good (a reset) ends the wait.
            if events & (Epoll.hangUp | Epoll.error) != 0 { close(reset: true) }
            return
        case .hung, .connecting(.portBlackholed):
            // What the client sent before leaving was never relayed: the stream is cut, so it is reset.
            if events & (Epoll.readHangUp | Epoll.hangUp | Epoll.error) != 0 { close(reset: true) }
            return
        case .connecting, .closed, .spliced:
            return
        case .failing:
            if events & (Epoll.writable | Epoll.hangUp | Epoll.error) != 0 {
                downlink.destinationMayTakeMore()
                handle(settle(downlink.writeDeliverable(), of: downlink))
            }
            return
        case .relaying:
            break
        }
        socketEvent(events, source: uplink, destination: downlink)
    }

    private func upstreamEvent(_ events: UInt32) {
        guard let upstream else { return }
        switch state {
        case .closed, .spliced:
            return
        case .connecting:
            guard events & (Epoll.writable | Epoll.error | Epoll.hangUp) != 0 else { return }
            // A connect that failed reports an error or a hang-up; writable alone means it is established.
            let error = events & (Epoll.error | Epoll.hangUp) != 0 ? (try? upstream.pendingError()) ?? nil : nil
            if let error {
                upstreamFailed(address: upstreamAddresses[upstreamAttempt], error)
                return
            }
            upstreamConnected(events: events)
            return
        case .blackholed, .relaying, .failing, .hung:
            break
        }
        socketEvent(events, source: downlink, destination: uplink)
    }

    /// Serves a relaying socket's `events`: the pump it feeds reads, the pump that writes to it writes.
    private func socketEvent(_ events: UInt32, source: StreamPump, destination: StreamPump) {
        let now = loop.clock.now()
        if events & StreamPump.readEvents != 0 {
            source.sourceEvent(events)
            pumpMayRead(source, at: now)
        }
        if !isClosed, events & (Epoll.writable | Epoll.hangUp | Epoll.error) != 0 {
            destination.destinationMayTakeMore()
            pumpProgressed(destination, outcome: destination.writeDeliverable())
        }
        handOverIfPassThrough()
    }

    func fail(_ reason: String) {
        logger.warning("connection \(id) from \(clientAddress): \(reason); resetting the client")
        close(reset: true)
    }

    /// Closes both sockets, with a reset when `reset` is true, and releases the link flows.
    func close(reset: Bool) {
        // A splice loop carrying the connection lets go of its sockets before they are closed here.
        if case .spliced(let carriage?) = state { host.spliceLoops?.recall(carriage.ticket) }
        guard !isClosed else { return }
        state = .closed
        cancelConnectTimer()
        observer?.closed(by: closingParty ?? .linkcond, reset: reset, at: loop.clock.now())
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

    func forgetUpstreamLocal() {
        guard let notedUpstreamLocal else { return }
        host.ownListeners?.forgetUpstream(notedUpstreamLocal)
        self.notedUpstreamLocal = nil
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
