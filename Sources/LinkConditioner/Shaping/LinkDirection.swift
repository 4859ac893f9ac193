import DequeModule

// The link model: one direction of a bottleneck link, shared by every flow of a listener.
//
// Serialiser. The bottleneck sends at rate R (payload bits/s). It keeps a virtual instant `linkFreeAt` (the
// token bucket's theoretical arrival time, in nanoseconds) and a burst time b = burst bytes × 8 / R, the bucket
// depth (default max(1448 bytes, R × 1 ms)). Each service step picks a flow by deficit round robin among the
// flows whose oldest bytes are ready (arrived, and the sender not stalled), takes a slice of its queued bytes
// (max(1448, R × 1 ms) capped at 64 KiB; one 1448-byte segment when loss > 0) and serialises it:
//
//     start = max(linkFreeAt, ready − b)
//     end   = start + size × 8 / R,         linkFreeAt = end + retransmissions × size × 8 / R
//     leave = max(end, arrival of the slice's last byte)
//
// With a capacity trace (`trace`), the trace serialiser decides `end` instead (b = 0), and R is the trace's
// average rate for slice sizes. Steps repeat while start ≤ now, so a late `advance` catches up in virtual time and timer latency never turns
// into rate error, while an idle link banks at most b of credit. With unlimited bandwidth a slice leaves as it
// arrives (end = ready) and is as large as what has arrived (or one segment under loss).
//
// Impairments. The slice's fate then goes through the profile's impairment pipeline: propagation delay and
// jitter (deliverAt = leave + max(0, delay + U(−jitter, +jitter))) and TCP loss (per-segment retransmissions
// that cost the link a second serialisation, delay delivery by the retransmission timeout, and stall the
// flow). Each flow's delay line clamps deliverAt to its previous one, so a stream is never reordered.
//
// Datagrams. A datagram flow's arrivals are single datagrams, and each is one slice whatever its size. Its fate
// goes through the datagram pipeline instead (random or Gilbert-Elliott loss, duplication, delay and jitter,
// reordering): a lost datagram is gone, a duplicate costs one more serialisation, and outcomes are delivered in
// the order of their times, so jitter and reordering let datagrams overtake each other. A datagram that would
// push the rate-limited link's queue past `queue` bytes is dropped at the tail.
//
// Queue. Bytes waiting for the serialiser add latency (bufferbloat). Senders are pushed back once the link
// holds `queue` bytes, except that a flow holding less than its fair share (queue / active flows, at least
// `fairMinimumShare`) may always add more, so one greedy flow cannot lock out a small request.

/// One direction of a link (uplink or downlink), shared by every flow of a listener.
///
/// It models a bottleneck serialiser with a bounded queue followed by per-segment impairments, and answers the
/// proxy's questions in counts and times: how many of a flow's bytes are deliverable now, and when to wake up.
/// It never reads a clock. Lives on the event loop thread; not thread-safe.
public final class LinkDirection {
    /// Bytes a flow may always queue, whatever the link holds: a request, a TLS flight.
    public static let fairMinimumShare = 16 * 1024
    /// The largest serialiser slice, bounding how far ahead of `now` the link commits bytes.
    public static let maximumSliceBytes = 64 * 1024
    /// The smallest serialiser slice, and the default burst: one TCP segment.
    public static let minimumSliceBytes = RetransmissionLoss.segmentBytes

    private var profile: DirectionProfile
    private var roundTrip: Duration
    private var pipeline: ImpairmentPipeline
    private var datagramPipeline: ImpairmentPipeline
    private var random: SeededRandom
    /// Nanoseconds to serialise one byte, or nil for unlimited bandwidth.
    private var nanosecondsPerByte: Double?
    /// The link sends nothing at all (a zero bandwidth profile).
    private var isStopped = false
    private var sliceBytes = Int.max
    private var burstNanoseconds: Int64 = 0
    /// The profile's capacity trace, which then decides when each slice leaves instead of the rate.
    private var traceSerializer: TraceSerializer?
    private var linkFreeAt = Instant(nanoseconds: .min)
    /// Flows with queued bytes, in deficit round robin order.
    private var ring = Deque<LinkFlow>()
    private var changed: [LinkFlow] = []
    /// The list `advance` returned last time, reused once the caller has let go of it (no allocation per call).
    private var spare: [LinkFlow] = []
    private let tally = LinkTally()
    /// Flows whose TCP sender gave up on a segment; an update to a profile that can deliver revives them.
    private var deadFlows: [LinkFlow] = []
    private var revivalPending = false

