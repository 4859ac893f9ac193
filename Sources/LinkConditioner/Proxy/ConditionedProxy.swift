import Foundation
import Logging

/// A conditioned proxy running on its own event loop thread: the in-process API for the CLI and test suites.
///
/// Every method is safe from any thread except the loop's own; each waits for the loop to carry it out, so when
/// `apply` returns, new data already sees the new profile. `stop` returns once every socket is closed and the
/// loop thread has ended.
///
/// With `ProxyOptions.threads` above one, the proxy runs that many event loops: the main loop and `threads - 1`
/// others (`SpliceLoop`). The `tcp` listeners are given to the loops round-robin, the main loop first; each is owned
/// with its link and connections by its loop, which shapes and splices them (`LoopOwnedListener`). Every other
/// listener, the Toxiproxy proxies, the control endpoint, scenarios and the rate meter stay on the main loop, which
/// reaches the others' listeners by posting to their loop and waiting. The main loop also hands its own listeners'
/// pass-through TCP connections to the other loops (`SpliceLoops`), and takes them back before any change of
/// conditions is applied.
public final class ConditionedProxy: Sendable {
    /// The proxy's event loop (tests keep it busy to show what a late wake-up costs).
    let loop: EventLoop
    private let state: LoopBound<ProxyState>
    private let stopped = OnceFlag()
    public let listeners: [BoundListener]

    /// Binds every listener and starts relaying under `profile`. Upstream host names are resolved here, before
    /// the loop starts. Nothing is left open when it throws.
    public init(
        listeners specs: [ListenerSpec], profile: Profile, options: ProxyOptions = ProxyOptions(),
        logger: Logger = Logger(label: "linkcond")
    ) throws {
        guard options.threads >= 1 else {
            throw ProxyOptionError("threads must be at least 1 (the main loop), not \(options.threads)")
        }
        if let priority = options.realtimePriority, !(1...99).contains(priority) {
            throw ProxyOptionError("realtimePriority must be a SCHED_FIFO priority from 1 to 99, not \(priority)")
        }
        var resolved: [(ListenerSpec, SocketAddress, [SocketAddress])] = []
        for spec in specs {
            let listen = try spec.listen.resolve().first ?? SocketAddress(numericHost: "127.0.0.1", port: 0)!
            var upstream: [SocketAddress] = []
            switch spec.kind {
            case .tcp(let endpoint), .udp(let endpoint): upstream = try endpoint.resolve()
            case .dns(let endpoint?): upstream = try endpoint.resolve()
            case .dns(nil), .proxy, .exec: break
            }
            resolved.append((spec, listen, upstream))
        }
        let bufferShare = Self.bufferShare(of: options, listeners: specs)
        let loop = try EventLoop()
        self.loop = loop
        let state = LoopBound(
            ProxyState(
                loop: loop, profile: profile, logger: logger,
                bufferBudget: BufferBudget(limit: bufferShare, loop: loop)))
        self.state = state
        loop.start()
        let pending = LoopBound((resolved, profile, options, logger))
        do {
            self.listeners = try loop.submitAndWait {
                let (resolved, profile, options, logger) = pending.value
                var context = ListenerContext(
                    loop: loop, profile: profile, options: options,
                    readBuffer: ReadBuffer(), logger: logger, bufferBudget: state.value.bufferBudget,
                    ownListeners: state.value.ownListeners, descriptorReserve: state.value.descriptorReserve)
                // Asked before anything is made, so a refusal leaves no file (a recording's) replaced.
                if let priority = options.realtimePriority {
                    do throws(SystemError) { try RealtimeScheduling.enterFIFO(priority: priority) } catch {
                        throw RealtimeSchedulingRefused(priority: priority, cause: error)
                    }
                    state.value.realtimePriority = priority
                }
                if let recording = options.recording {
                    let log = try EventLog(recording, loop: loop, logger: logger)
                    state.value.recorder = log
                    context.recorder = log
                    log.conditionsChanged(state.value.conditions, at: loop.clock.now())
                }
                do {
                    // A recording hears of every read and write on the main loop, so nothing is handed over: no splice loop.
                    if options.threads > 1 && options.recording == nil {
                        let spliceLoops = try SpliceLoops(
                            count: options.threads - 1, mainLoop: loop, bufferShare: bufferShare, logger: logger)
                        state.value.spliceLoops = spliceLoops
                        context.spliceLoops = spliceLoops
                    }
                    state.value.listenerContext = context
                    let otherLoops = state.value.spliceLoops?.loops ?? []
                    var tcpListeners = 0
                    for (spec, address, upstream) in resolved {
                        // TCP listeners go round-robin over every loop, the main loop first; the rest stay on it.
                        var owner = 0
                        if case .tcp = spec.kind {
                            owner = tcpListeners % (otherLoops.count + 1)
                            tcpListeners += 1
                        }
                        let listener: ConditionedListener =
                            owner == 0
                            ? try makeListener(spec, address: address, upstream: upstream, context: context)
                            : try otherLoops[owner - 1].makeListener(
                                spec, address: address, upstream: upstream, loopIndex: owner, template: context)
                        try state.value.add(listener)
                    }
                    // Only a proxy that started replaces an earlier recording of that name.
                    try state.value.recorder?.begin()
                } catch {
                    state.value.recorder?.abandon()
                    state.value.close()
                    throw error
                }
                state.value.startRateMeter()
                return state.value.listeners.map(\.bound)
            }
        } catch {
            loop.stopAndWait()
            throw error
        }
    }

