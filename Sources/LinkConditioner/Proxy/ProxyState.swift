import Logging

/// The proxy's loop-owned state: listeners, conditions, scenario, rate sampling. Lives on the main event loop
/// thread; a listener another loop owns is in `listeners` as a `LoopOwnedListener`, through which each call reaches
/// that loop.
final class ProxyState {
    let loop: EventLoop
    let logger: Logger
    /// Every listener; add one with `add`, which refuses one that would reach linkcond itself.
    var listeners: [ConditionedListener] = [] {
        didSet { ownListeners.changed() }
    }
    private(set) var conditions: LiveConditions
    private(set) var scenario: ScenarioRunner?
    private var rateMeter: RateMeter?
    /// Closures run at close, for services attached to the loop (the control endpoint).
    var onClose: [() -> Void] = []
    /// The cap on bytes held across every TCP connection.
    let bufferBudget: BufferBudget
    /// What listeners added while running (Toxiproxy proxies) are built from.
    var listenerContext: ListenerContext?
    /// The Toxiproxy API, when served.
    var toxiproxy: ToxiproxyServer? {
        didSet { ownListeners.changed() }
    }
    /// The control endpoint, when served.
    var control: ControlServer? {
        didSet { ownListeners.changed() }
    }
    /// Every address the proxy listens on (listeners, the control endpoint, the Toxiproxy API), which no relay,
    /// proxy or front end may reach.
    let ownListeners = OwnListeners()
    /// Descriptors kept for when the process runs out: one lets data listeners turn clients away instead of
    /// leaving them queued, the others let the control endpoint and the Toxiproxy API answer.
    let descriptorReserve = DescriptorReserve(capacity: 1 + ProxyState.reservedForAPIs)
    /// Connections the control endpoint and the Toxiproxy API can serve at once when descriptors are exhausted.
    static let reservedForAPIs = 8
    /// The token of the control endpoint, when it asks one; a client of the Toxiproxy API that sends it is served
    /// whatever its user.
    var controlToken: String?
    /// The SCHED_FIFO priority the loop thread entered at start (`ProxyOptions.realtimePriority`); nil in the
    /// normal class.
    var realtimePriority: Int32?
    /// The event log of `run --record`; nil when not recording.
    var recorder: EventLog?
    /// The splice loops pass-through TCP connections are handed to; nil with `threads` 1.
    var spliceLoops: SpliceLoops?
    /// The conditions the listeners were last given.
    private var applied: Profile

    init(loop: EventLoop, profile: Profile, logger: Logger, bufferBudget: BufferBudget) {
        self.loop = loop
        self.logger = logger
        self.bufferBudget = bufferBudget
        self.conditions = LiveConditions(profile: profile)
        applied = profile
        ownListeners.listAll = { [unowned self] in
            self.listeners.map(\.addresses)
                + [
                    self.control.map { Self.apiAddresses("control endpoint", $0.address) },
                    self.toxiproxy.map { Self.apiAddresses("Toxiproxy API", $0.address) },
                ].compactMap { $0 }
        }
    }

    /// The addresses of the control endpoint or the Toxiproxy API listening at `address` (none on a Unix socket).
    static func apiAddresses(_ name: String, _ address: SocketAddress) -> ListenerAddresses {
        ListenerAddresses(
            name: name, role: .api,
            listening: address.isInternet ? [TransportAddress(transport: .tcp, address: address)] : [])
    }

    /// Adds `listener`, or closes it and throws when it would reach linkcond itself (see `OwnListeners.refusal`).
    func add(_ listener: ConditionedListener) throws(OwnListenerRefusal) {
        if let refusal = ownListeners.refusal(adding: listener.addresses) {
            listener.close()
            throw refusal
        }
        listeners.append(listener)
    }

    func setProfile(_ profile: Profile) {
        conditions.profile = profile
        pushConditions()
    }

    func applySettings(_ settings: [Scenario.Setting]) throws(ProfileError) {
        var profile = conditions.profile
        for setting in settings { try profile.set(setting.key, to: setting.value) }
        setProfile(profile)
    }

    func setOffline(_ mode: OfflineMode?) {
        conditions.offline = mode
        pushConditions()
        if mode == nil { for listener in listeners { listener.cameOnline() } }
    }

    /// Resets every live connection, once every connection is back from the splice loops.
    func resetConnections() {
        spliceLoops?.recallAll()
        for listener in listeners { listener.resetConnections() }
    }

    /// Applies the conditions to every listener, once every connection is back from the splice loops: the new
    /// conditions see their bytes from here on, and those still pass-through go back on their next event. A change
    /// that leaves open streams as they were (a new name, DNS delay, or settings for new connections) leaves the
    /// splice loops' connections where they are.
    private func pushConditions() {
        let effective = conditions.effective
        if !effective.treatsOpenStreamsAs(applied) { spliceLoops?.recallAll() }
        applied = effective
        recorder?.conditionsChanged(conditions, at: loop.clock.now())
        for listener in listeners { listener.apply(effective) }
    }

    func startScenario(_ scenario: Scenario) {
        stopScenario()
        logger.info("scenario \(scenario.name.isEmpty ? "(inline)" : scenario.name): \(scenario.steps.count) steps")
        self.scenario = ScenarioRunner(scenario: scenario, loop: loop) { [unowned self] action, fraction in
            self.perform(action, rampFraction: fraction)
        }
    }

