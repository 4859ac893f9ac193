// One direction's bottleneck: a queue discipline in front of a serialiser, in virtual time.
//
// The link is free at F. While the discipline holds packets and F ≤ now, the bottleneck asks the discipline for
// its next packet *at F* (so CoDel measures the sojourn F − enqueuedAt the packet really had), and the serialiser
// for its end E; the packet departs at E and the link is free again at F = E. A packet arriving at an idle link
// starts at its arrival. Because every step happens at its own virtual instant, a late `advance` catches up and
// timer latency never turns into rate error or into false sojourn times.

/// What became of a packet at the bottleneck.
public enum BottleneckEvent: Sendable, Equatable {
    /// The packet's last bit left the bottleneck at `at`; propagation delay and the impairments follow.
    case departed(LinkPacket, at: Instant)
    /// The queue discipline dropped the packet at `at` (CoDel drops as it dequeues).
    case dropped(LinkPacket, at: Instant)

    public var packet: LinkPacket {
        switch self {
        case .departed(let packet, _), .dropped(let packet, _): packet
        }
    }

    public var at: Instant {
        switch self {
        case .departed(_, let at), .dropped(_, let at): at
        }
    }
}

/// One direction's bottleneck: "take this packet; what has happened by now; when is the next event".
///
/// It never reads a clock: every call takes `now`, and calls come with `now` never decreasing. Lives on the event
/// loop thread that owns the link.
public struct Bottleneck {
    private var discipline: any QueueDiscipline
    private var serializer: any Serializer
    /// When the serialiser is free for the next packet (virtual time).
    private var linkFreeAt = Instant(nanoseconds: .min)
    /// The packet being serialised and when it leaves; `end` is nil while the link sends nothing (zero rate).
    private var transmitting: (packet: LinkPacket, end: Instant?)?
    /// Events decided while catching up inside `enqueue`, handed out by the next `advance`.
    private var pending: [BottleneckEvent] = []
    /// The array `advance` handed out the time before, taken back as the next `pending` so that handing events out
    /// allocates nothing (the caller has let go of it by then).
    private var spareEvents: [BottleneckEvent] = []
    /// The instant at which `advance` next has something to report, or nil when nothing will happen until a new
    /// packet or a new serialiser arrives. Kept up to date by every mutation rather than computed on each read:
    /// the link reads it at every event, and reading a computed property through the link copied the whole
    /// bottleneck, its queue and serialiser retained and released with it.
    public private(set) var nextEventTime: Instant?

    public init(discipline: any QueueDiscipline, serializer: any Serializer) {
        self.discipline = discipline
        self.serializer = serializer
    }

    /// Takes `packet` at `now`, stamping its `enqueuedAt`; returns the packets the discipline dropped at once to
    /// make room (perhaps `packet` itself). Those are not repeated as events.
    public mutating func enqueue(_ packet: LinkPacket, now: Instant) -> [LinkPacket] {
        serve(until: now)
        if transmitting == nil && discipline.packetCount == 0 { linkFreeAt = max(linkFreeAt, now) }
        var stamped = packet
        stamped.enqueuedAt = now
        let dropped = discipline.enqueue(stamped, now: now)
        serve(until: now)
        noteNextEvent()
        return dropped
    }

    /// Everything that happened by `now`, in time order: departures, and drops at dequeue.
    public mutating func advance(to now: Instant) -> [BottleneckEvent] {
        serve(until: now)
        guard !pending.isEmpty else {
            noteNextEvent()
            return []
        }
        let events = pending
        spareEvents.removeAllKeepingCapacity()
        pending = spareEvents
        spareEvents = events
        noteNextEvent()
        return events
    }

    /// Recomputes `nextEventTime` after a mutation.
    private mutating func noteNextEvent() {
        if let first = pending.first {
            nextEventTime = first.at
        } else if let transmitting {
            nextEventTime = transmitting.end
        } else {
            nextEventTime = discipline.packetCount > 0 ? linkFreeAt : nil
        }
    }

    /// Bytes waiting in the discipline plus the packet being serialised, as they are charged (payload or frames).
    public var byteCount: Int { discipline.byteCount + (transmitting?.packet.chargedBytes ?? 0) }

    /// Packets waiting in the discipline plus the packet being serialised.
    public var packetCount: Int { discipline.packetCount + (transmitting == nil ? 0 : 1) }

    /// Live switch of the serialiser at `now`: the packet on the wire finishes as planned (or, if the old link
    /// was stopped, starts again now on the new one); the packets after it use `serializer`.
    public mutating func update(serializer: any Serializer, now: Instant) {
        serve(until: now)
        self.serializer = serializer
        if let stuck = transmitting, stuck.end == nil {
            let start = max(linkFreeAt, now)
            transmitting = (
                stuck.packet, self.serializer.transmissionEnd(bytes: stuck.packet.chargedBytes, startingAt: start)
            )
        }
        serve(until: now)
        noteNextEvent()
    }

    /// Live switch of the discipline at `now`: queued packets move to `discipline` in their order, keeping their
    /// `enqueuedAt`; returns those it had no room for (CoDel drops on the way out are reported by `advance`).
    @discardableResult
    public mutating func update(discipline newDiscipline: any QueueDiscipline, now: Instant) -> [LinkPacket] {
        serve(until: now)
        var moving: [LinkPacket] = []
        while true {
            let (packet, dropped) = discipline.dequeue(now: now)
            pending.append(contentsOf: dropped.map { .dropped($0, at: now) })
            guard let packet else { break }
            moving.append(packet)
        }
        discipline = newDiscipline
        var refused: [LinkPacket] = []
        for packet in moving { refused += discipline.enqueue(packet, now: now) }
        serve(until: now)
        noteNextEvent()
        return refused
    }

    /// Removes the packets of a closed `flow` still waiting in the queue (not the one on the wire); they are
    /// neither departures nor drops.
    public mutating func removeAll(ofFlow flow: Int) -> [LinkPacket] {
        defer { noteNextEvent() }
        return discipline.removeAll(ofFlow: flow)
    }

    private mutating func serve(until now: Instant) {
        while true {
            if let current = transmitting {
                guard let end = current.end, end <= now else { return }
                pending.append(.departed(current.packet, at: end))
                linkFreeAt = end
                transmitting = nil
            }
            guard discipline.packetCount > 0, linkFreeAt <= now else { return }
            let start = linkFreeAt
            let (packet, dropped) = discipline.dequeue(now: start)
            for packet in dropped { pending.append(.dropped(packet, at: start)) }
            guard let packet else { return }
            transmitting = (packet, serializer.transmissionEnd(bytes: packet.chargedBytes, startingAt: start))
        }
    }
}

extension DirectionShape {
    /// The serialiser this direction asks for, the same for TCP streams and datagrams: its trace (opportunities
    /// as large as `accounting` counts a full packet), else its rate, else unlimited. At a rate, every packet takes
    /// its own serialisation time, as on a wire and under netem's `rate`; a `burst` makes it a token bucket whose
    /// idle credit lets that many bytes through at once, as tbf does.
    public func makeSerializer() -> any Serializer {
        if let trace { return TraceSerializer(trace: trace, opportunityBytes: accounting.traceOpportunityBytes) }
        guard let bandwidth else { return UnlimitedSerializer() }
        return ConstantRateSerializer(rate: bandwidth, burst: burst ?? ByteCount(bytes: 0))
    }
}