    /// Creates a direction with `profile`; `roundTrip` sizes retransmission stalls and `seed` every random draw.
    public init(profile: DirectionProfile, roundTrip: Duration, seed: UInt64) {
        self.profile = profile
        self.roundTrip = roundTrip
        self.pipeline = ImpairmentPipeline(profile: profile, roundTrip: roundTrip)
        self.datagramPipeline = ImpairmentPipeline(profile: profile, roundTrip: roundTrip, kinds: ImpairmentPipeline.datagramKinds)
        self.random = SeededRandom(seed: seed)
        configure()
    }

    /// Live profile switch: queued and in-flight bytes keep their order and are neither lost nor duplicated; new
    /// settings apply to bytes serialised from now on.
    ///
    /// Flows whose sender had given up under total loss resume at the next `advance` if the new profile can
    /// deliver: their stuck bytes arrive one retransmission timeout plus the new delay after it.
    public func update(profile: DirectionProfile, roundTrip: Duration) {
        self.profile = profile
        self.roundTrip = roundTrip
        pipeline = ImpairmentPipeline(profile: profile, roundTrip: roundTrip)
        datagramPipeline = ImpairmentPipeline(profile: profile, roundTrip: roundTrip, kinds: ImpairmentPipeline.datagramKinds)
        configure()
        for flow in ring { flow.deficit = quantum }
        if !deadFlows.isEmpty && profile.loss.probability < 1 { revivalPending = true }
    }

    private func configure() {
        let segmentSize = pipeline.segmentSize
        if traceSerializer?.trace != profile.trace { traceSerializer = profile.trace.map { TraceSerializer(trace: $0) } }
        guard let rate = profile.trace?.averageRate ?? profile.bandwidth else {
            nanosecondsPerByte = nil
            isStopped = false
            sliceBytes = segmentSize ?? Int.max
            burstNanoseconds = 0
            return
        }
        isStopped = !(rate.bitsPerSecond > 0)
        let perByte = isStopped ? 0 : 8e9 / rate.bitsPerSecond
        nanosecondsPerByte = perByte
        let bytesPerMillisecond = isStopped ? 0 : Int(min(rate.bitsPerSecond / 8_000, Double(Int32.max)))
        let defaultSlice = min(Self.maximumSliceBytes, max(Self.minimumSliceBytes, bytesPerMillisecond))
        sliceBytes = segmentSize.map { min($0, defaultSlice) } ?? defaultSlice
        let burstBytes = profile.burst?.bytes ?? max(Self.minimumSliceBytes, bytesPerMillisecond)
        burstNanoseconds = traceSerializer == nil ? Int64(min(Double(burstBytes) * perByte, Double(Int64.max / 2))) : 0
    }

    /// The deficit round robin quantum: each turn a flow may use this many bytes of link time.
    private var quantum: Int { min(sliceBytes, Self.maximumSliceBytes) }

    /// Attaches a new flow (one connection's direction) to the link.
    public func makeFlow() -> LinkFlow {
        tally.counters.flows += 1
        return LinkFlow(tally: tally)
    }

    /// Attaches a new datagram flow (one UDP client's direction) to the link.
    public func makeDatagramFlow() -> LinkFlow {
        tally.counters.flows += 1
        return LinkFlow(tally: tally, isDatagram: true)
    }

    /// Offers one datagram of `size` bytes from `flow`'s sender at `now`: queued, or dropped at the tail when it
    /// would push a rate-limited link's queue past the profile's `queue` bytes.
    @discardableResult
    public func enqueueDatagram(_ size: Int, on flow: LinkFlow, at now: Instant) -> DatagramAdmission {
        precondition(flow.isDatagram, "enqueueDatagram needs a flow from makeDatagramFlow")
        guard !flow.isRemoved else { return .tailDropped }
        tally.counters.datagramsEnqueued += 1
        if !ring.isEmpty && !isStopped { serve(until: now) }
        if nanosecondsPerByte != nil && tally.counters.queuedBytes + size > profile.queue.bytes {
            tally.counters.tailDrops += 1
            return .tailDropped
        }
        tally.counters.bytesEnqueued += size
        let index = flow.nextDatagramIndex
        flow.nextDatagramIndex += 1
        if nanosecondsPerByte == nil, datagramPipeline.isEmpty, !flow.isActive {
            flow.nextServedIndex += 1
            tally.counters.transmissions += 1
            deliverDatagram(DatagramDelivery(index: index, size: size, copies: 1), on: flow, at: now)
            return .accepted(index: index)
        }
        flow.recordArrival(size, at: now)
        tally.counters.queuedBytes += size
        if !flow.isActive {
            flow.isActive = true
            flow.deficit = quantum
            ring.append(flow)
        }
        return .accepted(index: index)
    }

