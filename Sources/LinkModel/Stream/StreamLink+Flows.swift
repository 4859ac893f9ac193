/// How flows join and leave a link's emulation (`StreamLink.Emulation`): made at the connect, opened when the
/// handshake completes or the peer's first bytes come, removed at the close.
extension StreamLink.Emulation {
    mutating func makeFlow(at now: Instant, emulatingHandshake: Bool, handshake: HandshakeAttempts?) -> StreamFlow {
        let up = side == .connector ? profile.delay : reverseDelay
        let down = side == .connector ? reverseDelay : profile.delay
        let handshake = handshake ?? HandshakeAttempts(uplinkDelay: up, downlinkDelay: down)
        var opensAt = now
        let reached = handshake.serverReached ?? .zero
        let connectedAt = now.addingSaturating(nanoseconds: -reached.nanoseconds)
        if emulatingHandshake {
            if handshake.serverReached != nil, let established = handshake.clientEstablished {
                let opens = side == .connector ? established : handshake.serverEstablished
                opensAt = opens.map { connectedAt.addingSaturating(nanoseconds: $0.nanoseconds) } ?? .never
            } else {
                opensAt = .never
            }
        }
        let flow = StreamFlow(number: nextFlowNumber, settings: settings, opensAt: opensAt, tally: tally)
        // The handshake's grid is measured from the client's connect(); the sender's instants from Instant.zero.
        flow.model.sender.timerWheel = handshake.timerWheel?.measured(from: .nanoseconds(-connectedAt.nanoseconds))
        if side == .connector || !emulatingHandshake {
            flow.model.sender.handshakeCompleted(handshake.clientStart)
        } else {
            let opened = handshake.serverEstablished ?? handshake.serverGaveUp ?? HandshakeAttempts.clientGivesUpAfter
            let start = handshake.serverStart(openedAt: opened)
            let acksLost = handshake.handshakeAcksLost(before: opened)
            flow.model.sender.handshakeCompleted(start)
            flow.serverHandshake = (handshake, connectedAt, start.retransmissions, acksLost)
            counters.handshakeRetransmissions += start.retransmissions
            counters.acksLost += acksLost
        }
        nextFlowNumber += 1
        flows.append(flow)
        counters.flows += 1
        return flow
    }

    mutating func open(_ flow: StreamFlow, at now: Instant) -> Bool {
        guard flow.model.opensAt > now, !flow.model.isRemoved else { return true }
        let now = max(now, latestEvent)
        run(until: now)
        latestEvent = now
        if let server = flow.serverHandshake {
            let offset = now - server.connectedAt
            if let gaveUp = server.attempts.serverGaveUp, offset >= gaveUp { return false }
            let start = server.attempts.serverStart(openedAt: offset)
            let acksLost = server.attempts.handshakeAcksLost(before: offset)
            counters.handshakeRetransmissions += start.retransmissions - server.resent
            counters.acksLost += acksLost - server.acksLost
            flow.serverHandshake = (server.attempts, server.connectedAt, start.retransmissions, acksLost)
            flow.model.sender.handshakeCompleted(start)
        }
        flow.model.opensAt = now
        transmit(flow, &flow.model, at: now)
        reschedule(flow, &flow.model, at: now)
        compactScheduleIfStale()
        return true
    }

    mutating func remove(_ flow: StreamFlow) {
        guard !flow.model.isRemoved else { return }
        flow.model.isRemoved = true
        scheduleTopIsLive = false
        flow.model.segmentsInBottleneck = 0
        flow.model.scheduledAt = nil
        counters.flows -= 1
        _ = bottleneck.removeAll(ofFlow: flow.number)
        let index = flowIndex(numbered: flow.number)
        if index < flows.count, flows[index] === flow { flows.remove(at: index) }
        if flow.model.isMarkedChanged, let index = changed.firstIndex(where: { $0 === flow }) {
            changed.remove(at: index)
        }
        flow.model.isMarkedChanged = false
        flow.model.arrivals.removeAll()
        flow.model.acks.removeAll()
        compactScheduleIfStale()
    }
}
