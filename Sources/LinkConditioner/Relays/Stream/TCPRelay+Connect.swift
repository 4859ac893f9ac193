import Logging

/// The relay's way to its upstream: the SYN crossing the emulated link, blackholes, each resolved address in turn,
/// the front end's timeout and failure reply, and the start of relaying. Event loop thread.
extension TCPRelay {
    /// Connects once the first SYN crossed the emulated link (the uplink's delay, plus 1, 2, 4 … s for each SYN
    /// lost and resent) and the profile's `connect.stall` has passed. A handshake whose every attempt is lost
    /// holds the client as a blackhole does, until a profile change releases it.
    func connectAfterUplinkDelay() {
        let stall = host.connectionFaults?.connection.connectStall ?? .zero
        var reach = host.uplink.currentDelay
        if emulatesHandshake {
            let attempts = host.uplink.model.drawHandshake(answeredOver: host.downlink.model)
            guard let reached = attempts.serverReached, !attempts.isAbandoned else {
                handshakeAttempts = nil
                state = .blackholed(cause: .loss)
                observer?.connectionHeld(.loss, ended: false, at: loop.clock.now())
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
        if stall > .zero { observer?.connectionHeld(.fault, ended: false, at: loop.clock.now()) }
        loop.schedule(at: loop.clock.now() + delay) { [weak self] in
            guard let self, case .connecting = self.state else { return }
            if stall > .zero { self.observer?.connectionHeld(.fault, ended: true, at: self.loop.clock.now()) }
            self.connectUpstream()
        }
    }

    /// Whether the relay holds, blackholed, a client that has closed its side: the first connection to give up
    /// when descriptors run out, since its client may be gone for good.
    var holdsFinishedClient: Bool {
        guard case .blackholed = state else { return false }
        return clientEventsBeforeRelaying & Epoll.readHangUp != 0
    }

    /// Resets a held client that has closed its side; its request is lost. Does nothing to any other relay.
    func giveUpFinishedClient() {
        guard holdsFinishedClient else { return }
        close(reset: true)
    }

    /// Leaves the blackhole: connects upstream and starts relaying what the client sent meanwhile.
    func release() {
        guard case .blackholed(let cause) = state else { return }
        state = .connecting(.crossingLink)
        observer?.connectionHeld(cause, ended: true, at: loop.clock.now())
        connectAfterUplinkDelay()
    }

    /// A TCP socket for the upstream, noted with the pool as the loop's newest descriptor; when descriptors are
    /// exhausted, the kept splice pipes are closed and the socket tried once more, so kept pipes never cost a
    /// connection.
    private static func openUpstreamSocket(family: Int32, pipes: SplicePipePool, logger: Logger) throws(SystemError)
        -> Socket
    {
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

    /// Opens a socket for the current upstream address and connects it, unless the connect was given up before it
    /// was made (`givenUp`, the front end's timeout): the socket then only carries the failure reply.
    func connectUpstream(givenUp: Errno? = nil) {
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
        makePumps(upstream: socket)
        if let givenUp {
            upstreamAttempt = upstreamAddresses.count - 1
            upstreamFailed(address: address, givenUp)
            return
        }
        switch host.connectionFaults?.connection.blocking(port: address.port) {
        case .refuse?:
            upstreamAttempt = upstreamAddresses.count - 1
            upstreamFailed(address: address, .connectionRefused)
            return
        case .blackhole?:
            state = .connecting(.portBlackholed)
            observer?.connectionHeld(.fault, ended: false, at: loop.clock.now())
            return
        case nil:
            state = .connecting(.connectingUpstream)
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
        switch state {
        case .connecting, .blackholed: break
        case .relaying, .failing, .hung, .spliced, .closed: return
        }
        connectTimer = loop.schedule(at: deadline) { [weak self] in
            self?.connectTimer = nil
            self?.abandonConnect(.timedOut)
        }
    }

    func cancelConnectTimer() {
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
            if case .blackholed(let cause) = state {
                observer?.connectionHeld(cause, ended: true, at: loop.clock.now())
            }
            state = .connecting(.crossingLink)
            connectUpstream(givenUp: error)
        case .relaying, .failing, .hung, .spliced, .closed:
            return
        }
    }

    /// Tries the upstream's next address, or resets the client when none is left.
    func upstreamFailed(address: SocketAddress, _ error: Errno) {
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
        logger.warning(
            "connection \(id) from \(clientAddress): upstream \(upstreamName) (\(address)) unreachable: \(error)")
        if let handshake {
            let reply = handshake.replyOnFailure(error)
            if !reply.isEmpty {
                state = .failing
                if let registration = upstreamRegistration { loop.deregister(registration) }
                upstreamRegistration = nil
                uplink.stopForwarding()
                if let outcome = downlink.inject(reply, endOfStream: true, at: loop.clock.now()) {
                    pumpProgressed(downlink, outcome: outcome)
                }
                return
            }
        }
        close(reset: true)
    }

    /// Starts relaying once the upstream accepted; `events` is what its socket reported with the connect (0 for
    /// a connect that completed at once), so the downlink reads only an upstream that has already sent something.
    func upstreamConnected(events: UInt32) {
        guard case .connecting = state else { return }
        state = .relaying
        cancelConnectTimer()
        noteEstablished()
        uplink.destinationConnected()
        uplink.startReading(after: clientEventsBeforeRelaying)
        downlink.startReading(after: events)
        let now = loop.clock.now()
        if let handshake {
            let reply = handshake.replyOnConnect(local: { try? self.upstream?.localAddress() })
            if !reply.isEmpty, let outcome = downlink.inject(reply, endOfStream: false, at: now) {
                pumpProgressed(downlink, outcome: outcome)
            }
        }
        switch preload {
        case .nothing:
            break
        case .bytes(let bytes):
            preload = .nothing
            if let outcome = uplink.inject(bytes, endOfStream: false, at: now) {
                pumpProgressed(uplink, outcome: outcome)
            }
        case .bytesThenEnd(let bytes):
            preload = .nothing
            if let outcome = uplink.inject(bytes, endOfStream: true, at: now) {
                pumpProgressed(uplink, outcome: outcome)
            }
        }
        pumpMayRead(uplink, at: now)
        pumpMayRead(downlink, at: now)
    }
}