    /// Forgets a closed flow; its queued and in-flight bytes leave the link's accounting.
    public func remove(_ flow: LinkFlow) {
        guard !flow.isRemoved else { return }
        flow.isRemoved = true
        tally.counters.flows -= 1
        tally.counters.queuedBytes -= flow.queuedBytes
        tally.counters.inFlightBytes -= flow.inFlightBytes
        if flow.isActive, let index = ring.firstIndex(where: { $0 === flow }) {
            ring.remove(at: index)
        }
        flow.isActive = false
        if flow.isMarkedChanged, let index = changed.firstIndex(where: { $0 === flow }) {
            changed.remove(at: index)
        }
        flow.isMarkedChanged = false
        if let index = deadFlows.firstIndex(where: { $0 === flow }) {
            deadFlows.remove(at: index)
        }
        flow.forgetAll()
    }

    /// Whether `flow` may hand the link more bytes now (queue limit, with a fair minimum share per flow so one
    /// greedy flow cannot lock out a small request).
    public func canAccept(_ flow: LinkFlow) -> Bool {
        let limit = profile.queue.bytes
        if tally.counters.queuedBytes < limit { return true }
        let sharing = ring.count + (flow.isActive ? 0 : 1)
        let share = max(limit / max(sharing, 1), Self.fairMinimumShare)
        return flow.queuedBytes < share
    }

    /// Records `bytes` read from the sender of `flow` at `now`.
    public func enqueue(_ bytes: Int, on flow: LinkFlow, at now: Instant) {
        guard bytes > 0, !flow.isRemoved else { return }
        tally.counters.bytesEnqueued += bytes
        if nanosecondsPerByte == nil, pipeline.isEmpty, !flow.isActive, flow.stalledUntil <= now {
            tally.counters.transmissions += 1
            deliver(bytes, on: flow, at: now)
            return
        }
        flow.recordArrival(bytes, at: now)
        tally.counters.queuedBytes += bytes
        if !flow.isActive {
            flow.isActive = true
            flow.deficit = quantum
            ring.append(flow)
        }
    }

    /// Serialises what the bottleneck can send by `now` and returns the flows whose delivery schedule changed.
    public func advance(to now: Instant) -> [LinkFlow] {
        if revivalPending { revive(at: now) }
        if !ring.isEmpty && !isStopped { serve(until: now) }
        guard !changed.isEmpty else { return [] }
        let result = changed
        spare.removeAll(keepingCapacity: true)
        changed = spare
        spare = result
        for flow in result { flow.isMarkedChanged = false }
        return result
    }

    /// The next instant at which `advance` has work (the serialiser becomes free while some flow waits), or nil.
    public var nextServiceTime: Instant? {
        guard !ring.isEmpty, !isStopped else { return nil }
        var earliest = Instant.never
        for flow in ring { earliest = min(earliest, flow.readyAt) }
        guard earliest != .never else { return nil }
        guard nanosecondsPerByte != nil else { return earliest }
        return max(linkFreeAt, earliest.addingSaturating(nanoseconds: -burstNanoseconds))
    }

    public var counters: LinkCounters { tally.counters }

    private func serve(until now: Instant) {
        while let (index, ready) = nextFlow(at: now) {
            let start: Instant
            if nanosecondsPerByte != nil {
                start = max(linkFreeAt, ready.addingSaturating(nanoseconds: -burstNanoseconds))
            } else {
                start = ready
            }
            guard start <= now else { return }
            serveSlice(of: index, startingAt: start, ready: ready)
        }
    }

    /// The ring index of the next flow to serve and when its bytes are ready: the first flow in round robin
    /// order that is ready when the serialiser frees up, else the one ready soonest; nil if none ever will be.
    private func nextFlow(at now: Instant) -> (Int, Instant)? {
        let threshold = nanosecondsPerByte == nil ? now : linkFreeAt.addingSaturating(nanoseconds: burstNanoseconds)
        var soonest: (Int, Instant)?
        for index in ring.indices {
            let ready = ring[index].readyAt
            if ready <= threshold { return (index, ready) }
            if ready < (soonest?.1 ?? .never) { soonest = (index, ready) }
        }
        return soonest
    }