    /// The bytes each loop that owns TCP listeners may hold: `maximumBuffered` split evenly over them, so the
    /// proxy-wide cap holds with no lock between loops. With one thread, one TCP listener or a recording, the main
    /// loop owns them all and has the whole budget; other listeners and Toxiproxy proxies take the main loop's share.
    static func bufferShare(of options: ProxyOptions, listeners: [ListenerSpec]) -> Int {
        let tcpListeners = listeners.filter { if case .tcp = $0.kind { true } else { false } }.count
        let owningLoops = options.recording == nil ? min(max(options.threads, 1), max(tcpListeners, 1)) : 1
        return options.maximumBuffered / owningLoops
    }

    /// Runs `body` with the loop-owned state on the loop thread and returns its result, or `fallback` once the
    /// proxy has stopped.
    func onLoop<T: Sendable>(or fallback: T, _ body: @escaping @Sendable (ProxyState) -> T) -> T {
        let state = self.state
        return (try? loop.submitAndWait { body(state.value) }) ?? fallback
    }

    func onLoop(_ body: @escaping @Sendable (ProxyState) -> Void) {
        onLoop(or: ()) { body($0) }
    }

    /// The profile the user chose (offline lays over it without changing it).
    public var profile: Profile { conditions.profile }

    /// The profile plus the offline switch.
    public var conditions: LiveConditions {
        onLoop(or: LiveConditions(profile: .none)) { $0.conditions }
    }

    /// Switches every listener to `profile` at once (and stops a running scenario); data in flight is neither lost
    /// nor reordered. An offline proxy stays offline.
    public func apply(_ profile: Profile) {
        onLoop { state in
            state.stopScenario()
            state.setProfile(profile)
        }
    }

    /// Changes settings of the current profile, all or none: each is a `key = value` of the profile format.
    public func set(_ settings: [(key: String, value: String)]) throws(ProfileError) {
        let pairs = settings.map { Scenario.Setting(key: $0.key, value: $0.value) }
        let outcome: Result<Void, ProfileError> = onLoop(or: .success(())) { state in
            Result { () throws(ProfileError) in try state.applySettings(pairs) }
        }
        try outcome.get()
    }

    /// Airplane mode: new connections are refused (or blackholed), existing ones stall, queued data waits.
    public func goOffline(_ mode: OfflineMode = .refuse) {
        onLoop { $0.setOffline(mode) }
    }

