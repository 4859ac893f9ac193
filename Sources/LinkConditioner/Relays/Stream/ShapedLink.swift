/// One direction of a listener's link on the event loop: the TCP stream model plus the timer that drives it.
///
/// Lives on the event loop thread. Pumps attach to it, and get a `StreamFlow` once their bytes need the model (at
/// once while it shapes). A service pass runs the model, which calls no pump and returns the flows whose receivers
/// changed; after it, the link hands each of their pumps what fell due (`StreamPump.Due`), then the pumps whose
/// send-buffer space opened, and re-arms its timer for the model's next wake (`StreamLink.nextWakeTime`): the next
/// arrival, not every event before it, which the model catches up in order when it runs.
///
/// Servicing is never re-entered: a pump handed what fell due may read, enqueue and so ask for service again, or
/// close its connection (and another pump's). Such a request is run as another pass after the current one, and
/// each pass skips pumps that closed since the model named them.
final class ShapedLink {
    let loop: EventLoop
    private(set) var model: StreamLink
    private let direction: KeyPath<Profile, DirectionProfile>
    private let reverse: KeyPath<Profile, DirectionProfile>
    /// The pumps with a flow in the model, by flow.
    private var pumps: [ObjectIdentifier: StreamPump] = [:]
    /// The pumps without one (made while the link shaped nothing, and no byte of theirs needed the model), each at
    /// its `unmodelledIndex`, so adding and removing one costs no search and no hashing.
    private var unmodelled: [StreamPump] = []
    private var waitingForQueue: [ObjectIdentifier: StreamPump] = [:]
    /// The pumps whose queue space opened in the current pass, kept between passes for its capacity.
    private var reopened: [StreamPump] = []
    private lazy var serviceAlarm = DeadlineAlarm(loop: loop, delivery: true) { [weak self] now in
        self?.service(at: now)
    }
    /// Whether `service` runs its passes now.
    private enum Servicing {
        case idle
        /// Passes run; `requested` is the latest instant a request made during one asked service for, nil when
        /// none did.
        case passing(requested: Instant?)
    }
    private var servicing = Servicing.idle

    /// Passes one `service` call runs for requests made during its passes before it leaves the rest to the timer,
    /// so pumps that keep reading cannot hold the loop.
    private static let passesPerService = 8

    /// The one-way delay of the current profile, which connection set-up pays too.
    private(set) var currentDelay: Duration

    /// Where connections on this link are recorded (`run --record`), and the listener they are recorded under.
    var recorder: TrafficRecorder?
    var listenerName = ""

    /// The proxy-wide cap on bytes held by pumps, shared by every link of a proxy; nil leaves pumps uncapped.
    let budget: BufferBudget?

    /// The link of `side` of `profile`: the uplink carries the connecting side's bytes, the downlink the other's.
    init(loop: EventLoop, side: StreamLink.Side, profile: Profile, seed: UInt64, budget: BufferBudget? = nil) {
        self.loop = loop
        self.budget = budget
        direction = side == .connector ? \.uplink : \.downlink
        reverse = side == .connector ? \.downlink : \.uplink
        self.currentDelay = profile[keyPath: direction].delay
        self.model = StreamLink(
            side: side, profile: profile[keyPath: direction], reverse: profile[keyPath: reverse],
            settings: profile.tcp, seed: seed)
    }

    /// The uplink and downlink of a listener built from `context`.
    static func pair(for context: ListenerContext) -> (uplink: ShapedLink, downlink: ShapedLink) {
        let (profile, seeds) = (context.profile, context.directionSeeds)
        let pair = (
            ShapedLink(
                loop: context.loop, side: .connector, profile: profile, seed: seeds.uplink,
                budget: context.bufferBudget),
            ShapedLink(
                loop: context.loop, side: .acceptor, profile: profile, seed: seeds.downlink,
                budget: context.bufferBudget)
        )
        pair.0.recorder = context.recorder
        return pair
    }

    /// Takes `pump`, which has no flow yet, among this direction's pumps: a profile switch reaches it.
    func attach(_ pump: StreamPump) {
        pump.unmodelledIndex = unmodelled.count
        unmodelled.append(pump)
    }

    /// Gives `pump` a flow on this direction, opening when its side of `handshake` completed (see `makeFlow`).
    func makeFlow(for pump: StreamPump, emulatingHandshake: Bool, handshake: HandshakeAttempts?) -> StreamFlow {
        forgetUnmodelled(pump)
        let flow = model.makeFlow(at: loop.clock.now(), emulatingHandshake: emulatingHandshake, handshake: handshake)
        pumps[ObjectIdentifier(flow)] = pump
        return flow
    }

    /// Lets go of a closing pump, and of its flow if it has one.
    func detach(_ pump: StreamPump) {
        guard let flow = pump.flow else {
            forgetUnmodelled(pump)
            return
        }
        pumps.removeValue(forKey: ObjectIdentifier(flow))
        waitingForQueue.removeValue(forKey: ObjectIdentifier(flow))
        model.remove(flow)
    }

