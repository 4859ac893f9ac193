// One direction of a listener's emulated path for TCP streams: a small discrete-event emulation of Linux TCP
// senders sharing one bottleneck.
//
// Each connection's direction is a `StreamFlow`: a `TCPSender` and a `TCPReceiver`. Events, in time order:
//
//     the application writes   → the sender sends what its window allows, as segments into the bottleneck
//     the bottleneck           → a segment departs after serialisation (constant rate or a trace), or the queue
//                                discipline drops it (FIFO when full, CoDel when it stood too long, fq_codel
//                                from the fattest flow): a loss for that flow, so the sawtooth and bufferbloat,
//                                or CoDel's short queue, emerge from here
//     departure + loss draw    → random loss (`loss`, or Gilbert-Elliott under `loss.model`) per segment
//     departure + delay ± jitter → arrival at the receiver; arrivals of one flow never overtake each other
//     arrival                  → in-order bytes are released to the proxy at once; after a hole they wait
//                                (head-of-line blocking); the receiver ACKs now or after its delayed-ACK timer
//     ACK + reverse loss draw  → lost (the reverse direction's `loss` or Gilbert-Elliott model), or
//     + reverse delay            arrival at the sender: windows grow, losses are detected and repaired
//     sender timers            → RACK reorder timer, tail loss probe, retransmission timeout
//
// The ACK path takes the reverse direction's propagation delay and loss: it ignores the reverse bandwidth (ACKs
// are small), its queue and its jitter. A lost ACK costs little (the next one is cumulative and repeats the SACK
// blocks) unless it was the last of a flight. Its draws come from their own generator, seeded from `seed`, so a
// link whose reverse direction loses nothing draws exactly as before; a Gilbert-Elliott reverse direction runs
// its own chain for the ACKs. Handshake: the SYNs and the final ACK take the uplink's loss and the SYN-ACKs the
// downlink's, drawn from their own generators (and Gilbert-Elliott chains) per link, and lost ones are resent on
// Linux's 1, 2, 4 … s timers (`HandshakeAttempts`); the proxy connects upstream when the first SYN arrives. The
// connecting side's flow opens when the first SYN-ACK reaches the client (one downlink delay after the connect
// without loss), the accepting side's when an ACK of a SYN-ACK arrives (one uplink delay later without loss) or
// the client's first bytes do (`open`), so the first request/response takes two round trips as on a real link,
// plus the handshake's stalls, and a server that speaks first pays the handshake too. Each side's sender starts
// from `HandshakeAttempts.SideStart`: its first RTT sample from the echoed timestamps, as Linux takes it, so its
// first retransmission timeout is about 200 ms rather than 1 s, and its initial window.
//
// A link with no impairment at all (no rate, delay, jitter or loss either way) passes bytes straight through
// whenever a flow has nothing in the model, so an unconditioned listener costs nothing.
//
// Flows wait in a heap ordered by their next event, so an event costs O(log flows) rather than a visit to every
// flow: 100 streams on one link visited each other at every segment's departure.
//
// Rates count payload bytes (`BitRate`), so a segment is charged its payload; a wire-accounting link such as
// netem's (1514-byte frames per 1448-byte segment) is about 4.5 % slower for the same number.

import HeapModule

/// A flow's next event in a link's schedule; stale once the flow was rescheduled (its generation moved on) or
/// removed. Ties go to the older flow, the order flows were visited in before.
private struct ScheduledFlow: Comparable {
    var at: Instant
    var number: Int
    var generation: Int

    static func < (lhs: ScheduledFlow, rhs: ScheduledFlow) -> Bool {
        lhs.at == rhs.at ? lhs.number < rhs.number : lhs.at < rhs.at
    }
}

/// One direction of a listener's link for TCP streams, shared by all its connections.
///
/// It never reads a clock: every method takes `now`, and calls come with `now` never decreasing. Lives on the
/// event loop thread; not thread-safe.
public final class StreamLink {
    /// Which end of the connection sends on this direction.
    public enum Side: Hashable, Sendable {
        /// The side that connected (the client; the uplink).
        case connector
        /// The side that accepted (the upstream server; the downlink).
        case acceptor
    }

