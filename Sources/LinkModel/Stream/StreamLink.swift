// One direction of a listener's emulated path for TCP streams: a small discrete-event emulation of Linux TCP
// senders sharing one bottleneck.
//
// Each connection's direction is a `StreamFlow`: a `TCPSender` and a `TCPReceiver`. Events, in time order:
//
//     the application writes   → the sender sends what its window allows, as segments towards the bottleneck
//     entry + loss draw        → random loss (`loss`, or Gilbert-Elliott under `loss.model`) per segment, before
//                                the queue and the rate, as netem draws it: a lost segment takes no link time
//     the bottleneck           → a segment departs after serialisation (constant rate or a trace), or the queue
//                                discipline drops it (FIFO when full, CoDel when it stood too long, fq_codel
//                                from the fattest flow): a loss for that flow, so the sawtooth and bufferbloat,
//                                or CoDel's short queue, emerge from here
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
// The emulation's state is one value (`StreamLink.Emulation`) and each flow's is one value (`StreamFlow.Model`),
// taken `inout` once per call or event: Swift checks every access to a class's stored property for exclusivity at
// run time, and with a property per field the checks cost more than the model itself (about 60 per segment).
// Within a value, the compiler proves exclusivity as it compiles. A segment's flow is found by binary search over
// the flows in number order, without hashing.
//
// A segment is charged what the direction's `RateAccounting` counts: its payload (the default), or its Ethernet
// frame, 66 bytes more (1514 bytes for a full segment), as netem's and tbf's rates count it. A unit of several
// segments is charged each segment's headers. ACKs cross no bottleneck, so they are charged nothing either way.

import HeapModule

/// A flow's next event in a link's schedule; stale once the flow was rescheduled (its generation moved on) or
/// removed. Ties go to the older flow, the order flows were visited in before.
struct ScheduledFlow: Comparable {
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

    private var emulation: Emulation

    /// Decides each segment's loss as it enters the bottleneck, in place of the random draw (tests pick which
    /// transmission is lost); the packet it is given is one segment.
    var lossDecision: ((LinkPacket) -> Bool)? {
        get { emulation.lossDecision }
        set { emulation.lossDecision = newValue }
    }
    /// Decides an ACK's loss in place of the reverse direction's draw (tests pick which ACK is lost).
    var ackLossDecision: ((TCPAck) -> Bool)? {
        get { emulation.ackLossDecision }
        set { emulation.ackLossDecision = newValue }
    }
    /// Decides a SYN's (uplink) or SYN-ACK's (downlink) loss in place of the draw (tests pick which is lost).
    var handshakeLossDecision: (() -> Bool)? {
        get { emulation.handshakeLossDecision }
        set { emulation.handshakeLossDecision = newValue }
    }

    /// Creates a direction carrying `profile`, whose ACKs come back over `reverse`; `seed` drives every draw.
    public init(side: Side, profile: DirectionShape, reverse: DirectionShape, settings: TCPSettings, seed: UInt64) {
        emulation = Emulation(side: side, profile: profile, reverse: reverse, settings: settings, seed: seed)
    }

    /// Live profile switch at `now`: segments queued and on their way keep their order and times; new settings
    /// apply to what is serialised from now on, `settings` to connections opened from now on. Senders backed off
    /// by a dead path (100 % loss) retry within one timeout. A link that now emulates nothing opens every side
    /// still waiting for its handshake, as such a link would have completed it.
    public func update(profile: DirectionShape, reverse: DirectionShape, settings: TCPSettings, now: Instant) {
        emulation.update(profile: profile, reverse: reverse, settings: settings, now: now)
    }

    /// Whether nothing at all is emulated in either direction.
    public var isPassThrough: Bool { emulation.isPassThrough }

