// The datagram path: one direction of a UDP link, built on the bottleneck.
//
// A datagram first meets its loss (random or Gilbert-Elliott), drawn as it enters the link, where netem draws
// it: a lost one takes no room in the queue and no time at the rate. The rest enter the direction's `Bottleneck`
// (the profile's queue discipline in front of its serialiser: constant rate, trace or unlimited). The discipline
// may refuse one or drop others to make room (tail drop, or fq_codel's drop from the fattest flow), and CoDel
// drops datagrams that stood in the queue too long as they leave it. A datagram that leaves the bottleneck at t
// then goes through the other impairments (duplication, delay and jitter, reordering, corruption): delivered at
// t + delay ± jitter (plus the reordering hold-back), twice if duplicated. Outcomes are delivered in time order,
// so jitter and reordering let datagrams overtake each other. Every drop is an outcome with zero copies, so the
// relay frees the bytes it held, and a counter says why.
//
// The bottleneck charges each datagram what the profile's `RateAccounting` counts: its size, or its Ethernet frame
// (a UDP payload 42 bytes more, an IP packet from `exec` 14 more).
//
// Memory: the discipline bounds the queue by `queue`; and, as netem's `limit` counts every packet it holds, a
// datagram that would put more than `queue` bytes in propagation is dropped at the tail too, so a flood on a
// delay-only link cannot pile up for the whole delay. A direction holds at most twice `queue`.

/// One direction of a datagram link, shared by every UDP flow of a listener.
///
/// Pure: every call takes `now`, and random draws come from the seed. Lives on the event loop thread; not
/// thread-safe.
public final class DatagramLink {
    private var profile: DirectionShape
    /// What the sizes this link is given stand for, so that `frames` adds the headers they lack.
    private let kind: DatagramKind
    /// The impairments drawn as a datagram enters the link: its loss.
    private var entryImpairments: EntryImpairments
    /// The impairments after the bottleneck: duplication, delay and jitter, reordering, corruption.
    private var departureImpairments: DepartureImpairments
    private var random: SeededRandom
    private var bottleneck: Bottleneck
    private var flows: [Int: DatagramFlow] = [:]
    private var nextFlowID = 0
    private var changed: [DatagramFlow] = []
    private let tally = LinkTally()
    /// Whether the profile leaves a datagram unchanged: no rate or trace, no impairment, plain FIFO (a discipline
    /// with state, such as CoDel's, must see every datagram).
    public private(set) var isPassThrough = false
    /// The latest instant the link has been run to: a datagram stamped earlier counts from here.
    private var latest = Instant(nanoseconds: .min)

    /// A direction shaped by `profile` that carries datagrams of `kind`; `seed` drives every random draw.
    public init(profile: DirectionShape, seed: UInt64, kind: DatagramKind = .udpPayload) {
        self.profile = profile
        self.kind = kind
        entryImpairments = EntryImpairments(profile: profile)
        departureImpairments = DepartureImpairments(profile: profile)
        random = SeededRandom(seed: seed)
        bottleneck = Bottleneck(
            discipline: profile.queueManagement.makeDiscipline(limit: profile.queueLimit),
            serializer: profile.makeSerializer())
        isPassThrough = passesThrough
    }

    private var passesThrough: Bool {
        profile.bandwidth == nil && profile.trace == nil && entryImpairments.isEmpty && departureImpairments.isEmpty
            && profile.queueManagement.isFIFO
    }

    /// Live profile switch at `now`: queued datagrams keep their order; a new discipline or limit takes them over
    /// (dropping what it has no room for), a new rate or trace applies from the next datagram on.
    public func update(profile newProfile: DirectionShape, now: Instant) {
        latest = max(latest, now)
        let old = profile
        profile = newProfile
        entryImpairments = EntryImpairments(profile: newProfile)
        departureImpairments = DepartureImpairments(profile: newProfile)
        isPassThrough = passesThrough
        if old.trace != newProfile.trace || old.bandwidth != newProfile.bandwidth || old.burst != newProfile.burst
            || old.accounting != newProfile.accounting
        {
            bottleneck.update(serializer: newProfile.makeSerializer(), now: now)
        }
        if old.queueManagement != newProfile.queueManagement || old.queueLimit != newProfile.queueLimit {
            let discipline = newProfile.queueManagement.makeDiscipline(limit: newProfile.queueLimit)
            for dropped in bottleneck.update(discipline: discipline, now: now) {
                tally.counters.queuedBytes -= dropped.bytes
                tally.counters.tailDrops += 1
                schedule(
                    DatagramDelivery(index: dropped.tag, size: dropped.bytes, copies: 0), flow: dropped.flow, at: now)
            }
        }
    }

    /// Attaches a new flow (one UDP client's direction).
    public func makeFlow() -> DatagramFlow {
        let flow = DatagramFlow(id: nextFlowID, tally: tally)
        nextFlowID += 1
        flows[flow.id] = flow
        tally.counters.flows += 1
        return flow
    }

    /// Forgets a closed flow: its queued datagrams leave the queue and its outcomes are discarded.
    public func remove(_ flow: DatagramFlow) {
        guard !flow.isRemoved else { return }
        flow.isRemoved = true
        flows.removeValue(forKey: flow.id)
        tally.counters.flows -= 1
        for packet in bottleneck.removeAll(ofFlow: flow.id) { tally.counters.queuedBytes -= packet.bytes }
        tally.counters.inFlightBytes -= flow.line.bytes
        flow.line.removeAll()
        if flow.isMarkedChanged { changed.removeAll { $0 === flow } }
        flow.isMarkedChanged = false
    }

