import DequeModule

/// One direction of one connection: holds what the pump read until its toxics (a Toxiproxy proxy's, then the
/// profile's faults) let it enter the link, in order.
///
/// Lives on the event loop thread. Each toxic of the chains acts on this connection with its toxicity's chance,
/// drawn once per connection and direction from the stage's seed. The bytes themselves stay in the pump (and
/// count against its buffer cap); the stage keeps only counts and instants.
final class ToxicStage: StreamStage {
    private struct Active {
        let id: StageEntryID
        let revision: UInt64
        /// Whether the toxicity draw let the toxic act on this connection.
        let acts: Bool
        let effect: ToxicEffect
    }

    let loop: EventLoop
    /// The direction this stage carries: `upstream` is client to server.
    let side: ToxicStream
    /// Who spoke last on this connection, shared by its two stages.
    let turn: ConversationTurn
    private let chains: [any StageChain]
    private let end: (StreamEnd) -> Void
    private var random: SeededRandom
    private var active: [Active] = []
    private var draws: [StageEntryID: Bool] = [:]
    private(set) weak var pump: StreamPump?
    private var waiting = Deque<StagePiece>()
    private var lastDue = Instant.zero
    private var nextSliceAt = Instant.zero
    private var releasing = false
    private var closed = false
    /// Made when a piece first waits, so a stage that never holds bytes allocates none (nor makes one to cancel).
    private var alarm: DeadlineAlarm?

    /// `end` ends the connection on a toxic's behalf (a timeout closes it, a reset_peer resets it, a cut may
    /// leave it hanging). `chains` act in order: the first one's toxics see the bytes first.
    init(
        chains: [any StageChain], loop: EventLoop, side: ToxicStream, turn: ConversationTurn, seed: UInt64,
        end: @escaping (StreamEnd) -> Void
    ) {
        self.loop = loop
        self.side = side
        self.turn = turn
        self.chains = chains
        self.end = end
        self.random = SeededRandom(seed: seed)
        turn.join(self)
        for chain in chains { chain.register(self) }
        chainChanged(at: loop.clock.now())
    }

    private var acting: [ToxicEffect] { active.lazy.filter(\.acts).map(\.effect) }

    /// Follows the chain: new toxics start acting (after their toxicity draw), removed ones stop, updated ones
    /// restart with their new attributes.
    func chainChanged(at now: Instant) {
        guard !closed else { return }
        var next: [Active] = []
        var started: [ToxicEffect] = []
        for entry in chains.flatMap(\.stageEntries) {
            if let current = active.first(where: { $0.id == entry.id && $0.revision == entry.revision }) {
                next.append(current)
                continue
            }
            let acts = draws[entry.id] ?? random.chance(entry.toxicity)
            draws[entry.id] = acts
            let effect = entry.makeEffect(SeededRandom(seed: random.next()))
            next.append(Active(id: entry.id, revision: entry.revision, acts: acts, effect: effect))
            if acts { started.append(effect) }
        }
        for old in active where !next.contains(where: { $0.effect === old.effect }) { old.effect.stop() }
        active = next
        for effect in started { effect.start(at: now, stage: self) }
        if !active.isEmpty { turn.wake(at: now) }
        release(at: now)
    }

    /// No toxic of the chains applies and no bytes wait here.
    var holdsNothing: Bool { active.isEmpty && waiting.isEmpty }

    var isIdle: Bool { turn.isQuiet }

    /// A stage made for a connection already carrying bytes (a fault set later) takes them off the splice path at
    /// once, as a change of its chain would.
    func attach(to pump: StreamPump) {
        self.pump = pump
        if !active.isEmpty { pump.leaveSplice(at: loop.clock.now()) }
    }

    func limit(_ count: Int, at now: Instant) -> (kept: Int, ended: StreamEnd?) {
        var kept = count
        var ended: StreamEnd?
        for effect in acting {
            let (passed, cut) = effect.limit(kept)
            kept = passed
            if cut && ended == nil { ended = effect.cutEnd }
        }
        return (kept, ended)
    }

    func admit(_ count: Int, from pump: StreamPump, at now: Instant) {
        self.pump = pump
        if waiting.isEmpty, active.allSatisfy({ !$0.acts }) {
            pump.forward(count, at: now)
            turn.speaker = side
            return
        }
        var pieces = [StagePiece(count: count, due: now)]
        for effect in acting { effect.shape(&pieces, at: now, stage: self) }
        turn.speaker = side
        for piece in pieces where piece.count > 0 {
            lastDue = max(piece.due, lastDue)
            waiting.append(StagePiece(count: piece.count, due: lastDue))
        }
        release(at: now)
    }

    func endOfStreamDelay(at now: Instant) -> Duration {
        acting.map(\.endOfStreamDelay).max() ?? .zero
    }

    /// Ends the connection on a toxic's behalf.
    func endConnection(_ how: StreamEnd) {
        guard !closed else { return }
        end(how)
    }

    /// Forwards every piece that is due, one slice at a time when a slicer acts, and waits for the next.
    private func release(at now: Instant) {
        guard !releasing, !closed, let pump else { return }
        let effects = Array(acting)
        if effects.contains(where: \.holdsData) {
            pump.stageHolds(!waiting.isEmpty, at: now)
            return
        }
        let slicer = effects.last(where: \.slices)
        releasing = true
        defer { releasing = false }
        while !closed, var head = waiting.first, head.due <= now {
            guard let slicer else {
                waiting.removeFirst()
                pump.forward(head.count, at: now)
                continue
            }
            guard nextSliceAt <= now, let (size, pause) = slicer.nextSlice(of: head.count) else { break }
            head.count -= size
            if head.count == 0 { waiting.removeFirst() } else { waiting[waiting.startIndex] = head }
            nextSliceAt = now + pause
            pump.forward(size, at: now)
        }
        if !closed, let head = waiting.first {
            let alarm =
                self.alarm ?? DeadlineAlarm(loop: loop, delivery: true) { [weak self] now in self?.release(at: now) }
            self.alarm = alarm
            alarm.arm(at: slicer == nil ? head.due : max(head.due, nextSliceAt))
        }
        if !closed { pump.stageHolds(!waiting.isEmpty, at: now) }
    }

    func close() {
        guard !closed else { return }
        closed = true
        alarm?.cancel()
        for entry in active { entry.effect.stop() }
        active.removeAll()
        waiting.removeAll()
        for chain in chains { chain.unregister(self) }
    }
}

/// Who sent data last on one connection, so a stage can tell a new turn (a response after a request) from more
/// of the same one. Lives on the event loop thread.
final class ConversationTurn {
    private struct Member { weak var stage: ToxicStage? }
    var speaker: ToxicStream?
    private var members: [Member] = []

    /// Room for a connection's two directions in one allocation; `speaker` sent last before the stages existed.
    init(speaker: ToxicStream? = nil) {
        self.speaker = speaker
        members.reserveCapacity(2)
    }

    func join(_ stage: ToxicStage) { members.append(Member(stage: stage)) }

    /// True while no stage of the connection has a toxic or holds bytes: both directions may bypass their stages
    /// (and splice), since neither needs to see bytes nor to learn who spoke.
    var isQuiet: Bool { members.allSatisfy { $0.stage?.holdsNothing ?? true } }

    /// A toxic arrived: pumps on the splice path return to copying so the stages see the bytes from now on.
    func wake(at now: Instant) {
        for member in members { member.stage?.pump?.leaveSplice(at: now) }
    }
}