    private let side: Side
    private var profile: DirectionProfile
    private var reverseDelay: Duration
    private var reverseLoss: Percentage
    private var ackBurstLoss: GilbertElliottLoss?
    private var ackRandom: SeededRandom
    private var settings: TCPSettings
    private var bottleneck: Bottleneck
    private var random: SeededRandom
    private var burstLoss: GilbertElliottLoss?
    private var flows: [StreamFlow] = []
    private var flowsByNumber: [Int: StreamFlow] = [:]
    private var nextFlowNumber = 0
    private var schedule = Heap<ScheduledFlow>()
    private var changed: [StreamFlow] = []
    private var spare: [StreamFlow] = []
    private let tally = LinkTally()
    private var lastAckAt = Instant(nanoseconds: .min)
    /// The latest instant at which the emulation did anything (an event, a write, a switch): a write may be
    /// entered as late as it was made, but never before what the link already did.
    private var latestEvent = Instant(nanoseconds: .min)
    /// Decides a departed segment's loss in place of the random draw (tests pick which transmission is lost).
    var lossDecision: ((LinkPacket) -> Bool)?
    /// Decides an ACK's loss in place of the reverse direction's draw (tests pick which ACK is lost).
    var ackLossDecision: ((TCPAck) -> Bool)?
    private var handshakeRandom: SeededRandom
    private var handshakeBurstLoss: GilbertElliottLoss?
    /// Decides a SYN's (uplink) or SYN-ACK's (downlink) loss in place of the draw (tests pick which is lost).
    var handshakeLossDecision: (() -> Bool)?
    /// Bound on events handled per `advance`, so a model bug cannot hang the event loop.
    private static let maximumEventsPerAdvance = 1_000_000

    /// Mixed into the seed for the ACK loss draws, so they do not shift the forward direction's draws.
    private static let ackSeedSalt: UInt64 = 0xACC0_5EED_ACC0_5EED
    /// Mixed into the seed for the handshake's draws, so they shift neither the segments' nor the ACKs' draws.
    private static let handshakeSeedSalt: UInt64 = 0x5A_5EED_0000_5A5A

    /// Creates a direction carrying `profile`, whose ACKs come back over `reverse`; `seed` drives every draw.
    public init(side: Side, profile: DirectionProfile, reverse: DirectionProfile, settings: TCPSettings, seed: UInt64) {
        self.side = side
        self.profile = profile
        self.reverseDelay = reverse.delay
        self.reverseLoss = reverse.loss
        self.ackBurstLoss = GilbertElliottLoss(profile: reverse)
        self.ackRandom = SeededRandom(seed: seed ^ Self.ackSeedSalt)
        self.settings = settings
        self.bottleneck = Bottleneck(discipline: profile.queueManagement.makeDiscipline(limit: profile.queueLimit),
                                     serializer: profile.makeSerializer())
        self.random = SeededRandom(seed: seed)
        self.burstLoss = GilbertElliottLoss(profile: profile)
        self.handshakeRandom = SeededRandom(seed: seed ^ Self.handshakeSeedSalt)
        self.handshakeBurstLoss = GilbertElliottLoss(profile: profile)
    }

    /// Live profile switch at `now`: segments queued and on their way keep their order and times; new settings
    /// apply to what is serialised from now on, `settings` to connections opened from now on. Senders backed off
    /// by a dead path (100 % loss) retry within one timeout. A link that now emulates nothing opens every side
    /// still waiting for its handshake, as such a link would have completed it.
    public func update(profile: DirectionProfile, reverse: DirectionProfile, settings: TCPSettings, now: Instant) {
        run(until: now)
        latestEvent = max(latestEvent, now)
        let old = self.profile
        self.profile = profile
        self.reverseDelay = reverse.delay
        self.reverseLoss = reverse.loss
        let wantedAckLoss = GilbertElliottLoss(profile: reverse)
        if wantedAckLoss?.parameters != ackBurstLoss?.parameters { ackBurstLoss = wantedAckLoss }
        self.settings = settings
        if old.trace != profile.trace || old.bandwidth != profile.bandwidth || old.burst != profile.burst {
            bottleneck.update(serializer: profile.makeSerializer(), now: now)
        }
        if old.queueManagement != profile.queueManagement || old.queueLimit != profile.queueLimit {
            let refused = bottleneck.update(discipline: profile.queueManagement.makeDiscipline(limit: profile.queueLimit),
                                            now: now)
            for packet in refused { flowsByNumber[packet.flow]?.segmentsInBottleneck -= 1 }
            tally.counters.segmentsLost += refused.count
        }
        let wanted = GilbertElliottLoss(profile: profile)
        if wanted?.parameters != burstLoss?.parameters { burstLoss = wanted }
        if wanted?.parameters != handshakeBurstLoss?.parameters { handshakeBurstLoss = wanted }
        let opensEveryFlow = isPassThrough
        for flow in flows {
            if opensEveryFlow && flow.opensAt > now { flow.opensAt = now }
            flow.sender.pathChanged(now: now)
            transmit(flow, at: now)
            reschedule(flow, at: now)
        }
    }