    /// Ends airplane mode: the profile applies again and stalled connections resume where they were.
    public func goOnline() {
        onLoop { $0.setOffline(nil) }
    }

    /// Starts `scenario`, replacing any running one.
    public func startScenario(_ scenario: Scenario) {
        onLoop { $0.startScenario(scenario) }
    }

    /// Stops the running scenario, leaving the conditions where it left them.
    public func stopScenario() {
        onLoop { $0.stopScenario() }
    }

    /// Resets every live connection, as when a suspended app's sockets are reclaimed.
    public func resetConnections() {
        onLoop { $0.resetConnections() }
    }

    /// Bytes the TCP connections hold now, and the most they ever held at once (never above `maximumBuffered`): with
    /// several loops, the sums over them, so the peak is the most they could have held at once.
    public func bufferedBytes() -> (now: Int, peak: Int) {
        onLoop(or: (0, 0)) { state in
            (state.spliceLoops?.loops ?? []).map { $0.bufferedBytes() }.reduce(
                (state.bufferBudget.held, state.bufferBudget.peak)
            ) { ($0.0 + $1.now, $0.1 + $1.peak) }
        }
    }

    /// Counters of every listener, read on the loop thread.
    public func status() -> [ListenerStatus] {
        onLoop(or: []) { $0.listeners.map { $0.status() } }
    }

    /// Everything a status display shows: conditions, scenario, listeners with counters and current rates.
    public func report() -> StatusReport {
        onLoop(or: StatusReport(profile: "", profileSummary: "", offline: nil, scenario: nil, listeners: [])) {
            $0.report()
        }
    }

    /// Stops accepting, closes every connection and listening socket, and ends the loop thread.
    public func stop() {
        let state = self.state
        guard !stopped.exchange() else { return }
        loop.execute { state.value.close() }
        loop.stopAndWait()
    }

    /// Serves the control endpoint at `address` (port 0 picks one); with a non-loopback address a `token` is
    /// required. Returns where it listens: `http://HOST:PORT` or the socket path.
    public func serveControl(at address: ControlAddress, token: String? = nil) throws -> String {
        if !address.isLocalOnly && (token ?? "").isEmpty {
            throw ControlSetupError("a control endpoint reachable from other hosts needs --control-token")
        }
        var socketAddress: SocketAddress
        var unixPath: String?
        switch address {
        case .tcp(let endpoint):
            socketAddress = try endpoint.resolve()[0]
        case .unix(let path):
            guard let local = SocketAddress(unixPath: path) else {
                throw ControlSetupError("socket path too long: \(path)")
            }
            socketAddress = local
            unixPath = path
        }
        let chosen = (socketAddress, unixPath)
        return try attach { state in
            let server = try ControlServer(address: chosen.0, unixPath: chosen.1, token: token, state: state)
            if let refusal = state.ownListeners.refusal(
                adding: ProxyState.apiAddresses("control endpoint", server.address))
            {
                server.close()
                throw refusal
            }
            state.onClose.append { server.close() }
            state.control = server
            if let token { state.controlToken = token }
            return server.displayAddress
        }
    }

    /// Serves the Toxiproxy-compatible API at `address` (port 0 picks one). On loopback no token is asked, as
    /// Toxiproxy's clients send none; beyond loopback a `token` is required. Its proxies may listen beyond loopback
    /// only with `remoteListeners` (`--allow-remote`) or when the API itself is served beyond loopback, which took
    /// the same choice. On loopback, `clients` says whose programs are served without the control token.
    /// `requiresTokenBeyondLoopback: false` serves it beyond loopback without one, as Toxiproxy does
    /// (`--toxiproxy-without-token`, for a container whose network is the boundary). Returns `http://HOST:PORT`.
    public func serveToxiproxy(
        at endpoint: Endpoint, token: String? = nil, remoteListeners: Bool = false,
        clients: ToxiproxyClients = .ownerOnly, requiresTokenBeyondLoopback: Bool = true
    ) throws -> String {
        let address = try endpoint.resolve()[0]
        if !address.isLoopback && requiresTokenBeyondLoopback && (token ?? "").isEmpty {
            throw ControlSetupError(
                "a Toxiproxy API reachable from other hosts needs --allow-remote and --control-token")
        }
        return try attach { state in
            let server = try ToxiproxyServer(
                address: address, token: address.isLoopback ? nil : token,
                remoteListeners: remoteListeners || !address.isLoopback, clients: clients, state: state)
            if let refusal = state.ownListeners.refusal(
                adding: ProxyState.apiAddresses("Toxiproxy API", server.address))
            {
                server.close()
                throw refusal
            }
            state.onClose.insert({ server.close() }, at: 0)
            state.toxiproxy = server
            return server.displayAddress
        }
    }