    /// Draws the handshake of a connection starting now: its SYNs cross this direction (the uplink) and its
    /// SYN-ACKs `reverse` (the downlink), each lost by its direction's loss; each direction counts the
    /// retransmissions it carries.
    public func drawHandshake(answeredOver reverse: StreamLink) -> HandshakeAttempts {
        assert(
            emulation.side == .connector && reverse.emulation.side == .acceptor,
            "the SYNs cross the uplink, the SYN-ACKs the downlink")
        let (uplinkDelay, downlinkDelay) = (emulation.profile.delay, reverse.emulation.profile.delay)
        let attempts: HandshakeAttempts
        let phase = emulation.drawTimerWheelPhase()
        if emulation.canLoseHandshakeSegment || reverse.emulation.canLoseHandshakeSegment {
            attempts = HandshakeAttempts(
                uplinkDelay: uplinkDelay, downlinkDelay: downlinkDelay,
                synLost: { self.emulation.isHandshakeSegmentLost() },
                synAckLost: { reverse.emulation.isHandshakeSegmentLost() },
                ackLost: { self.emulation.isHandshakeSegmentLost() }, timerWheelPhase: phase)
        } else {
            attempts = HandshakeAttempts(uplinkDelay: uplinkDelay, downlinkDelay: downlinkDelay, timerWheelPhase: phase)
        }
        emulation.counters.handshakeRetransmissions += attempts.synRetransmissions
        if attempts.isAbandoned {
            reverse.emulation.counters.handshakeRetransmissions += attempts.synAckRetransmissions
        }
        return attempts
    }

    /// Attaches a new connection's direction at `now`, the instant the proxy connects upstream (when the first SYN
    /// reached the server). With `emulatingHandshake` it may send only once its side of `handshake` has completed
    /// (a lossless handshake over the current delays when nil), never if it was abandoned, and the server's side,
    /// when every ACK of its SYN-ACKs was lost, once the client's bytes reach it (`open`); without (a proxy front
    /// end's reply plays that part), at once.
    public func makeFlow(at now: Instant, emulatingHandshake: Bool = true, handshake: HandshakeAttempts? = nil)
        -> StreamFlow
    {
        emulation.makeFlow(at: now, emulatingHandshake: emulatingHandshake, handshake: handshake)
    }

    /// The peer's first bytes (or its end of stream) reached `flow`'s sender at `now`. They acknowledge its
    /// SYN-ACK as the final ACK would (tcp_check_req), so a server side still waiting for a lost final ACK may
    /// send from now, starting as its handshake stood then: what its timer would have resent later never was.
    /// False when the server had dropped its request unanswered: Linux answers such a segment with a reset.
    @discardableResult
    public func open(_ flow: StreamFlow, at now: Instant) -> Bool {
        emulation.open(flow, at: now)
    }

    /// Forgets a closed flow; its queued segments leave the bottleneck.
    public func remove(_ flow: StreamFlow) {
        emulation.remove(flow)
    }

    /// Whether `flow`'s send buffer has room for more of the application's bytes.
    public func canAccept(_ flow: StreamFlow) -> Bool {
        flow.model.sender.hasSendBufferRoom
    }

    /// The application wrote `bytes` into `flow` at `written`: now, or when they reached the proxy's socket, which
    /// may be before the latest instant the link has run to (then they count from that instant).
    public func enqueue(_ bytes: Int, on flow: StreamFlow, at written: Instant) {
        emulation.enqueue(bytes, on: flow, at: written)
    }

    /// Counts `bytes` that crossed a pass-through link outside the model (spliced in the kernel) as enqueued and
    /// delivered, so status and the rate meter see them.
    public func countSpliced(_ bytes: Int) {
        emulation.counters.bytesEnqueued += bytes
        emulation.counters.bytesDelivered += bytes
        emulation.counters.bytesSpliced += bytes
    }

    /// Counts `bytes` a pass-through link let through at once for a connection without a flow (a front end's reply)
    /// as enqueued and delivered, as the model would have counted them.
    public func countReleasedAtOnce(_ bytes: Int) {
        emulation.counters.bytesEnqueued += bytes
        emulation.counters.bytesDelivered += bytes
    }

    /// Runs the emulation up to `now` and returns the flows whose receivers released bytes, or became blocked or
    /// unblocked behind a lost segment.
    public func advance(to now: Instant) -> [StreamFlow] {
        emulation.advance(to: now)
    }