    /// Whether nothing at all is emulated in either direction.
    public var isPassThrough: Bool {
        profile.bandwidth == nil && profile.trace == nil && profile.delay == .zero && profile.jitter == .zero
            && profile.loss == .zero
            && profile.lossModel == .random && reverseDelay == .zero && reverseLoss == .zero && ackBurstLoss == nil
    }

    /// Draws the handshake of a connection starting now: its SYNs cross this direction (the uplink) and its
    /// SYN-ACKs `reverse` (the downlink), each lost by its direction's loss; each direction counts the
    /// retransmissions it carries.
    public func drawHandshake(answeredOver reverse: StreamLink) -> HandshakeAttempts {
        assert(side == .connector && reverse.side == .acceptor, "the SYNs cross the uplink, the SYN-ACKs the downlink")
        let attempts = canLoseHandshakeSegment || reverse.canLoseHandshakeSegment
            ? HandshakeAttempts(uplinkDelay: profile.delay, downlinkDelay: reverse.profile.delay,
                                synLost: { self.isHandshakeSegmentLost() }, synAckLost: { reverse.isHandshakeSegmentLost() },
                                ackLost: { self.isHandshakeSegmentLost() })
            : HandshakeAttempts(uplinkDelay: profile.delay, downlinkDelay: reverse.profile.delay)
        tally.counters.handshakeRetransmissions += attempts.synRetransmissions
        if attempts.isAbandoned { reverse.tally.counters.handshakeRetransmissions += attempts.synAckRetransmissions }
        return attempts
    }

    /// Attaches a new connection's direction at `now`, the instant the proxy connects upstream (when the first SYN
    /// reached the server). With `emulatingHandshake` it may send only once its side of `handshake` has completed
    /// (a lossless handshake over the current delays when nil), never if it was abandoned, and the server's side,
    /// when every ACK of its SYN-ACKs was lost, once the client's bytes reach it (`open`); without (a proxy front
    /// end's reply plays that part), at once.
    public func makeFlow(at now: Instant, emulatingHandshake: Bool = true, handshake: HandshakeAttempts? = nil) -> StreamFlow {
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
        if side == .connector || !emulatingHandshake {
            flow.sender.handshakeCompleted(handshake.clientStart)
        } else {
            let opened = handshake.serverEstablished ?? handshake.serverGaveUp ?? HandshakeAttempts.clientGivesUpAfter
            let start = handshake.serverStart(openedAt: opened)
            let acksLost = handshake.handshakeAcksLost(before: opened)
            flow.sender.handshakeCompleted(start)
            flow.serverHandshake = (handshake, connectedAt, start.retransmissions, acksLost)
            tally.counters.handshakeRetransmissions += start.retransmissions
            tally.counters.acksLost += acksLost
        }
        nextFlowNumber += 1
        flows.append(flow)
        flowsByNumber[flow.number] = flow
        tally.counters.flows += 1
        return flow
    }