    private func serveSlice(of index: Int, startingAt start: Instant, ready: Instant) {
        let flow = ring[index]
        let (size, lastArrival) = flow.isDatagram
            ? flow.takeQueuedDatagram() : flow.takeQueued(upTo: sliceBytes, arrivedBy: max(start, ready))
        tally.counters.queuedBytes -= size
        var transmission: Int64 = 0
        if let perByte = nanosecondsPerByte {
            transmission = Int64((Double(size) * perByte).rounded())
        }
        var end = start.addingSaturating(nanoseconds: transmission)
        if traceSerializer != nil { end = traceSerializer!.transmissionEnd(bytes: size, startingAt: start) ?? .never }
        var fate = SegmentFate(size: size, serializationEnd: max(end, lastArrival))
        if flow.isDatagram {
            if !datagramPipeline.isEmpty { datagramPipeline.apply(to: &fate, random: &random) }
        } else if !pipeline.isEmpty {
            pipeline.apply(to: &fate, random: &random)
        }
        let extraSerialisations = fate.retransmissions + fate.copies - 1
        if traceSerializer != nil {
            linkFreeAt = end
            for _ in 0..<max(extraSerialisations, 0) where linkFreeAt != .never {
                linkFreeAt = traceSerializer!.transmissionEnd(bytes: size, startingAt: linkFreeAt) ?? .never
            }
        } else if nanosecondsPerByte != nil {
            let (resend, overflow) = transmission.multipliedReportingOverflow(by: Int64(extraSerialisations))
            linkFreeAt = end.addingSaturating(nanoseconds: overflow ? .max : resend)
        }
        if flow.isDatagram {
            settleDatagram(size, fate: fate, on: flow)
        } else {
            if let stall = fate.senderStallUntil { flow.stalledUntil = max(flow.stalledUntil, stall) }
            if fate.lost && !deadFlows.contains(where: { $0 === flow }) { deadFlows.append(flow) }
            tally.counters.transmissions += 1 + fate.retransmissions
            tally.counters.segmentsLost += fate.retransmissions
            deliver(size, on: flow, at: fate.lost ? .never : fate.deliverAt)
        }

        if flow.arrivals.isEmpty {
            flow.isActive = false
            flow.deficit = 0
            ring.remove(at: index)
            return
        }
        guard nanosecondsPerByte != nil else { return }
        flow.deficit -= size * (1 + extraSerialisations)
        if flow.deficit <= 0 {
            flow.deficit += quantum
            ring.remove(at: index)
            ring.append(flow)
        }
    }

    /// Resumes flows whose sender had given up, as if its next retransmission, one timeout from `now`, got
    /// through: the stuck bytes keep their order and the flow may send again.
    private func revive(at now: Instant) {
        revivalPending = false
        let timeout = RetransmissionLoss.retransmissionTimeout(roundTrip: roundTrip)
        let resume = now + timeout
        for flow in deadFlows {
            flow.stalledUntil = resume
            flow.delayLine.revive(at: resume.addingSaturating(nanoseconds: profile.delay.nanoseconds))
            if !flow.isMarkedChanged {
                flow.isMarkedChanged = true
                changed.append(flow)
            }
        }
        deadFlows.removeAll()
    }

    /// Counts a serialised datagram's fate and schedules its outcome: a lost one at once (so its bytes are freed),
    /// a delivered one at its delivery time with its copies.
    private func settleDatagram(_ size: Int, fate: SegmentFate, on flow: LinkFlow) {
        let index = flow.nextServedIndex
        flow.nextServedIndex += 1
        tally.counters.transmissions += fate.copies
        if fate.lost {
            if fate.lossCause == .burst {
                tally.counters.burstLosses += 1
            } else {
                tally.counters.randomLosses += 1
            }
            deliverDatagram(DatagramDelivery(index: index, size: size, copies: 0), on: flow, at: fate.serializationEnd)
        } else {
            tally.counters.duplicates += fate.copies - 1
            deliverDatagram(DatagramDelivery(index: index, size: size, copies: fate.copies), on: flow, at: fate.deliverAt)
        }
    }

    private func deliverDatagram(_ delivery: DatagramDelivery, on flow: LinkFlow, at deliverAt: Instant) {
        flow.datagramLine.append(delivery, at: deliverAt)
        if delivery.copies > 0 { tally.counters.inFlightBytes += delivery.size }
        if !flow.isMarkedChanged {
            flow.isMarkedChanged = true
            changed.append(flow)
        }
    }

    /// Puts `bytes` on `flow`'s delay line and notes that its delivery schedule changed.
    private func deliver(_ bytes: Int, on flow: LinkFlow, at deliverAt: Instant) {
        flow.delayLine.append(bytes, deliverAt: deliverAt)
        tally.counters.inFlightBytes += bytes
        if deliverAt != .never && !flow.isMarkedChanged {
            flow.isMarkedChanged = true
            changed.append(flow)
        }
    }
}