    /// The earliest instant at which `flow`'s receiver may release more bytes, as far as the link already knows:
    /// its next arrival, or while its segments wait in the bottleneck, the bottleneck's next event plus the least
    /// propagation delay. Nil when none of its bytes is on its way (the next ones wait for an ACK or a timer, or
    /// there are none). A lower bound: an arrival after a hole releases nothing. Read-only; for the proxy's write
    /// batching.
    public func nextRelease(of flow: StreamFlow) -> Instant? {
        var next = flow.model.arrivals.first?.at
        if flow.model.segmentsInBottleneck > 0, let departure = emulation.bottleneck.nextEventTime, departure != .never
        {
            let arrival = departure.addingSaturating(nanoseconds: emulation.leastDelayNanoseconds)
            next = min(next ?? arrival, arrival)
        }
        return next
    }

    /// The next instant at which `advance` has work, or nil (also for work that saturated at the end of time).
    public var nextServiceTime: Instant? {
        emulation.nextServiceTime
    }

    /// The latest instant by which `advance` must run for no release to come late: the next arrival, or the next
    /// event of any other kind plus the least propagation delay, since a departure, an ACK or a timer at T can
    /// make nothing arrive before T plus that delay. Work due sooner waits for it and is caught up then, in time
    /// order, so the model decides exactly as if it had run at each event; a relay that runs the model only then
    /// wakes about once per arrival instead of once per event. Only a pump waiting for send-buffer room hears of
    /// it later, up to that delay.
    public var nextWakeTime: Instant? {
        emulation.nextWakeTime
    }

    /// Entries in the schedule, stale ones included.
    var scheduleEntries: Int { emulation.scheduleEntries }

    /// Arrivals `nextWakeTime` keeps track of, those of removed flows included.
    var arrivalEntries: Int { emulation.arrivalSchedule.count }

    public var counters: LinkCounters {
        var counters = emulation.counters
        counters.bytesDelivered += emulation.tally.counters.bytesDelivered
        counters.queuedBytes = emulation.bottleneck.byteCount
        counters.inFlightBytes = emulation.flows.reduce(0) { $0 + $1.inFlightBytes }
        return counters
    }
}

extension StreamLink {
    /// The whole emulation of one direction as a value, so that its event handling reaches its own state without a
    /// run-time exclusivity check per access; flows' states come in `inout`, once per event.
    struct Emulation {
        let side: Side
        private(set) var profile: DirectionShape
        /// `emulatesNothing`, kept as the profile changes: the class reads it for every pump's read, and reading a
        /// computed property of the emulation through the class copied the whole emulation.
        private(set) var isPassThrough = false
        /// The least propagation delay a segment may have, max(0, delay − jitter), in nanoseconds: kept for
        /// `nextRelease`, read through the class without copying the emulation.
        private(set) var leastDelayNanoseconds: Int64 = 0
        /// The most segments a sender's unit may hold on this link: what the bottleneck serialises in
        /// `unitArrivalSpan`, at least one. Beyond it a receiver would see the segments arrive apart, not as one.
        private(set) var largestUnit = 1
        var reverseDelay: Duration
        /// The reverse direction's loss, drawn for ACKs.
        private var ackLoss: SegmentLoss
        private var ackRandom: SeededRandom
        var settings: TCPSettings
        var bottleneck: Bottleneck
        private var random: SeededRandom
        private var segmentLoss: SegmentLoss
        /// The live flows, in number order (new flows get the next number; removal keeps the order), so a number
        /// is found by binary search.
        var flows: [StreamFlow] = []
        var nextFlowNumber = 0
        var schedule = Heap<ScheduledFlow>()
        /// The arrivals on their way to the flows' receivers, by time, for `nextWakeTime`; `run` drops those it
        /// handled.
        var arrivalSchedule = Heap<ScheduledFlow>()
        /// Whether the schedule's top entry is known to be live: set when `nextScheduledFlow` checked it, cleared
        /// by every change to the schedule or to a flow's entry, so the check (a read of the flow) runs once per
        /// change rather than at every look.
        var scheduleTopIsLive = false
        var changed: [StreamFlow] = []
        private var spare: [StreamFlow] = []
        /// What the link counted itself; flows count the bytes taken from them in `tally`.
        var counters = LinkCounters()
        let tally = LinkTally()
        /// The latest instant at which the emulation did anything (an event, a write, a switch): a write may be
        /// entered as late as it was made, but never before what the link already did.
        var latestEvent = Instant(nanoseconds: .min)
        var lossDecision: ((LinkPacket) -> Bool)?
        var ackLossDecision: ((TCPAck) -> Bool)?
        private var handshakeRandom: SeededRandom
        /// Draws each connection's phase in the timer wheel's grid.
        private var timerWheelRandom: SeededRandom
        private var handshakeLoss: SegmentLoss
        var handshakeLossDecision: (() -> Bool)? {
            didSet { noteHandshakeLoss() }
        }
        /// Whether a SYN or SYN-ACK on this direction could be lost: a lossless one draws nothing (the draw takes no
        /// random number there either), so its handshake needs no playing out. Kept, not computed: the class reads
        /// it for every connection, and a computed property read through the class copied the whole emulation.
        private(set) var canLoseHandshakeSegment = false
        /// Bound on events handled per `advance`, so a model bug cannot hang the event loop.
        static let maximumEventsPerAdvance = 1_000_000