    /// The peer's first bytes (or its end of stream) reached `flow`'s sender at `now`. They acknowledge its
    /// SYN-ACK as the final ACK would (tcp_check_req), so a server side still waiting for a lost final ACK may
    /// send from now, starting as its handshake stood then: what its timer would have resent later never was.
    /// False when the server had dropped its request unanswered: Linux answers such a segment with a reset.
    @discardableResult
    public func open(_ flow: StreamFlow, at now: Instant) -> Bool {
        guard flow.opensAt > now, !flow.isRemoved else { return true }
        let now = max(now, latestEvent)
        run(until: now)
        latestEvent = now
        if let server = flow.serverHandshake {
            let offset = now - server.connectedAt
            if let gaveUp = server.attempts.serverGaveUp, offset >= gaveUp { return false }
            let start = server.attempts.serverStart(openedAt: offset)
            let acksLost = server.attempts.handshakeAcksLost(before: offset)
            tally.counters.handshakeRetransmissions += start.retransmissions - server.resent
            tally.counters.acksLost += acksLost - server.acksLost
            flow.serverHandshake = (server.attempts, server.connectedAt, start.retransmissions, acksLost)
            flow.sender.handshakeCompleted(start)
        }
        flow.opensAt = now
        transmit(flow, at: now)
        reschedule(flow, at: now)
        return true
    }

    /// Forgets a closed flow; its queued segments leave the bottleneck.
    public func remove(_ flow: StreamFlow) {
        guard !flow.isRemoved else { return }
        flow.isRemoved = true
        flow.segmentsInBottleneck = 0
        flow.scheduledAt = nil
        tally.counters.flows -= 1
        _ = bottleneck.removeAll(ofFlow: flow.number)
        flowsByNumber.removeValue(forKey: flow.number)
        if let index = flows.firstIndex(where: { $0 === flow }) { flows.remove(at: index) }
        if flow.isMarkedChanged, let index = changed.firstIndex(where: { $0 === flow }) { changed.remove(at: index) }
        flow.isMarkedChanged = false
        flow.arrivals.removeAll()
        flow.acks.removeAll()
        compactScheduleIfStale()
    }

    /// Whether `flow`'s send buffer has room for more of the application's bytes.
    public func canAccept(_ flow: StreamFlow) -> Bool {
        flow.sender.bufferedBytes < flow.sender.sendBufferLimit
    }

    /// The application wrote `bytes` into `flow` at `written`: now, or when they reached the proxy's socket, which
    /// may be before the latest instant the link has run to (then they count from that instant).
    public func enqueue(_ bytes: Int, on flow: StreamFlow, at written: Instant) {
        guard bytes > 0, !flow.isRemoved else { return }
        let now = max(written, latestEvent)
        latestEvent = now
        tally.counters.bytesEnqueued += bytes
        run(until: now)
        if isPassThrough && flow.pendingBytes == 0 {
            flow.release(bytes, at: now)
            markChanged(flow)
            return
        }
        flow.pendingBytes += bytes
        flow.sender.write(bytes, now: now)
        transmit(flow, at: now)
        reschedule(flow, at: now)
    }

    /// Counts `bytes` that crossed a pass-through link outside the model (spliced in the kernel) as enqueued and
    /// delivered, so status and the rate meter see them.
    public func countSpliced(_ bytes: Int) {
        tally.counters.bytesEnqueued += bytes
        tally.counters.bytesDelivered += bytes
        tally.counters.bytesSpliced += bytes
    }

    /// Runs the emulation up to `now` and returns the flows whose receivers released bytes, or became blocked or
    /// unblocked behind a lost segment.
    public func advance(to now: Instant) -> [StreamFlow] {
        run(until: now)
        guard !changed.isEmpty else { return [] }
        let result = changed
        spare.removeAll(keepingCapacity: true)
        changed = spare
        spare = result
        for flow in result { flow.isMarkedChanged = false }
        return result
    }

    /// The earliest instant at which `flow`'s receiver may release more bytes, as far as the link already knows:
    /// its next arrival, or while its segments wait in the bottleneck, the bottleneck's next event plus the least
    /// propagation delay. Nil when none of its bytes is on its way (the next ones wait for an ACK or a timer, or
    /// there are none). A lower bound: an arrival after a hole releases nothing. Read-only; for the proxy's write
    /// batching.
    public func nextRelease(of flow: StreamFlow) -> Instant? {
        var next = flow.arrivals.first?.at
        if flow.segmentsInBottleneck > 0, let departure = bottleneck.nextEventTime, departure != .never {
            let least = max(0, (profile.delay - profile.jitter).nanoseconds)
            let arrival = departure.addingSaturating(nanoseconds: least)
            next = min(next ?? arrival, arrival)
        }
        return next
    }

