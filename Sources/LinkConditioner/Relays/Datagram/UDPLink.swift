/// One direction of a datagram link on the event loop: the datagram link model (a bottleneck and the datagram
/// impairments), the timer that drives it, and the datagram pumps attached to it.
///
/// Lives on the event loop thread. The datagram counterpart of `ShapedLink`: there is no back-pressure, a full
/// queue drops.
final class UDPLink {
    let loop: EventLoop
    private(set) var model: DatagramLink
    private var pumps: [ObjectIdentifier: DatagramPump] = [:]
    private lazy var serviceAlarm = DeadlineAlarm(loop: loop, delivery: true) { [weak self] now in
        self?.service(at: now)
    }
    /// Where the pumps' sends are staged during a service pass, so the datagrams it releases go out together; nil
    /// when the pumps send one by one.
    var outbox: DatagramOutbox?
    /// Whether datagrams entered the model at their arrivals since the serialiser last ran to the present.
    private var awaitsService = false

    /// A link that carries datagrams of `kind`: UDP payloads, or whole IP packets for `exec`.
    init(loop: EventLoop, profile: DirectionProfile, seed: UInt64, kind: DatagramKind = .udpPayload) {
        self.loop = loop
        self.model = DatagramLink(profile: profile, seed: seed, kind: kind)
    }

    /// The uplink and downlink of a listener built from `context`, carrying datagrams of `kind`.
    static func pair(
        for context: ListenerContext, kind: DatagramKind = .udpPayload
    ) -> (uplink: UDPLink, downlink: UDPLink) {
        let (profile, seeds) = (context.profile, context.directionSeeds)
        return (
            UDPLink(loop: context.loop, profile: profile.uplink, seed: seeds.uplink, kind: kind),
            UDPLink(loop: context.loop, profile: profile.downlink, seed: seeds.downlink, kind: kind)
        )
    }

    func attach(_ pump: DatagramPump) -> DatagramFlow {
        let flow = model.makeFlow()
        pumps[ObjectIdentifier(flow)] = pump
        return flow
    }

    func detach(_ flow: DatagramFlow) {
        pumps.removeValue(forKey: ObjectIdentifier(flow))
        model.remove(flow)
    }

    /// Offers one datagram that reached its socket at `arrival` (nil: unknown, taken as `now`) to the model;
    /// returns whether it took it (queued, or lost on its way in: an outcome follows either way). Without an earlier
    /// arrival the serialiser runs to `now` at once. A datagram that waited in the kernel runs the link only to its
    /// arrival, and the reader runs it to `now` after the batch (`serviceAfterBatch`): the link never goes back in
    /// time, so running it to `now` after each datagram would make the rest of the batch, which waited as long,
    /// count from `now`.
    func enqueue(_ size: Int, on flow: DatagramFlow, arrival: Instant?, at now: Instant) -> DatagramAdmission {
        guard let arrival, arrival < now else {
            let admission = model.enqueue(size, on: flow, at: now)
            service(at: now)
            return admission
        }
        let admission = model.enqueue(size, on: flow, at: arrival)
        awaitsService = true
        return admission
    }

    /// Runs the serialiser to `now` after a batch of reads, if any of its datagrams entered at their arrivals.
    func serviceAfterBatch(at now: Instant) {
        if awaitsService { service(at: now) }
    }

    func update(profile: DirectionProfile) {
        let now = loop.clock.now()
        model.update(profile: profile, now: now)
        service(at: now)
    }

    /// Runs the serialiser up to `now`, tells pumps whose outcomes changed, and re-arms the service timer.
    func service(at now: Instant) {
        awaitsService = false
        outbox?.hold()
        defer { outbox?.release() }
        for flow in model.advance(to: now) {
            pumps[ObjectIdentifier(flow)]?.deliverDue(at: now)
        }
        serviceAlarm.arm(at: model.nextServiceTime)
    }

    var counters: LinkCounters { model.counters }

    /// Turns the kernel's arrival stamps on `socket`, whose datagrams enter this link, on while the link may delay
    /// them, and off while it passes them through (where a stamp would cost a control message per datagram and
    /// change nothing). Without stamps a datagram counts from when the loop read it.
    func stampsArrivals(on socket: Socket) {
        try? socket.stampArrivals(!model.isPassThrough)
    }

    func close() {
        serviceAlarm.cancel()
        pumps.removeAll()
    }
}

/// One direction of one datagram flow: keeps each datagram's bytes while the link model decides its fate, and
/// sends it (once, twice, or not at all) when the model releases it.
///
/// Lives on the event loop thread. `send` writes one datagram to `destination` (nil: the socket's connected
/// peer) and returns false when the socket could not take it; such a datagram is dropped, as a full NIC drops.
final class DatagramPump {
    typealias Send = (_ bytes: [UInt8], _ destination: SocketAddress?) -> Bool

    private struct HeldDatagram {
        var bytes: [UInt8]
        var destination: SocketAddress?
    }

    let link: UDPLink
    private(set) var flow: DatagramFlow!
    private let send: Send
    private var held: [UInt64: HeldDatagram] = [:]
    private lazy var deliveryAlarm = DeadlineAlarm(loop: link.loop, delivery: true) { [weak self] now in
        self?.deliverDue(at: now)
    }
    /// Datagrams the destination socket refused (its send buffer was full, or the peer was unreachable).
    private(set) var sendFailures = 0
    /// Called for each datagram the link dropped (loss, or the queue discipline), for the recording.
    var lost: (() -> Void)?

    init(link: UDPLink, send: @escaping Send) {
        self.link = link
        self.send = send
        self.flow = link.attach(self)
    }

    /// Hands one datagram to the link at `now`, counted from when it reached its socket (`arrival`, if the socket
    /// stamped it); false when the link's queue dropped it at the tail.
    @discardableResult
    func offer(_ bytes: [UInt8], to destination: SocketAddress? = nil, arrival: Instant? = nil, at now: Instant) -> Bool
    {
        // Hold the bytes first: an unimpaired link releases the datagram inside `enqueue`.
        let index = flow.nextDatagramIndex
        held[index] = HeldDatagram(bytes: bytes, destination: destination)
        guard case .accepted = link.enqueue(bytes.count, on: flow, arrival: arrival, at: now) else {
            held.removeValue(forKey: index)
            return false
        }
        return true
    }

    /// Whether the link takes a datagram of `size` bytes and releases it at once, unchanged: then the
    /// caller sends it itself, from wherever its bytes are, instead of handing `offer` a copy to hold.
    func deliversAtOnce(_ size: Int) -> Bool {
        link.model.deliversAtOnce(size, on: flow)
    }

    /// Sends every datagram the model has released by `now`, frees lost ones, and waits for the next.
    func deliverDue(at now: Instant) {
        link.outbox?.hold()
        defer { link.outbox?.release() }
        for outcome in flow.takeDeliverableDatagrams(at: now) {
            guard var datagram = held.removeValue(forKey: outcome.index) else { continue }
            if outcome.copies == 0 { lost?() }
            if let bit = outcome.flippedBit, bit / 8 < datagram.bytes.count {
                datagram.bytes[bit / 8] ^= 0x80 >> UInt8(bit % 8)
            }
            for _ in 0..<outcome.copies where !send(datagram.bytes, datagram.destination) {
                sendFailures += 1
            }
        }
        deliveryAlarm.arm(at: flow.nextDeliveryTime)
    }

    func close() {
        deliveryAlarm.cancel()
        link.detach(flow)
        held.removeAll()
    }
}
