import Logging

/// A listen address and the upstream its connections are relayed to.
public struct ListenerSpec: Hashable, Sendable {
    public var listen: Endpoint
    public var upstream: Endpoint

    public init(listen: Endpoint, upstream: Endpoint) {
        self.listen = listen
        self.upstream = upstream
    }
}

/// A bound listener: the real address (the kernel's port when port 0 was asked) and its upstream.
public struct BoundListener: Hashable, Sendable {
    public var address: SocketAddress
    public var upstream: Endpoint
}

/// Per-direction traffic figures of one listener.
public struct ListenerStatus: Sendable {
    public var address: SocketAddress
    public var upstream: Endpoint
    public var activeConnections: Int
    public var connectionsAccepted: Int
    public var connectionsRefused: Int
    public var uplink: LinkCounters
    public var downlink: LinkCounters
}

/// A conditioned TCP proxy running on its own event loop thread: the in-process API for CLIs and test suites.
///
/// Every method is safe from any thread (except the loop's own); `stop` returns once every socket is closed and
/// the loop thread has ended.
public final class ConditionedProxy: Sendable {
    private let loop: EventLoop
    private let state: LoopBound<ProxyState>
    public let listeners: [BoundListener]

    /// Binds every listener and starts relaying under `profile`. Upstream host names are resolved here, before
    /// the loop starts. Nothing is left open when it throws.
    public init(listeners specs: [ListenerSpec], profile: Profile, options: ProxyOptions = ProxyOptions(),
                logger: Logger = Logger(label: "linkcond")) throws {
        var resolved: [(ListenerSpec, SocketAddress, [SocketAddress])] = []
        for spec in specs {
            guard let listen = try spec.listen.resolve().first else { continue }
            resolved.append((spec, listen, try spec.upstream.resolve()))
        }
        let loop = try EventLoop()
        var sockets: [Socket] = []
        do {
            for (_, listen, _) in resolved { sockets.append(try Socket.listening(on: listen)) }
        } catch {
            for socket in sockets { socket.close() }
            loop.stopAndWait()
            throw error
        }
        self.loop = loop
        let state = LoopBound(ProxyState())
        self.state = state
        var bound: [BoundListener] = []
        for (index, socket) in sockets.enumerated() {
            let address = try socket.localAddress()
            bound.append(BoundListener(address: address, upstream: resolved[index].0.upstream))
        }
        self.listeners = bound
        loop.start()
        let pending = LoopBound((sockets, resolved, profile, options, logger))
        try loop.submitAndWait {
            let (sockets, resolved, profile, options, logger) = pending.value
            let readBuffer = ReadBuffer()
            do {
                for (index, socket) in sockets.enumerated() {
                    let listener = try TCPListener(
                        loop: loop, socket: socket, upstream: resolved[index].0.upstream,
                        upstreamAddresses: resolved[index].2, profile: profile, options: options,
                        readBuffer: readBuffer, logger: logger)
                    try listener.start()
                    state.value.listeners.append(listener)
                }
            } catch {
                for listener in state.value.listeners { listener.close() }
                for socket in sockets.dropFirst(state.value.listeners.count) { socket.close() }
                state.value.listeners.removeAll()
                throw error
            }
        }
    }

    /// Switches every listener to `profile` at once; data in flight is neither lost nor reordered.
    public func apply(_ profile: Profile) {
        let state = self.state
        try? loop.submitAndWait {
            for listener in state.value.listeners { listener.apply(profile) }
        }
    }

    /// Resets every live connection, as when a suspended app's sockets are reclaimed.
    public func resetConnections() {
        let state = self.state
        try? loop.submitAndWait {
            for listener in state.value.listeners { listener.resetConnections() }
        }
    }

    /// Counters of every listener, read on the loop thread.
    public func status() -> [ListenerStatus] {
        let state = self.state
        return (try? loop.submitAndWait {
            state.value.listeners.map {
                ListenerStatus(address: $0.localAddress, upstream: $0.upstream, activeConnections: $0.relays.count,
                               connectionsAccepted: $0.connectionsAccepted, connectionsRefused: $0.connectionsRefused,
                               uplink: $0.uplink.counters, downlink: $0.downlink.counters)
            }
        }) ?? []
    }

    /// Stops accepting, closes every connection and listening socket, and ends the loop thread.
    public func stop() {
        let state = self.state
        guard !state.stopped.exchange() else { return }
        loop.execute {
            for listener in state.value.listeners { listener.close() }
            state.value.listeners.removeAll()
        }
        loop.stopAndWait()
    }
}

/// The proxy's loop-owned state.
final class ProxyState {
    var listeners: [TCPListener] = []
}

/// A value that belongs to the event loop thread, carried across threads only to be used there.
final class LoopBound<Value>: @unchecked Sendable {
    var value: Value
    let stopped = OnceFlag()

    init(_ value: Value) { self.value = value }
}