        /// Mixed into the seed for the ACK loss draws, so they do not shift the forward direction's draws.
        private static let ackSeedSalt: UInt64 = 0xACC0_5EED_ACC0_5EED
        /// Mixed into the seed for the handshake's draws, so they shift neither the segments' nor the ACKs' draws.
        private static let handshakeSeedSalt: UInt64 = 0x5A_5EED_0000_5A5A
        /// Mixed into the seed for the timer wheel's phase, so it shifts no loss draw.
        private static let timerWheelSeedSalt: UInt64 = 0x71_3E55_0000_3E71

        init(side: Side, profile: DirectionShape, reverse: DirectionShape, settings: TCPSettings, seed: UInt64) {
            self.side = side
            self.profile = profile
            self.reverseDelay = reverse.delay
            self.ackLoss = SegmentLoss(shape: reverse)
            self.ackRandom = SeededRandom(seed: seed ^ Self.ackSeedSalt)
            self.settings = settings
            self.bottleneck = Bottleneck(
                discipline: profile.queueManagement.makeDiscipline(limit: profile.queueLimit),
                serializer: profile.makeSerializer())
            self.random = SeededRandom(seed: seed)
            self.segmentLoss = SegmentLoss(shape: profile)
            self.handshakeRandom = SeededRandom(seed: seed ^ Self.handshakeSeedSalt)
            self.timerWheelRandom = SeededRandom(seed: seed ^ Self.timerWheelSeedSalt)
            self.handshakeLoss = SegmentLoss(shape: profile)
            noteProfile()
        }

        /// Recomputes what is kept from the profile after it changed.
        private mutating func noteProfile() {
            isPassThrough = emulatesNothing
            noteHandshakeLoss()
            leastDelayNanoseconds = max(0, (profile.delay - profile.jitter).nanoseconds)
            largestUnit = Self.largestUnit(for: profile)
        }

        /// How long a unit's segments may take to leave the bottleneck and still reach the receiver as one: about
        /// what a receiver's interrupt moderation and GRO merge, and the millisecond of pacing rate
        /// tcp_tso_autosize sizes a unit by. Below one full segment a millisecond (11.6 Mbit/s of payload, 12.1
        /// of frames) every segment is its own unit, as on a router whose segments arrive apart.
        static let unitArrivalSpan = Duration.milliseconds(1)

