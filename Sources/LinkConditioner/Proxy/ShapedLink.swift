/// One direction of a listener's link on the event loop: the link model plus the timer that drives its serialiser.
///
/// Lives on the event loop thread. Pumps attach to it for a `LinkFlow`; the link tells a pump when its delivery
/// schedule changed and when queue space it was waiting for has opened.
final class ShapedLink {
    let loop: EventLoop
    private(set) var model: LinkDirection
    private var pumps: [ObjectIdentifier: StreamPump] = [:]
    private var waitingForQueue: [ObjectIdentifier: StreamPump] = [:]
    private lazy var serviceAlarm = DeadlineAlarm(loop: loop) { [weak self] now in self?.service(at: now) }

    /// The one-way delay of the current profile, which connection set-up pays too.
    private(set) var currentDelay: Duration

    init(loop: EventLoop, profile: DirectionProfile, roundTrip: Duration, seed: UInt64) {
        self.loop = loop
        self.currentDelay = profile.delay
        self.model = LinkDirection(profile: profile, roundTrip: roundTrip, seed: seed)
    }

    /// The uplink and downlink of a listener built from `context`.
    static func pair(for context: ListenerContext) -> (uplink: ShapedLink, downlink: ShapedLink) {
        let (profile, seeds) = (context.profile, context.directionSeeds)
        return (ShapedLink(loop: context.loop, profile: profile.uplink, roundTrip: profile.roundTrip, seed: seeds.uplink),
                ShapedLink(loop: context.loop, profile: profile.downlink, roundTrip: profile.roundTrip, seed: seeds.downlink))
    }

    func attach(_ pump: StreamPump) -> LinkFlow {
        let flow = model.makeFlow()
        pumps[ObjectIdentifier(flow)] = pump
        return flow
    }

    func detach(_ flow: LinkFlow) {
        pumps.removeValue(forKey: ObjectIdentifier(flow))
        waitingForQueue.removeValue(forKey: ObjectIdentifier(flow))
        model.remove(flow)
    }

    func canAccept(_ flow: LinkFlow) -> Bool { model.canAccept(flow) }

    /// Remembers that `pump` stopped reading because the link's queue was full.
    func waitForQueueSpace(_ pump: StreamPump, flow: LinkFlow) {
        waitingForQueue[ObjectIdentifier(flow)] = pump
    }

    func enqueue(_ bytes: Int, on flow: LinkFlow, at now: Instant) {
        model.enqueue(bytes, on: flow, at: now)
        service(at: now)
    }

    /// Applies a new profile to this direction; data already queued keeps its order.
    func update(profile: DirectionProfile, roundTrip: Duration) {
        model.update(profile: profile, roundTrip: roundTrip)
        currentDelay = profile.delay
        service(at: loop.clock.now())
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