    /// The next instant at which `advance` has work, or nil (also for work that saturated at the end of time).
    public var nextServiceTime: Instant? {
        var next = bottleneck.nextEventTime
        if let at = nextScheduledFlow()?.at { next = min(next ?? at, at) }
        return next == .never ? nil : next
    }

    /// The earliest live entry of the schedule, after dropping stale ones from its top.
    private func nextScheduledFlow() -> ScheduledFlow? {
        while let top = schedule.min {
            if let flow = flowsByNumber[top.number], flow.scheduleGeneration == top.generation { return top }
            schedule.removeMin()
        }
        return nil
    }

    /// Enters `flow`'s next event, as it stands after a change at `now`, in the schedule: one of its own events,
    /// or the end of its handshake when it has bytes waiting for it.
    private func reschedule(_ flow: StreamFlow, at now: Instant) {
        guard !flow.isRemoved else { return }
        var next = flow.nextEventTime
        if flow.opensAt > now, flow.sender.unsentBytes > 0 { next = min(next ?? flow.opensAt, flow.opensAt) }
        guard next != flow.scheduledAt else { return }
        flow.scheduledAt = next
        flow.scheduleGeneration += 1
        if let next, next != .never {
            schedule.insert(ScheduledFlow(at: next, number: flow.number, generation: flow.scheduleGeneration))
        }
        compactScheduleIfStale()
    }

    /// Rebuilds the schedule from the live flows once stale entries outnumber them: each closed connection may leave
    /// an entry up to a retransmission timeout ahead, so a churn of short connections would otherwise grow it.
    private func compactScheduleIfStale() {
        guard schedule.count > 2 * flows.count + 64 else { return }
        schedule = Heap(flows.compactMap { flow in
            guard let at = flow.scheduledAt, at != .never else { return nil }
            return ScheduledFlow(at: at, number: flow.number, generation: flow.scheduleGeneration)
        })
    }

    /// Entries in the schedule, stale ones included.
    var scheduleEntries: Int { schedule.count }

    public var counters: LinkCounters {
        var counters = tally.counters
        counters.queuedBytes = bottleneck.byteCount
        counters.inFlightBytes = flows.reduce(0) { $0 + $1.inFlightBytes }
        return counters
    }

    /// Handles every event due by `now`, in time order.
    private func run(until now: Instant) {
        var handled = 0
        while let at = nextServiceTime, at <= now, handled < Self.maximumEventsPerAdvance {
            handled += 1
            latestEvent = max(latestEvent, at)
            if let due = bottleneck.nextEventTime, due <= at {
                for event in bottleneck.advance(to: at) {
                    switch event {
                    case let .departed(packet, departure):
                        if let flow = flowsByNumber[packet.flow] {
                            flow.segmentsInBottleneck -= 1
                            depart(packet, of: flow, at: departure)
                            reschedule(flow, at: at)
                        }
                    case let .dropped(packet, _):
                        flowsByNumber[packet.flow]?.segmentsInBottleneck -= 1
                        tally.counters.segmentsLost += 1
                    }
                }
            }
            while let top = nextScheduledFlow(), top.at <= at, handled < Self.maximumEventsPerAdvance {
                handled += 1
                schedule.removeMin()
                guard let flow = flowsByNumber[top.number] else { continue }
                flow.scheduledAt = nil
                process(flow, at: at)
                reschedule(flow, at: at)
            }
        }
    }

    /// Handles `flow`'s events due at `at`: arrivals, the delayed ACK, ACKs, timers; then sends what it may.
    private func process(_ flow: StreamFlow, at now: Instant) {
        var touched = false
        while let first = flow.arrivals.first, first.at <= now {
            flow.arrivals.removeFirst()
            touched = true
            let ack = flow.receiver.receive(first.segment, now: first.at, idleRestart: flow.sender.timer.rto,
                                            roundTrip: profile.delay + reverseDelay)
            if let ack { sendAck(ack, on: flow, at: first.at) }
            let released = flow.receiver.takeReleased()
            if released > 0 {
                flow.release(released, at: first.at)
                flow.pendingBytes -= released
                markChanged(flow)
            }
            if flow.receiver.isHeadOfLineBlocked != flow.isLossBlocked {
                flow.isLossBlocked.toggle()
                flow.lossBlockChanges.append((first.at, flow.isLossBlocked))
                markChanged(flow)
            }
        }
        if let deadline = flow.receiver.delayedAckDeadline, deadline <= now,
           let ack = flow.receiver.delayedAckFired(now: deadline) {
            sendAck(ack, on: flow, at: deadline)
        }
        while let first = flow.acks.first, first.at <= now {
            flow.acks.removeFirst()
            touched = true
            flow.sender.receive(first.ack, now: first.at)
        }
        if let deadline = flow.sender.nextTimer, deadline <= now {
            touched = true
            flow.sender.timerFired(now: now)
        }
        if touched || (flow.opensAt == now && flow.sender.unsentBytes > 0) { transmit(flow, at: now) }
    }