        /// The most segments one unit may hold under `profile`: all a sender builds when nothing serialises
        /// (they arrive together anyway), one on a trace (its opportunities carry single packets, as mahimahi's),
        /// and one under CoDel or fq_codel, which drop packets one by one as they leave, as a router running them
        /// drops single segments (dropping units whole cut fq_codel's fairness among 100 streams from 0.9999 to
        /// 0.96).
        static func largestUnit(for profile: DirectionShape) -> Int {
            if profile.trace != nil || !profile.queueManagement.isFIFO { return 1 }
            guard let bandwidth = profile.bandwidth else { return TCPSender.largestUnitSegments }
            let segmentCharge = TCPSender.mss + profile.accounting.overhead(tcpSegments: 1)
            let segments = bandwidth.bytes(in: unitArrivalSpan) / Double(segmentCharge)
            return max(1, min(TCPSender.largestUnitSegments, Int(segments)))
        }

        mutating func update(profile: DirectionShape, reverse: DirectionShape, settings: TCPSettings, now: Instant) {
            run(until: now)
            latestEvent = max(latestEvent, now)
            let old = self.profile
            self.profile = profile
            self.reverseDelay = reverse.delay
            ackLoss.update(shape: reverse)
            self.settings = settings
            if old.trace != profile.trace || old.bandwidth != profile.bandwidth || old.burst != profile.burst
                || old.accounting != profile.accounting
            {
                bottleneck.update(serializer: profile.makeSerializer(), now: now)
            }
            if old.queueManagement != profile.queueManagement || old.queueLimit != profile.queueLimit {
                let refused = bottleneck.update(
                    discipline: profile.queueManagement.makeDiscipline(limit: profile.queueLimit),
                    now: now)
                for packet in refused { flow(numbered: packet.flow)?.model.segmentsInBottleneck -= 1 }
                counters.segmentsLost += refused.count
            }
            segmentLoss.update(shape: profile)
            handshakeLoss.update(shape: profile)
            noteProfile()
            let opensEveryFlow = isPassThrough
            for flow in flows {
                if opensEveryFlow && flow.model.opensAt > now { flow.model.opensAt = now }
                flow.model.sender.pathChanged(now: now)
                transmit(flow, &flow.model, at: now)
                reschedule(flow, &flow.model, at: now)
                compactScheduleIfStale()
            }
        }

        /// Whether nothing at all is emulated in either direction, as `profile`, `reverseDelay` and `ackLoss`
        /// stand.
        private var emulatesNothing: Bool {
            profile.bandwidth == nil && profile.trace == nil && profile.delay == .zero && profile.jitter == .zero
                && profile.loss == .zero
                && profile.lossModel == .random && reverseDelay == .zero && !ackLoss.canLose
        }

        mutating func enqueue(_ bytes: Int, on flow: StreamFlow, at written: Instant) {
            guard bytes > 0, !flow.model.isRemoved else { return }
            let now = max(written, latestEvent)
            latestEvent = now
            counters.bytesEnqueued += bytes
            run(until: now)
            enqueue(bytes, on: flow, &flow.model, at: now)
            compactScheduleIfStale()
        }

        private mutating func enqueue(
            _ bytes: Int, on flow: StreamFlow, _ model: inout StreamFlow.Model, at now: Instant
        ) {
            if isPassThrough && model.pendingBytes == 0 {
                model.release(bytes, at: now)
                markChanged(flow, &model)
                return
            }
            model.pendingBytes += bytes
            model.sender.write(bytes, now: now)
            transmit(flow, &model, at: now)
            reschedule(flow, &model, at: now)
        }

        mutating func advance(to now: Instant) -> [StreamFlow] {
            run(until: now)
            guard !changed.isEmpty else { return [] }
            let result = changed
            spare.removeAllKeepingCapacity()
            changed = spare
            spare = result
            for flow in result { flow.model.isMarkedChanged = false }
            return result
        }

        var nextWakeTime: Instant? {
            mutating get {
                guard let next = nextServiceTime else { return nil }
                guard leastDelayNanoseconds > 0 else { return next }
                let bound = next.addingSaturating(nanoseconds: leastDelayNanoseconds)
                return earliestArrival().map { min($0, bound) } ?? bound
            }
        }

