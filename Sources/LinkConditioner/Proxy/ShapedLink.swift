/// One direction of a listener's link on the event loop: the TCP stream model plus the timer that drives it.
///
/// Lives on the event loop thread. Pumps attach to it for a `StreamFlow`; the link tells a pump when its receiver
/// released bytes and when send-buffer space it was waiting for has opened.
final class ShapedLink {
    let loop: EventLoop
    private(set) var model: StreamLink
    private let direction: KeyPath<Profile, DirectionProfile>
    private let reverse: KeyPath<Profile, DirectionProfile>
    private var pumps: [ObjectIdentifier: StreamPump] = [:]
    private var waitingForQueue: [ObjectIdentifier: StreamPump] = [:]
    private lazy var serviceAlarm = DeadlineAlarm(loop: loop) { [weak self] now in self?.service(at: now) }

    /// The one-way delay of the current profile, which connection set-up pays too.
    private(set) var currentDelay: Duration

    /// The link of `side` of `profile`: the uplink carries the connecting side's bytes, the downlink the other's.
    init(loop: EventLoop, side: StreamLink.Side, profile: Profile, seed: UInt64) {
        self.loop = loop
        direction = side == .connector ? \.uplink : \.downlink
        reverse = side == .connector ? \.downlink : \.uplink
        self.currentDelay = profile[keyPath: direction].delay
        self.model = StreamLink(side: side, profile: profile[keyPath: direction], reverse: profile[keyPath: reverse],
                                settings: profile.tcp, seed: seed)
    }

    /// The uplink and downlink of a listener built from `context`.
    static func pair(for context: ListenerContext) -> (uplink: ShapedLink, downlink: ShapedLink) {
        let (profile, seeds) = (context.profile, context.directionSeeds)
        return (ShapedLink(loop: context.loop, side: .connector, profile: profile, seed: seeds.uplink),
                ShapedLink(loop: context.loop, side: .acceptor, profile: profile, seed: seeds.downlink))
    }

    func attach(_ pump: StreamPump) -> StreamFlow {
        let flow = model.makeFlow(at: loop.clock.now(), emulatingHandshake: pump.relay.emulatesHandshake)
        pumps[ObjectIdentifier(flow)] = pump
        return flow
    }

    func detach(_ flow: StreamFlow) {
        pumps.removeValue(forKey: ObjectIdentifier(flow))
        waitingForQueue.removeValue(forKey: ObjectIdentifier(flow))
        model.remove(flow)
    }

    func canAccept(_ flow: StreamFlow) -> Bool { model.canAccept(flow) }

    /// Remembers that `pump` stopped reading because its flow's send buffer was full.
    func waitForQueueSpace(_ pump: StreamPump, flow: StreamFlow) {
        waitingForQueue[ObjectIdentifier(flow)] = pump
    }

    func enqueue(_ bytes: Int, on flow: StreamFlow, at now: Instant) {
        model.enqueue(bytes, on: flow, at: now)
        service(at: now)
    }

    /// Applies a new profile to this direction; data already queued keeps its order.
    func update(_ profile: Profile) {
        let now = loop.clock.now()
        model.update(profile: profile[keyPath: direction], reverse: profile[keyPath: reverse], settings: profile.tcp, now: now)
        currentDelay = profile[keyPath: direction].delay
        service(at: now)
    }

    /// Runs the serialiser up to `now`, tells pumps what changed, and re-arms the service timer.
    func service(at now: Instant) {
        let changed = model.advance(to: now)
        for flow in changed {
            pumps[ObjectIdentifier(flow)]?.deliveryScheduleChanged(at: now)
        }
        if !waitingForQueue.isEmpty {
            let ready = waitingForQueue.filter { model.canAccept($0.value.flow) }
            for (key, pump) in ready {
                waitingForQueue.removeValue(forKey: key)
                pump.queueSpaceOpened(at: now)
            }
        }
        serviceAlarm.arm(at: model.nextServiceTime)
    }

    var counters: LinkCounters { model.counters }

    func close() {
        serviceAlarm.cancel()
        pumps.removeAll()
        waitingForQueue.removeAll()
    }
}