    /// Creates the proxies of a Toxiproxy config file's JSON (the body of `POST /populate`) on the served API, and
    /// waits for them. Returns nil when every proxy listens, or the message of the API's `{"error"}` answer.
    public func populateToxiproxy(_ json: [UInt8]) -> String? {
        let state = self.state
        let answer = LockedAnswer()
        let submitted = loop.execute {
            guard let server = state.value.toxiproxy else { return answer.set("the Toxiproxy API is not served") }
            server.populate(json) { response in
                guard response.status != 201 else { return answer.set(nil) }
                if case .success(let body) = JSONValue.parse(Array(response.body.utf8)),
                    case .string(let message)? = body["error"]
                {
                    return answer.set(message)
                }
                answer.set(response.body.trimmingCharacters(in: .whitespacesAndNewlines))
            }
        }
        guard submitted else { return "linkcond is stopping" }
        return answer.wait(timeout: .seconds(60)) ?? "no answer from the Toxiproxy API within 60 s"
    }

    /// Runs `body` on the loop with the proxy's state: the way loop-side services (the control endpoint) attach.
    func attach<T: Sendable>(_ body: @escaping @Sendable (ProxyState) throws -> T) throws -> T {
        let state = self.state
        return try loop.submitAndWait { try body(state.value) }
    }
}

/// A value that belongs to the event loop thread, carried across threads only to be used there.
final class LoopBound<Value>: @unchecked Sendable {
    var value: Value

    init(_ value: Value) { self.value = value }
}

/// One answer handed from the loop thread to a waiting caller.
final class LockedAnswer: @unchecked Sendable {
    private let lock = NSCondition()
    private var answered = false
    private var value: String?

    func set(_ value: String?) {
        lock.lock()
        self.value = value
        answered = true
        lock.broadcast()
        lock.unlock()
    }

    /// The answer (itself nil for success), or nil when none came within `timeout`.
    func wait(timeout: Duration) -> String?? {
        lock.lock()
        defer { lock.unlock() }
        let deadline = Date(timeIntervalSinceNow: timeout.seconds)
        while !answered { if !lock.wait(until: deadline) { return nil } }
        return .some(value)
    }
}

/// A `ProxyOptions` value the proxy cannot run with.
public struct ProxyOptionError: Error, CustomStringConvertible, Sendable {
    public var description: String
    public init(_ description: String) { self.description = description }
}

/// The kernel would not put the main loop in the real-time class `ProxyOptions.realtimePriority` asked for.
public struct RealtimeSchedulingRefused: Error, CustomStringConvertible, Sendable {
    public var priority: Int32
    public var cause: SystemError

    public var description: String {
        "the kernel refused real-time priority \(priority) (SCHED_FIFO) for the event loop: \(cause.errno). It needs root, "
            + "CAP_SYS_NICE (setcap cap_sys_nice+ep on the linkcond binary) or an RLIMIT_RTPRIO of at least \(priority) (ulimit -r)"
    }
}

/// The control endpoint could not be started as asked.
public struct ControlSetupError: Error, CustomStringConvertible, Sendable {
    public var description: String
    public init(_ description: String) { self.description = description }
}
