/// How a link's emulation (`StreamLink.Emulation`) handles its events in time order: the bottleneck's departures
/// and drops, then each flow's arrivals, ACKs and timers, and what its sender may send next.
extension StreamLink.Emulation {
    /// Handles every event due by `now`, in time order.
    mutating func run(until now: Instant) {
        var handled = 0
        defer { if handled < Self.maximumEventsPerAdvance { forgetArrivals(until: now) } }
        while let at = nextServiceTime, at <= now, handled < Self.maximumEventsPerAdvance {
            handled += 1
            latestEvent = max(latestEvent, at)
            if let due = bottleneck.nextEventTime, due <= at {
                for event in bottleneck.advance(to: at) {
                    switch event {
                    case .departed(let packet, let departure):
                        if let flow = flow(numbered: packet.flow) {
                            departed(packet, of: flow, &flow.model, at: departure, handledAt: at)
                            compactScheduleIfStale()
                        }
                    case .dropped(let packet, _):
                        flow(numbered: packet.flow)?.model.segmentsInBottleneck -= 1
                        counters.segmentsLost += TCPSender.segmentCount(bytes: packet.bytes)
                    }
                }
            }
            while let top = nextScheduledFlow(), top.at <= at, handled < Self.maximumEventsPerAdvance {
                handled += 1
                schedule.removeMin()
                scheduleTopIsLive = false
                guard let flow = flow(numbered: top.number) else { continue }
                process(flow, &flow.model, at: at)
                compactScheduleIfStale()
            }
        }
    }

    /// Drops the entries of `arrivalSchedule` that `run` has handled, every event up to `now`, so it holds only
    /// arrivals still on their way, whether or not anything reads it.
    private mutating func forgetArrivals(until now: Instant) {
        while let top = arrivalSchedule.min, top.at <= now { arrivalSchedule.removeMin() }
    }

    /// `flow`'s `packet` left the bottleneck at `departure`, handled at `at`.
    mutating func departed(
        _ packet: LinkPacket, of flow: StreamFlow, _ model: inout StreamFlow.Model,
        at departure: Instant, handledAt at: Instant
    ) {
        model.segmentsInBottleneck -= 1
        depart(packet, of: &model, at: departure)
        reschedule(flow, &model, at: at)
    }

    /// Handles `flow`'s events due at `at`: arrivals, the delayed ACK, ACKs, timers; then sends what it may, and
    /// enters its next event in the schedule.
    mutating func process(_ flow: StreamFlow, _ model: inout StreamFlow.Model, at now: Instant) {
        model.scheduledAt = nil
        var touched = false
        while let first = model.arrivals.first, first.at <= now {
            model.arrivals.removeFirst()
            touched = true
            let ack = model.receiver.receive(
                first.segment, now: first.at, echo: first.echo, idleRestart: model.sender.timer.rto,
                roundTrip: profile.delay + reverseDelay)
            if let ack { sendAck(ack, on: &model, at: first.at) }
            let released = model.receiver.takeReleased()
            if released > 0 {
                model.release(released, at: first.at)
                model.pendingBytes -= released
                markChanged(flow, &model)
            }
            if model.receiver.isHeadOfLineBlocked != model.isLossBlocked {
                model.isLossBlocked.toggle()
                model.lossBlockChanges.append((first.at, model.isLossBlocked))
                markChanged(flow, &model)
            }
        }
        if let deadline = model.receiver.delayedAckDeadline, deadline <= now,
            let ack = model.receiver.delayedAckFired(now: deadline)
        {
            sendAck(ack, on: &model, at: deadline)
        }
        while let first = model.acks.first, first.at <= now {
            model.acks.removeFirst()
            touched = true
            model.sender.receive(first.ack, now: first.at)
        }
        if let deadline = model.sender.nextTimer, deadline <= now {
            touched = true
            model.sender.timerFired(now: now)
        }
        if touched || (model.opensAt == now && model.sender.unsentBytes > 0) { transmit(flow, &model, at: now) }
        reschedule(flow, &model, at: now)
    }

