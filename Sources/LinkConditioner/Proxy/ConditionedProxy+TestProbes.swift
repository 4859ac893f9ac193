/// What tests read of a running proxy on its loop thread: timers, system calls, relays' decisions. Nothing in the
/// product calls these; tests reach them through `@testable import`.
extension ConditionedProxy {
    /// Timers the proxy's loop holds now, neither run nor cancelled.
    var liveTimers: Int { onLoop(or: 0) { $0.loop.liveTimers } }

    /// Each DNS listener's `lastTCPQueryWait`, in listener order (nil for other listeners).
    var lastDNSTCPQueryWaits: [Duration?] {
        onLoop(or: []) { $0.listeners.map { ($0 as? DNSForwarder)?.lastTCPQueryWait } }
    }

    /// The system calls the main loop's relays spent that a short connection can do without, read on the loop
    /// thread (tests show with it which calls a connection is spared).
    func relayCalls() -> RelayCallTally {
        onLoop(or: RelayCallTally()) { $0.listenerContext?.readBuffer.calls ?? RelayCallTally() }
    }

    /// The `epoll_ctl` calls the proxy's loop has made so far (tests show with it which a connection is spared).
    func descriptorControls() -> Int { onLoop(or: 0) { $0.loop.descriptorControls } }

    /// Front-end sessions looking their destination's name up now, read on the loop thread.
    func sessionsResolving() -> Int {
        onLoop(or: 0) { state in
            state.listeners.compactMap { $0 as? ProxyFrontEnd }.map(\.sessionsResolving).reduce(0, +)
        }
    }

    /// How the TCP listeners' and front ends' acceptors took their clients so far: wakes of the listening socket,
    /// and accepts that found nobody waiting.
    func acceptTally() -> (wakes: Int, emptyAccepts: Int) {
        let tallies = onEachListener { listener -> (wakes: Int, emptyAccepts: Int) in
            let acceptor = (listener as? TCPListener)?.acceptor ?? (listener as? ProxyFrontEnd)?.acceptor
            return (acceptor?.wakes ?? 0, acceptor?.emptyAccepts ?? 0)
        }
        return tallies.reduce((0, 0)) { ($0.0 + $1.wakes, $0.1 + $1.emptyAccepts) }
    }

    /// For each listener, in order, the kernel thread id of the loop that owns it, and for each of its open relays
    /// (a TCP listener's), whether the relay's loop is the thread that read it there (tests show with it where
    /// `threads` put each listener and its connections).
    func listenerThreads() -> [(thread: Int32, relaysOnIt: [Bool])] {
        let relaysOnThisThread: @Sendable (ConditionedListener) -> [Bool] = { listener in
            (listener as? TCPListener)?.relays.values.map { $0.loop.inLoopThread } ?? []
        }
        return onLoop(or: []) { state in
            state.listeners.map { listener in
                guard let owned = listener as? LoopOwnedListener else {
                    return (state.loop.kernelThreadID, relaysOnThisThread(listener))
                }
                return (owned.loop.kernelThreadID, owned.onOwner(relaysOnThisThread) ?? [])
            }
        }
    }

    /// `read` of each listener, on the thread of the loop that owns it, in listener order.
    private func onEachListener<T: Sendable>(_ read: @escaping @Sendable (ConditionedListener) -> T) -> [T] {
        onLoop(or: []) { state in
            state.listeners.compactMap { listener in
                guard let owned = listener as? LoopOwnedListener else { return read(listener) }
                return owned.onOwner(read)
            }
        }
    }

    /// What the plain TCP listeners' relays decided for their open connections, read on the loop thread (tests show
    /// with it that a fault-free profile's connections make no stages, and how a client's socket is watched).
    func relayDecisions() -> [RelayDecisions] { eachRelay(of: { ($0 as? TCPListener)?.relays }, \.decisions) }

    /// What the proxy front ends' relays decided for their open connections, read on the loop thread.
    func frontEndRelayDecisions() -> [RelayDecisions] { eachRelay(of: { ($0 as? ProxyFrontEnd)?.relays }, \.decisions) }

    /// A weak reference to each relay of the TCP listeners now, made on the loop thread: a test sees a relay freed
    /// once its connection ended.
    func relayReferences() -> [RelayReference] { eachRelay(of: { ($0 as? TCPListener)?.relays }, RelayReference.init) }

    /// `read` of each open relay of the listeners whose relays `relays` gives (nil for other kinds), on the loop
    /// thread.
    private func eachRelay<T: Sendable>(
        of relays: @escaping @Sendable (ConditionedListener) -> [UInt64: TCPRelay]?,
        _ read: @escaping @Sendable (TCPRelay) -> T
    ) -> [T] {
        onEachListener { relays($0)?.values.map(read) ?? [] }.flatMap { $0 }
    }
}

/// A relay held weakly, handed to a test: once the relay is freed it reads nil from any thread.
struct RelayReference: @unchecked Sendable {
    private(set) weak var relay: TCPRelay?

    init(_ relay: TCPRelay) { self.relay = relay }

    var isFreed: Bool { relay == nil }
}

extension TCPRelay {
    /// What the relay decided for its connection so far, as a test sees it.
    var decisions: RelayDecisions {
        RelayDecisions(
            hasStages: uplink?.stage != nil, speaker: (uplink?.stage as? ToxicStage)?.turn.speaker,
            clientInterest: clientRegistration.flatMap { loop.interest(of: $0) },
            modelledDirections: [uplink?.flow, downlink?.flow].filter { $0 != nil }.count,
            upstreamNoDelay: upstream.flatMap { try? $0.isNoDelay() })
    }
}

/// What a relay decided for its connection, as a test sees it.
struct RelayDecisions: Sendable, Equatable {
    /// Whether its pumps hold stages (faults, toxics).
    var hasStages: Bool
    /// The direction its stages say sent last; nil before either did.
    var speaker: ToxicStream?
    /// The epoll events the client's socket is watched for; nil while the main loop does not watch it.
    var clientInterest: UInt32?
    /// How many of its two directions have a flow in their link's model (none while the link shapes nothing).
    var modelledDirections: Int
    /// Whether the upstream's socket has TCP_NODELAY, as the kernel reports it; nil without an upstream socket.
    var upstreamNoDelay: Bool?
}