    private func sendAck(_ ack: TCPAck, on flow: StreamFlow, at now: Instant) {
        if ackLossDecision?(ack) ?? isAckLost() {
            tally.counters.acksLost += 1
            return
        }
        let arrival = max(now.addingSaturating(nanoseconds: reverseDelay.nanoseconds), flow.acks.last?.at ?? now)
        flow.acks.append((ack, arrival))
    }

    /// Puts every segment `flow`'s sender may send at `now` into the bottleneck.
    private func transmit(_ flow: StreamFlow, at now: Instant) {
        guard now >= flow.opensAt, !flow.isRemoved else { return }
        while let segment = flow.sender.nextSegment(now: now) {
            tally.counters.transmissions += 1
            let packet = LinkPacket(flow: flow.number, bytes: segment.length, tag: UInt64(segment.seq))
            flow.segmentsInBottleneck += 1
            let dropped = bottleneck.enqueue(packet, now: now)
            for packet in dropped { flowsByNumber[packet.flow]?.segmentsInBottleneck -= 1 }
            tally.counters.segmentsLost += dropped.count
        }
    }

    /// A segment left the bottleneck at `now`: it is lost, or arrives one propagation delay (± jitter) later,
    /// never before the flow's previous arrival.
    private func depart(_ packet: LinkPacket, of flow: StreamFlow, at now: Instant) {
        if lossDecision?(packet) ?? isLost() {
            tally.counters.segmentsLost += 1
            return
        }
        var offset = profile.delay.nanoseconds
        let spread = profile.jitter.nanoseconds
        if spread > 0 { offset = offset.addingSaturating(Int64.random(in: -spread...spread, using: &random)) }
        var arrival = now.addingSaturating(nanoseconds: max(0, offset))
        if let last = flow.arrivals.last { arrival = max(arrival, last.at) }
        let segment = TCPSegment(seq: Int64(packet.tag), length: packet.bytes, isRetransmission: false)
        flow.arrivals.append((segment, arrival))
    }

    private func isLost() -> Bool { Self.draw(&burstLoss, loss: profile.loss, random: &random) }

    /// This direction's loss, drawn for one SYN or SYN-ACK from the handshake's own generator and chain.
    private func isHandshakeSegmentLost() -> Bool {
        if let handshakeLossDecision { return handshakeLossDecision() }
        return Self.draw(&handshakeBurstLoss, loss: profile.loss, random: &handshakeRandom)
    }

    /// Whether a SYN or SYN-ACK on this direction could be lost: a lossless one draws nothing (the draw takes no
    /// random number there either), so its handshake needs no playing out.
    private var canLoseHandshakeSegment: Bool {
        handshakeLossDecision != nil || handshakeBurstLoss != nil || profile.loss.probability > 0
    }

    /// The reverse direction's loss, drawn for one ACK.
    private func isAckLost() -> Bool { Self.draw(&ackBurstLoss, loss: reverseLoss, random: &ackRandom) }

    /// One loss draw: a step of the Gilbert-Elliott chain when the profile has one, else `loss` as an independent
    /// chance.
    private static func draw(_ burst: inout GilbertElliottLoss?, loss: Percentage, random: inout SeededRandom) -> Bool {
        if burst != nil {
            var fate = SegmentFate(departure: .zero)
            burst!.apply(to: &fate, random: &random)
            return fate.lost
        }
        let probability = loss.probability
        return probability > 0 && random.chance(probability)
    }

    private func markChanged(_ flow: StreamFlow) {
        guard !flow.isMarkedChanged else { return }
        flow.isMarkedChanged = true
        changed.append(flow)
    }
}