    /// Puts every segment `flow`'s sender may send at `now` into the bottleneck. Each segment's loss is drawn as it
    /// enters, before the queue and the rate, where netem draws it (`netem_enqueue`): a lost segment takes no room
    /// in the queue and no time at the rate, so its resend can take the slot. The segments of a unit that are not
    /// lost enter as runs.
    mutating func transmit(_ flow: StreamFlow, _ model: inout StreamFlow.Model, at now: Instant) {
        guard now >= model.opensAt, !model.isRemoved else { return }
        while let segment = model.sender.nextSegment(now: now, largestUnit: largestUnit) {
            counters.transmissions += TCPSender.segmentCount(bytes: segment.length)
            let end = segment.seq + Int64(segment.length)
            guard canLoseSegment else {
                enter(segment.seq..<end, of: flow, &model, at: now)
                continue
            }
            var run = segment.seq
            var seq = segment.seq
            while seq < end {
                let next = min(seq + Int64(TCPSender.mss), end)
                if isLostOnEntry(seq..<next, of: flow, echo: model.sender.tsRecent) {
                    counters.segmentsLost += 1
                    if run < seq { enter(run..<seq, of: flow, &model, at: now) }
                    run = next
                }
                seq = next
            }
            if run < end { enter(run..<end, of: flow, &model, at: now) }
        }
    }

    /// The segment of `flow` carrying `bytes` is lost on its way in: by the test's `lossDecision`, else by the
    /// direction's draw.
    private mutating func isLostOnEntry(_ bytes: Range<Int64>, of flow: StreamFlow, echo: Instant?) -> Bool {
        guard let lossDecision else { return drawsSegmentLoss() }
        return lossDecision(
            LinkPacket(flow: flow.number, bytes: bytes.count, tag: UInt64(bytes.lowerBound), echo: echo))
    }

    /// Puts the segments of `flow` carrying `bytes`, sent at `now`, into the bottleneck as one packet; what the
    /// queue refuses is lost.
    private mutating func enter(
        _ bytes: Range<Int64>, of flow: StreamFlow, _ model: inout StreamFlow.Model, at now: Instant
    ) {
        let packet = LinkPacket(
            flow: flow.number, bytes: bytes.count, tag: UInt64(bytes.lowerBound),
            overhead: profile.accounting.overhead(tcpSegments: TCPSender.segmentCount(bytes: bytes.count)),
            echo: model.sender.tsRecent)
        guard enqueue(packet, of: flow, &model, at: now) else { return }
        if packet.bytes > TCPSender.mss {
            enqueueSegments(of: packet, of: flow, &model, at: now)
        } else {
            counters.segmentsLost += 1
        }
    }

    /// Enters `packet` in the bottleneck and counts as lost the packets its discipline dropped to make room; true
    /// when it refused `packet` itself, which the caller counts.
    private mutating func enqueue(
        _ packet: LinkPacket, of flow: StreamFlow, _ model: inout StreamFlow.Model, at now: Instant
    ) -> Bool {
        model.segmentsInBottleneck += 1
        var refused = false
        for dropped in bottleneck.enqueue(packet, now: now) {
            if dropped.flow == flow.number {
                model.segmentsInBottleneck -= 1
                if dropped.tag == packet.tag {
                    refused = true
                    continue
                }
            } else {
                self.flow(numbered: dropped.flow)?.model.segmentsInBottleneck -= 1
            }
            counters.segmentsLost += TCPSender.segmentCount(bytes: dropped.bytes)
        }
        return refused
    }

    /// A unit the queue had no room for reaches it segment by segment, as a router takes a burst: those that fit
    /// are queued, the rest dropped.
    private mutating func enqueueSegments(
        of unit: LinkPacket, of flow: StreamFlow, _ model: inout StreamFlow.Model, at now: Instant
    ) {
        var seq = unit.tag
        let end = unit.tag + UInt64(unit.bytes)
        while seq < end {
            let length = Int(min(UInt64(TCPSender.mss), end - seq))
            let segment = LinkPacket(
                flow: flow.number, bytes: length, tag: seq, overhead: profile.accounting.overhead(tcpSegments: 1),
                echo: unit.echo)
            if enqueue(segment, of: flow, &model, at: now) {
                counters.segmentsLost += 1
            }
            seq += UInt64(length)
        }
    }
}