    /// Removes `pump` from `unmodelled`, moving the last one into its place.
    private func forgetUnmodelled(_ pump: StreamPump) {
        let index = pump.unmodelledIndex
        guard index >= 0 else { return }
        let last = unmodelled.removeLast()
        if last !== pump {
            unmodelled[index] = last
            last.unmodelledIndex = index
        }
        pump.unmodelledIndex = -1
    }

    func canAccept(_ flow: StreamFlow) -> Bool { model.canAccept(flow) }

    /// Lets `flow` send from `now` if its handshake still held it: the peer's first bytes acknowledged it. False
    /// when the server had given the handshake up, so the connection is to be reset.
    func open(_ flow: StreamFlow, at now: Instant) -> Bool {
        guard flow.opensAt > now else { return true }
        guard model.open(flow, at: now) else { return false }
        service(at: now)
        pumps[ObjectIdentifier(flow)]?.due(.flowOpened, at: now)
        return true
    }

    /// The earliest instant at which `flow` may release more bytes, or nil when none are on their way.
    func nextRelease(of flow: StreamFlow) -> Instant? { model.nextRelease(of: flow) }

    /// Whether the link shapes nothing either way, so pumps may move bytes without the model seeing them.
    var isPassThrough: Bool { model.isPassThrough }

    /// Counts bytes a pump moved past the model while the link was pass-through.
    func countBypassed(_ bytes: Int) { model.countSpliced(bytes) }

    /// Counts bytes a pump without a flow let through at once, as the pass-through model would have released them.
    func countReleasedAtOnce(_ bytes: Int) { model.countReleasedAtOnce(bytes) }

    /// Remembers that `pump` stopped reading because its flow's send buffer was full.
    func waitForQueueSpace(_ pump: StreamPump, flow: StreamFlow) {
        waitingForQueue[ObjectIdentifier(flow)] = pump
    }

    func enqueue(_ bytes: Int, on flow: StreamFlow, at now: Instant) {
        enqueue(bytes, on: flow, written: now, at: now)
    }

    /// Hands the model `bytes` written at `written` (when they reached the proxy's socket, which the model counts
    /// the link's delay from, so a late wake-up of the loop does not add to it) and services the link at `now`.
    func enqueue(_ bytes: Int, on flow: StreamFlow, written: Instant, at now: Instant) {
        model.enqueue(bytes, on: flow, at: written)
        service(at: now)
    }

    /// Applies a new profile to this direction; data already queued keeps its order.
    func update(_ profile: Profile) {
        let now = loop.clock.now()
        model.update(
            profile: profile[keyPath: direction], reverse: profile[keyPath: reverse], settings: profile.tcp, now: now)
        currentDelay = profile[keyPath: direction].delay
        if !model.isPassThrough {
            // Leaving the splice path enqueues what a pipe holds, which gives an unmodelled pump its flow.
            for pump in Array(pumps.values) + unmodelled { pump.due(.leaveSplice, at: now) }
        }
        service(at: now)
        if model.isPassThrough {
            for pump in Array(pumps.values) { pump.due(.flowOpened, at: now) }
        }
    }

    /// Runs the model up to `now`, hands pumps what fell due, and re-arms the service timer. Called while a pass
    /// hands pumps their work (from one of them), it only asks for one more pass.
    func service(at now: Instant) {
        if case .passing(let requested) = servicing {
            servicing = .passing(requested: max(requested ?? now, now))
            return
        }
        servicing = .passing(requested: nil)
        var passAt = now
        var passes = 0
        while true {
            runPass(at: passAt)
            passes += 1
            guard case .passing(let requested?) = servicing else { break }
            servicing = .passing(requested: nil)
            if passes == Self.passesPerService {
                serviceAlarm.arm(at: requested)
                break
            }
            passAt = requested
        }
        servicing = .idle
        serviceAlarm.arm(at: model.nextWakeTime)
    }

    /// One pass. The model runs to `now` and returns the flows whose receivers changed, calling no pump; their
    /// pumps are then handed a delivery, each looked up as it goes, so that a pump detached (closed) by an earlier
    /// one is skipped. The pumps whose queue space has opened by then come last.
    private func runPass(at now: Instant) {
        for flow in model.advance(to: now) {
            pumps[ObjectIdentifier(flow)]?.due(.delivery, at: now)
        }
        guard !waitingForQueue.isEmpty else { return }
        takeReopened()
        for pump in reopened { pump.due(.room, at: now) }
        reopened.removeAll(keepingCapacity: true)
    }

    /// Moves the pumps whose flows' send buffers have room again from `waitingForQueue` into `reopened`.
    private func takeReopened() {
        for (key, pump) in waitingForQueue where pump.flow.map(model.canAccept) ?? true {
            waitingForQueue.removeValue(forKey: key)
            reopened.append(pump)
        }
    }

    var counters: LinkCounters { model.counters }

    /// How late this direction's pumps handed released bytes to their sockets, after the model released them.
    var lateness = LatenessHistogram()

    func close() {
        serviceAlarm.cancel()
        pumps.removeAll()
        for pump in unmodelled { pump.unmodelledIndex = -1 }
        unmodelled.removeAll()
        waitingForQueue.removeAll()
    }
}
