import Logging

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
            var upstream: [SocketAddress] = []
            switch spec.kind {
            case .tcp(let endpoint), .udp(let endpoint): upstream = try endpoint.resolve()
            case .dns(let endpoint?): upstream = try endpoint.resolve()
            case .dns(nil), .proxy: break
            }
            resolved.append((spec, listen, upstream))
        }
        let loop = try EventLoop()
        self.loop = loop
        let state = LoopBound(ProxyState())
        self.state = state
        loop.start()
        let pending = LoopBound((resolved, profile, options, logger))
        do {
            self.listeners = try loop.submitAndWait {
                let (resolved, profile, options, logger) = pending.value
                let context = ListenerContext(loop: loop, profile: profile, options: options,
                                              readBuffer: ReadBuffer(), logger: logger)
                do {
                    for (spec, address, upstream) in resolved {
                        state.value.listeners.append(try makeListener(spec, address: address, upstream: upstream, context: context))
                    }
                } catch {
                    for listener in state.value.listeners { listener.close() }
                    state.value.listeners.removeAll()
                    throw error
                }
                return state.value.listeners.map(\.bound)
            }
        } catch {
            loop.stopAndWait()
            throw error
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
            state.value.listeners.map { $0.status() }
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
    var listeners: [ConditionedListener] = []
}

/// A value that belongs to the event loop thread, carried across threads only to be used there.
final class LoopBound<Value>: @unchecked Sendable {
    var value: Value
    let stopped = OnceFlag()

    init(_ value: Value) { self.value = value }
}