    /// Offers one datagram of `size` bytes from `flow` that reached the proxy at `arrival`: lost on its way in (an
    /// outcome without copies, due at once), queued, or dropped at the tail when more than `queue` bytes would be in
    /// propagation or the discipline has no room. An arrival before the latest instant the link has run to (a
    /// datagram that waited in the kernel while the loop was busy) counts from that instant, so the link never goes
    /// back in time. Datagrams of other flows that the discipline drops to make room become zero-copy outcomes of
    /// their flows.
    @discardableResult
    public func enqueue(_ size: Int, on flow: DatagramFlow, at arrival: Instant) -> DatagramAdmission {
        guard !flow.isRemoved else { return .tailDropped }
        let now = max(arrival, latest)
        latest = now
        tally.counters.datagramsEnqueued += 1
        settle(bottleneck.advance(to: now))
        if let cause = entryImpairments.drawLoss(random: &random) {
            let index = flow.nextDatagramIndex
            flow.nextDatagramIndex += 1
            tally.counters.bytesEnqueued += size
            countLoss(cause)
            schedule(DatagramDelivery(index: index, size: size, copies: 0), flow: flow.id, at: now)
            return .accepted(index: index)
        }
        if tally.counters.inFlightBytes + size > profile.queue.bytes {
            tally.counters.tailDrops += 1
            return .tailDropped
        }
        let index = flow.nextDatagramIndex
        flow.nextDatagramIndex += 1
        tally.counters.bytesEnqueued += size
        tally.counters.queuedBytes += size
        var admitted = true
        let packet = LinkPacket(
            flow: flow.id, bytes: size, tag: index, overhead: profile.accounting.overhead(datagram: kind))
        for dropped in bottleneck.enqueue(packet, now: now) {
            tally.counters.queuedBytes -= dropped.bytes
            tally.counters.tailDrops += 1
            if dropped.flow == flow.id && dropped.tag == index {
                admitted = false
            } else {
                schedule(
                    DatagramDelivery(index: dropped.tag, size: dropped.bytes, copies: 0), flow: dropped.flow, at: now)
            }
        }
        return admitted ? .accepted(index: index) : .tailDropped
    }

    /// Takes one datagram of `size` bytes from `flow` and delivers it at once, when the link could not
    /// decide anything else: it passes datagrams through, nothing is queued, and the flow has no outcome pending.
    /// Counts it as `enqueue`, its departure and `takeDeliverableDatagrams` would (the same decision, without
    /// holding it); false leaves everything as it was, and the caller uses `enqueue`.
    public func deliversAtOnce(_ size: Int, on flow: DatagramFlow) -> Bool {
        guard isPassThrough, !flow.isRemoved, bottleneck.nextEventTime == nil, flow.line.isEmpty,
            tally.counters.inFlightBytes + size <= profile.queue.bytes,
            !profile.queueLimit.isExceeded(bytes: size + profile.accounting.overhead(datagram: kind), packets: 1)
        else { return false }
        flow.nextDatagramIndex += 1
        tally.counters.datagramsEnqueued += 1
        tally.counters.bytesEnqueued += size
        tally.counters.transmissions += 1
        tally.counters.bytesDelivered += size
        tally.counters.datagramsDelivered += 1
        return true
    }

    /// Runs the bottleneck to `now` and returns the flows with new outcomes.
    public func advance(to now: Instant) -> [DatagramFlow] {
        latest = max(latest, now)
        settle(bottleneck.advance(to: latest))
        let result = changed
        changed.removeAll(keepingCapacity: true)
        for flow in result { flow.isMarkedChanged = false }
        return result
    }

    /// When `advance` next has work, or nil.
    public var nextServiceTime: Instant? { bottleneck.nextEventTime }

    public var counters: LinkCounters { tally.counters }

    /// How late, after their due instants, the flows' datagrams were taken for delivery: one record per take that
    /// delivered any, for the earliest of them. A datagram `deliversAtOnce` took is not counted.
    public var lateness: LatenessHistogram { tally.lateness }

    /// Turns the bottleneck's departures and drops into outcomes: impairments decide a departed datagram's fate.
    private func settle(_ events: [BottleneckEvent]) {
        for event in events {
            switch event {
            case .dropped(let packet, let at):
                tally.counters.queuedBytes -= packet.bytes
                tally.counters.codelDrops += 1
                schedule(DatagramDelivery(index: packet.tag, size: packet.bytes, copies: 0), flow: packet.flow, at: at)
            case .departed(let packet, let at):
                tally.counters.queuedBytes -= packet.bytes
                var fate = SegmentFate(departure: at, payloadBytes: packet.bytes)
                if !departureImpairments.isEmpty { departureImpairments.apply(to: &fate, random: &random) }
                tally.counters.transmissions += 1
                tally.counters.duplicates += fate.copies - 1
                if fate.flippedBit != nil { tally.counters.datagramsCorrupted += 1 }
                schedule(
                    DatagramDelivery(
                        index: packet.tag, size: packet.bytes, copies: fate.copies, flippedBit: fate.flippedBit),
                    flow: packet.flow, at: fate.deliverAt)
            }
        }
    }

    /// Counts a datagram lost by `cause` in the link's counters.
    private func countLoss(_ cause: LossCause) {
        switch cause {
        case .random: tally.counters.randomLosses += 1
        case .burst: tally.counters.burstLosses += 1
        }
    }

    private func schedule(_ delivery: DatagramDelivery, flow id: Int, at: Instant) {
        guard let flow = flows[id] else { return }
        flow.line.append(delivery, at: at)
        if delivery.copies > 0 { tally.counters.inFlightBytes += delivery.size }
        if !flow.isMarkedChanged {
            flow.isMarkedChanged = true
            changed.append(flow)
        }
    }
}