        /// The earliest arrival on its way to any flow's receiver, after dropping entries of flows since removed.
        mutating func earliestArrival() -> Instant? {
            while let top = arrivalSchedule.min {
                if flow(numbered: top.number) != nil { return top.at }
                arrivalSchedule.removeMin()
            }
            return nil
        }

        var nextServiceTime: Instant? {
            mutating get {
                var next = bottleneck.nextEventTime
                if let at = nextScheduledFlow()?.at { next = min(next ?? at, at) }
                return next == .never ? nil : next
            }
        }

        /// Entries in the schedule, stale ones included.
        var scheduleEntries: Int { schedule.count }

        mutating func sendAck(_ ack: TCPAck, on model: inout StreamFlow.Model, at now: Instant) {
            if ackLossDecision?(ack) ?? isAckLost() {
                counters.acksLost += 1
                return
            }
            let arrival = max(now.addingSaturating(nanoseconds: reverseDelay.nanoseconds), model.acks.last?.at ?? now)
            model.acks.append((ack, arrival))
        }

        /// A segment, or a run of several, left the bottleneck at `now`: it arrives one propagation delay (± jitter)
        /// later, never before the flow's previous arrival. Its loss was drawn as it entered (`transmit`).
        mutating func depart(_ packet: LinkPacket, of model: inout StreamFlow.Model, at now: Instant) {
            arrive(
                Int64(packet.tag)..<Int64(packet.tag) + Int64(packet.bytes), of: packet.flow, &model,
                departedAt: now, echo: packet.echo)
        }

        /// `bytes` arrive at the receiver one propagation delay (± jitter) after `now`, never before the flow's
        /// previous arrival.
        private mutating func arrive(
            _ bytes: Range<Int64>, of number: Int, _ model: inout StreamFlow.Model, departedAt now: Instant,
            echo: Instant?
        ) {
            var offset = profile.delay.nanoseconds
            let spread = profile.jitter.nanoseconds
            if spread > 0 { offset = offset.addingSaturating(Int64.random(in: -spread...spread, using: &random)) }
            var arrival = now.addingSaturating(nanoseconds: max(0, offset))
            if let last = model.arrivals.last { arrival = max(arrival, last.at) }
            let segment = TCPSegment(seq: bytes.lowerBound, length: bytes.count, isRetransmission: false)
            model.arrivals.append((segment, arrival, echo))
            arrivalSchedule.insert(ScheduledFlow(at: arrival, number: number, generation: 0))
        }

        /// This direction's loss, drawn for one segment.
        mutating func drawsSegmentLoss() -> Bool { segmentLoss.isLost(random: &random) }

        /// Whether a segment can be lost on its way in: by a test's decision or the profile's loss.
        var canLoseSegment: Bool { lossDecision != nil || segmentLoss.canLose }

        /// This direction's loss, drawn for one SYN or SYN-ACK from the handshake's own generator and chain.
        mutating func isHandshakeSegmentLost() -> Bool {
            if let handshakeLossDecision { return handshakeLossDecision() }
            return handshakeLoss.isLost(random: &handshakeRandom)
        }

        /// Where this connection's connect() falls in the kernel timer wheel's grid, from a generator of its own
        /// so the losses' draws stay as they were; nil (exact timers) when a test decides the losses.
        mutating func drawTimerWheelPhase() -> Duration? {
            guard handshakeLossDecision == nil else { return nil }
            return .nanoseconds(Int64(timerWheelRandom.next() % UInt64(TimerWheel.span.nanoseconds)))
        }

        /// Recomputes `canLoseHandshakeSegment` after the profile or the handshake's loss decision changed.
        private mutating func noteHandshakeLoss() {
            canLoseHandshakeSegment = handshakeLossDecision != nil || handshakeLoss.canLose
        }

        /// The reverse direction's loss, drawn for one ACK.
        private mutating func isAckLost() -> Bool { ackLoss.isLost(random: &ackRandom) }

        mutating func markChanged(_ flow: StreamFlow, _ model: inout StreamFlow.Model) {
            guard !model.isMarkedChanged else { return }
            model.isMarkedChanged = true
            changed.append(flow)
        }
    }
}