    func stopScenario() {
        scenario?.stop()
        scenario = nil
    }

    private func perform(_ action: Scenario.Action, rampFraction: Double?) {
        if rampFraction == nil || rampFraction == 0 {
            recorder?.scenarioStep(action.recordedText, line: scenario?.currentStep?.line, at: loop.clock.now())
        }
        switch action {
        case .profile(let profile):
            conditions.offline = nil
            setProfile(profile)
        case .settings(let settings):
            do {
                try applySettings(settings)
            } catch {
                logger.error("scenario step failed: \(error)")
            }
        case .offline(let mode):
            setOffline(mode)
        case .online:
            setOffline(nil)
        case .ramp(let ramp):
            setProfile(ramp.applied(to: conditions.profile, fraction: rampFraction ?? 0))
        }
    }

    func startRateMeter() {
        rateMeter = RateMeter(loop: loop, otherLoops: spliceLoops?.loops.map(\.loop) ?? []) { [unowned self] in
            self.listeners.map { listener in
                let status = listener.status()
                return (ObjectIdentifier(listener), status.uplink.bytesDelivered, status.downlink.bytesDelivered)
            }
        } isHolding: { [unowned self] in
            // Bytes a splice loop moves raise no event on this loop, so the meter stays awake while it carries any,
            // and while another loop's links hold bytes its timers alone may deliver.
            self.bufferBudget.held > 0 || (self.spliceLoops?.connections ?? 0) > 0
                || (self.spliceLoops?.loops.contains { $0.bufferedBytes().now > 0 } ?? false)
        } describe: { [unowned self] uplink, downlink in
            self.historyPoint(uplinkBitsPerSecond: uplink, downlinkBitsPerSecond: downlink)
        }
    }

    /// A second of the rate history: the rates given, the worst listener's queue delay (nil, stalled, wins) and the
    /// profile's rate now.
    private func historyPoint(uplinkBitsPerSecond: Double, downlinkBitsPerSecond: Double) -> RateHistory.Point {
        let effective = conditions.effective
        var point = RateHistory.Point(
            uplinkBitsPerSecond: uplinkBitsPerSecond, downlinkBitsPerSecond: downlinkBitsPerSecond,
            uplinkCapacityBitsPerSecond: effective.uplink.bandwidth?.bitsPerSecond,
            downlinkCapacityBitsPerSecond: effective.downlink.bandwidth?.bitsPerSecond)
        func worst(_ current: Double?, _ queued: Int, _ bandwidth: BitRate?) -> Double? {
            guard let current, let delay = StatusReport.Direction.queueDelay(queuedBytes: queued, bandwidth: bandwidth)
            else { return nil }
            return max(current, delay)
        }
        for listener in listeners {
            let status = listener.status()
            point.uplinkQueueDelaySeconds = worst(
                point.uplinkQueueDelaySeconds, status.uplink.queuedBytes, effective.uplink.bandwidth)
            point.downlinkQueueDelaySeconds = worst(
                point.downlinkQueueDelaySeconds, status.downlink.queuedBytes, effective.downlink.bandwidth)
        }
        return point
    }

    /// The rate history's points up to now, oldest first; empty before the meter started.
    func historyPoints() -> [(at: Instant, point: RateHistory.Point)] {
        rateMeter?.historyPoints() ?? []
    }

    func report() -> StatusReport {
        let rates = rateMeter?.rates ?? [:]
        return StatusReport(
            profile: conditions.profile.name,
            profileSummary: conditions.profile.summary,
            offline: conditions.offline?.rawValue,
            scenario: scenario.map { runner in
                let position = runner.position(at: loop.clock.now())
                return StatusReport.ScenarioState(
                    name: runner.scenario.name, step: runner.currentStep?.line,
                    stepAppliedSeconds: runner.currentStepAppliedAt?.seconds,
                    elapsedSeconds: runner.elapsed.seconds, repetitions: runner.repetitions,
                    finished: runner.finished, currentStep: position.current?.text, nextStep: position.next?.text,
                    secondsToNextStep: position.untilNext?.seconds,
                    nextStepStartsOver: position.next.map { _ in position.nextStartsOver })
            },
            listeners: listeners.map { listener in
                let status = listener.status()
                let rate = rates[ObjectIdentifier(listener)] ?? (0, 0)
                return StatusReport.Listener(
                    status, uplinkBitsPerSecond: rate.0, downlinkBitsPerSecond: rate.1,
                    conditions: conditions.effective)
            },
            splicePipesKept: listenerContext?.readBuffer.pipes.count ?? 0,
            spliceLoops: spliceLoops?.threads ?? 0,
            spliceHandOvers: spliceLoops?.handOvers ?? 0,
            mainLoopRealtimePriority: realtimePriority.map(Int.init),
            handshake: StatusReport.Handshake(conditions.effective))
    }

    func close() {
        stopScenario()
        rateMeter?.stop()
        rateMeter = nil
        for service in onClose { service() }
        onClose.removeAll()
        spliceLoops?.recallAll()
        for listener in listeners { listener.close() }
        listeners.removeAll()
        spliceLoops?.stop()
        spliceLoops = nil
        recorder?.close()
        recorder = nil
        listenerContext?.readBuffer.pipes.release()
        descriptorReserve.close()
    }
}
