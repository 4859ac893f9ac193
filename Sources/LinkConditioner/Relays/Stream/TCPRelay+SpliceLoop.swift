/// The relay's side of the splice loops: handing a pass-through connection to one, and taking it back. Event loop
/// thread (the main loop's).
extension TCPRelay {
    /// A splice loop's hold on the connection: the ticket the splice loops know it by, and what it moved that the
    /// pumps have not counted yet.
    struct SpliceLoopCarriage {
        var ticket: UInt64
        var bytes: SplicedBytes
    }

    /// Hands the connection to a splice loop once it has carried `bytesBeforeHandOver` and both directions are
    /// pass-through with nothing held in user space or in the model: its sockets leave this loop's epoll, and any
    /// pipe still holding bytes goes with them.
    func handOverIfPassThrough() {
        guard case .relaying = state, case .whenPassThrough = spliceLoopChoice, handshake == nil, uplinkFilter == nil,
            let spliceLoops = host.spliceLoops, spliceLoops.canHandOver, let upstream, let uplink, let downlink,
            uplink.bytesDelivered + downlink.bytesDelivered >= Self.bytesBeforeHandOver
        else { return }
        let now = loop.clock.now()
        guard uplink.canLeaveMainLoop(at: now), downlink.canLeaveMainLoop(at: now) else { return }
        if let registration = clientRegistration { loop.deregister(registration) }
        if let registration = upstreamRegistration { loop.deregister(registration) }
        clientRegistration = nil
        upstreamRegistration = nil
        let bytes = SplicedBytes()
        let client = self.client
        let ticket = spliceLoops.handOver(self) { ticket in
            HandedOverConnection(
                ticket: ticket, client: client, upstream: upstream, uplink: uplink.handOver(),
                downlink: downlink.handOver(), bytes: bytes)
        }
        state = .spliced(SpliceLoopCarriage(ticket: ticket, bytes: bytes))
    }

    /// Whether a splice loop carries the connection now.
    var isOnSpliceLoop: Bool {
        if case .spliced = state { return true }
        return false
    }

    /// Counts what the splice loop delivered since the last call into the pumps and the link's counters.
    func settleSplicedBytes() {
        guard case .spliced(let carriage?) = state else { return }
        let moved = carriage.bytes.take()
        uplink.countSpliced(moved.uplink)
        downlink.countSpliced(moved.downlink)
    }

    /// Carries the connection on this loop again from where its splice loop left it: both sockets are watched
    /// again, and bytes a pipe still holds go before anything read later (a profile that shapes copies them out).
    func resume(from connection: HandedOverConnection) {
        guard case .spliced = state, let upstream else { return }
        settleSplicedBytes()
        if connection.needsMainLoop { spliceLoopChoice = .mainLoopOnly }
        state = .relaying
        let now = loop.clock.now()
        uplink.resume(from: connection.uplink, at: now)
        downlink.resume(from: connection.downlink, at: now)
        do {
            clientWatch = .reading
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
        guard case .spliced = state else { return }
        settleSplicedBytes()
        state = .spliced(nil)
        close(reset: reset)
    }
}
