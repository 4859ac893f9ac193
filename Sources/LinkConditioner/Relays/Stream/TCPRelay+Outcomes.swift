/// What the relay does with its pumps' outcomes: each comes back to `handle`, the one place the connection moves
/// on to its next state (closed, reset, hung) from what a direction did. Event loop thread.
extension TCPRelay {
    /// Gives the pumps their stages if they hold none and the source now needs them (a fault set while the
    /// connection is open): seeded as the pumps' own draw said, and told which direction sent last.
    func makeStagesIfNeeded() {
        guard let stageSource, stageSource.needsStages, let stageSeeds, let uplink, let downlink, uplink.stage == nil,
            !uplink.isClosed, !downlink.isClosed
        else { return }
        let speaker: ToxicStream? =
            switch (uplink.lastAdmission, downlink.lastAdmission) {
            case (0, 0): nil
            case (let up, let down): up > down ? .upstream : .downstream
            }
        (uplink.stage, downlink.stage) = stageSource.makeStages(for: self, seeds: stageSeeds, speaker: speaker)
    }

    /// A write to the client would have blocked: the client, watched for reading only until now, is watched for
    /// writing too, for the rest of the connection. The change of interest reports a socket already writable again,
    /// so no edge is missed.
    func watchClientForWritingIfBlocked() {
        guard case .reading = clientWatch, let downlink, case .blocked = downlink.destinationState,
            let clientRegistration
        else { return }
        clientWatch = .readingAndWriting
        loop.setInterest(clientRegistration, Self.edgeInterest)
    }

    /// Does what fell due for `pump` outside the relay's own calls (`StreamPump.due`): the one way the link, the
    /// budget and the pump's timers reach the connection.
    func pumpDue(_ pump: StreamPump, _ due: StreamPump.Due, at now: Instant) {
        switch due {
        case .delivery:
            pumpProgressed(pump, outcome: pump.deliverDue(at: now))
        case .room:
            pump.observer?.resume(pump.direction, at: now)
            pumpMayRead(pump, at: now)
        case .turn:
            pumpMayRead(pump, at: now)
        case .flowOpened:
            guard pump.sourceEnded, !pump.isFinished else { return }
            pumpProgressed(pump, outcome: pump.finishIfDrained())
        case .leaveSplice:
            guard let outcome = pump.leavingSplice(at: now) else { return }
            pumpProgressed(pump, outcome: outcome)
        }
    }

    /// Lets `pump` read as far as its limits allow.
    func pumpMayRead(_ pump: StreamPump, at now: Instant) {
        guard case .relaying = state else { return }
        handle(settle(pump.readAvailable(at: now, into: readBuffer), of: pump), from: pump)
    }

    /// Turns what `pump` asked of the relay into its final outcome: the other direction's handshake completes
    /// after its first release, and its end of stream closes the connection or half-closes the destination.
    func settle(_ outcome: StreamPump.Outcome, of pump: StreamPump) -> StreamPump.Outcome {
        var outcome = outcome
        while true {
            switch outcome {
            case .firstBytesReleased(let now):
                openServerSide(after: pump, at: now)
                if pump.isClosed { return .open }
                outcome = pump.deliverDue(at: now)
            case .endOfStreamDue:
                outcome = pump.sendEndOfStream(closingConnection: closesWhenFinished(pump))
                if case .finished = outcome, pump.noteFinishReleased() {
                    openServerSide(after: pump, at: loop.clock.now())
                }
                return outcome
            case .open, .finished, .failed, .cut:
                return outcome
            }
        }
    }

    /// The client's first bytes (or its FIN) reached the server's side of the link: they carry the acknowledgement
    /// of its SYN-ACK, so a server still waiting for a lost final ACK may send.
    private func openServerSide(after pump: StreamPump, at now: Instant) {
        guard pump === uplink, let downlink, !downlink.isClosed, let flow = downlink.flow else { return }
        if !downlink.link.open(flow, at: now) {
            logger.debug("connection \(id): the emulated server had dropped its handshake; resetting")
            close(reset: true)
        }
    }

    /// Whether the connection closes as soon as `pump` finishes: the other direction has finished after reading
    /// its source's end, so `pump`'s destination holds nothing unread and closing it sends the FIN a half-close
    /// would, after the same bytes.
    private func closesWhenFinished(_ pump: StreamPump) -> Bool {
        guard case .relaying = state, let uplink, let downlink else { return false }
        let other = pump === uplink ? downlink : uplink
        return other.isFinished && other.sourceReadToEnd
    }

    /// Reacts to a pump's writes: they may have made room to read again.
    func pumpProgressed(_ pump: StreamPump, outcome: StreamPump.Outcome) {
        if case .spliced = state { return }
        handle(settle(outcome, of: pump), from: pump)
        if !isClosed && pump.sourceReadable && pump.hasRoom && !pump.isReading {
            pumpMayRead(pump, at: loop.clock.now())
        }
    }

    /// Resets the connection on failure, and closes it once both directions have finished.
    func handle(_ outcome: StreamPump.Outcome, from pump: StreamPump? = nil) {
        switch state {
        case .closed, .spliced: return
        default: break
        }
        watchClientForWritingIfBlocked()
        if closingParty == nil, let pump, !outcome.isOpen {
            if case .cut = outcome {
                closingParty = .linkcond
            } else {
                closingParty = pump === uplink ? .client : .upstream
            }
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
        case .finished, .open, .firstBytesReleased, .endOfStreamDue:
            let failing = if case .failing = state { true } else { false }
            if (uplink.isFinished || failing) && downlink.isFinished { close(reset: false) }
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
        switch state {
        case .closed, .hung, .spliced: return
        default: break
        }
        state = .hung
        uplink?.stopForwarding()
        downlink?.stopForwarding()
        uplink?.close()
        downlink?.close()
        if let registration = upstreamRegistration { loop.deregister(registration) }
        upstreamRegistration = nil
    }
}
