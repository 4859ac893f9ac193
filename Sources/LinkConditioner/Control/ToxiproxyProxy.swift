/// One proxy of the Toxiproxy API: a name, a linkcond TCP listener while it is enabled, and its toxics.
///
/// Lives on the event loop thread. The listener is an ordinary listener of the proxy state, so the profile's link,
/// `status`, `offline` and scenarios apply to it as to any other; the toxics act per connection above that link.
final class ToxiproxyProxy {
    let name: String
    /// The listen address as given, then as bound (port 0 comes back as the real port), as Toxiproxy shows it.
    var listen: String
    var upstream: String
    private(set) var listener: TCPListener?
    let chains: [ToxicStream: ToxicChain]
    /// Where the seeds of each connection's stages come from: the profile's seed, so runs repeat, or fresh.
    private var seeds: SeededRandom

    init(name: String, listen: String, upstream: String, loop: EventLoop, seed: UInt64) {
        self.name = name
        self.listen = listen
        self.upstream = upstream
        chains = [.upstream: ToxicChain(loop: loop), .downstream: ToxicChain(loop: loop)]
        seeds = SeededRandom(seed: seed)
    }

    var enabled: Bool { listener != nil }

    /// Every toxic, upstream ones first, each direction in the order they were added (Toxiproxy's listing order).
    var toxics: [ToxicDefinition] {
        ToxicStream.allCases.flatMap { chains[$0]!.entries.map(\.definition) }
    }

    func toxic(named name: String) -> ToxicDefinition? { toxics.first { $0.name == name } }

    /// Listens at `resolved.listen` and relays to its upstream, named `upstream` as the request wrote it, in place of
    /// the listener it has; adds the new listener to `state`. The new socket is bound before the old listener closes,
    /// so a refused move (the address in use) leaves the proxy as it was: same listener, address and upstream. A
    /// restart on the very address it holds keeps the listening socket itself (`restart`). A listener that would
    /// reach linkcond itself is refused (`OwnListenerRefusal`) the same way.
    func start(at resolved: ToxiproxyAPI.ResolvedAddresses, upstream: String, state: ProxyState) throws {
        guard var context = state.listenerContext else { return }
        context.profile = state.conditions.effective
        if let previous = listener, previous.localAddress == resolved.listen {
            return try restart(previous, at: resolved, upstream: upstream, context: context, state: state)
        }
        let started = try TCPListener(
            address: resolved.listen, upstream: resolved.upstream, upstreamAddresses: resolved.upstreamAddresses,
            context: context)
        started.toxiproxyName = name
        if let refusal = state.ownListeners.refusal(adding: started.addresses) {
            started.close()
            throw refusal
        }
        stop(state: state)
        install(started, state: state)
        self.upstream = upstream
    }

    /// Restarts on the address `previous` holds with a new upstream. The kernel takes one listener per address, so
    /// the new listener takes over the old one's socket (a second descriptor of it) rather than closing and binding
    /// again: the address is never free for another socket to take meanwhile, and clients in its backlog stay. The
    /// connections are reset, as in Toxiproxy. A refused upstream leaves the old one on the same socket.
    private func restart(
        _ previous: TCPListener, at resolved: ToxiproxyAPI.ResolvedAddresses, upstream: String,
        context: ListenerContext, state: ProxyState
    ) throws {
        let kept = try previous.acceptor.duplicateSocket()
        stop(state: state)
        let started = try TCPListener(
            adopting: kept, upstream: resolved.upstream, upstreamAddresses: resolved.upstreamAddresses,
            context: context)
        started.toxiproxyName = name
        if let refusal = state.ownListeners.refusal(adding: started.addresses) {
            let keptAgain = try? started.acceptor.duplicateSocket()
            started.close()
            if let keptAgain {
                install(
                    try? TCPListener(
                        adopting: keptAgain, upstream: previous.upstream,
                        upstreamAddresses: previous.upstreamAddresses, context: context), state: state)
            }
            throw refusal
        }
        install(started, state: state)
        self.upstream = upstream
    }

    private func install(_ started: TCPListener?, state: ProxyState) {
        guard let started else { return }
        started.stageSource = ToxiproxyStages(proxy: self, faults: started.faults)
        started.toxiproxyName = name
        listener = started
        listen = started.localAddress.description
        state.listeners.append(started)
    }

    /// The seeds of a new connection's stages.
    fileprivate func drawStageSeeds() -> StageSeeds { StageSeeds(uplink: seeds.next(), downlink: seeds.next()) }

    /// Closes the listener and every connection it relays (they are reset, as in Toxiproxy).
    func stop(state: ProxyState) {
        guard let listener else { return }
        listener.close()
        state.listeners.removeAll { $0 === listener }
        self.listener = nil
    }

    /// What the API shows of it, copied as values so another thread can render it.
    var listing: Listing { Listing(name: name, listen: listen, upstream: upstream, enabled: enabled, toxics: toxics) }

    var json: JSONValue { listing.json }

    /// A proxy as the API shows it, a value any thread may render: the worker renders a listing of every proxy.
    struct Listing: Sendable {
        var name: String
        var listen: String
        var upstream: String
        var enabled: Bool
        var toxics: [ToxicDefinition]

        var json: JSONValue {
            .object([
                ("name", .string(name)), ("listen", .string(listen)), ("upstream", .string(upstream)),
                ("enabled", .bool(enabled)), ("toxics", .array(toxics.map(\.json))),
            ])
        }
    }
}

/// A Toxiproxy proxy's stages for its listener's connections: its toxics, then the profile's faults. Every
/// connection gets them, since a toxic may be added to a live connection at any time. Lives on the event loop thread.
private final class ToxiproxyStages: StageSource {
    unowned let proxy: ToxiproxyProxy
    unowned let faults: ListenerFaults

    init(proxy: ToxiproxyProxy, faults: ListenerFaults) {
        self.proxy = proxy
        self.faults = faults
    }

    func drawStageSeeds() -> StageSeeds { proxy.drawStageSeeds() }

    var needsStages: Bool { true }

    func makeStages(for relay: TCPRelay, seeds: StageSeeds, speaker: ToxicStream?) -> (
        uplink: ToxicStage, downlink: ToxicStage
    ) {
        faults.makeStages(
            for: relay, seeds: seeds, speaker: speaker, after: (proxy.chains[.upstream]!, proxy.chains[.downstream]!))
    }
}

extension ToxicDefinition {
    var json: JSONValue {
        let attributes = kind.attributeLimits.map { ($0.key, JSONValue.number(Double(attribute($0.key)))) }
        return .object([
            ("name", .string(name)), ("type", .string(kind.name)), ("stream", .string(stream.rawValue)),
            ("toxicity", .number(toxicity)), ("attributes", .object(attributes)),
        ])
    }

    /// A new toxic from a create request's body: default stream `downstream`, toxicity 1, name `TYPE_STREAM`.
    static func parsing(_ body: JSONValue) -> Result<ToxicDefinition, ToxiproxyError> {
        guard case .object = body else { return .failure(.badRequestBody("expected a JSON object")) }
        var stream = ToxicStream.downstream
        switch body["stream"] {
        case nil, .null?: break
        case .string(let text)?:
            guard let parsed = ToxicStream(rawValue: text) else { return .failure(.invalidStream) }
            stream = parsed
        default: return .failure(.badRequestBody("\"stream\" must be a string"))
        }
        var typeName = ""
        switch body["type"] {
        case nil, .null?: break
        case .string(let text)?: typeName = text
        default: return .failure(.badRequestBody("\"type\" must be a string"))
        }
        var name = "\(typeName)_\(stream.rawValue)"
        switch body["name"] {
        case nil, .null?: break
        case .string(let text)?: if !text.isEmpty { name = text }
        default: return .failure(.badRequestBody("\"name\" must be a string"))
        }
        guard let kind = ToxicKind.named(typeName) else { return .failure(.invalidToxicType) }
        guard name.utf8.count <= 256 else { return .failure(.badRequestBody("a toxic name is at most 256 bytes")) }
        let definition = ToxicDefinition(name: name, kind: kind, stream: stream, toxicity: 1, attributes: [:])
        return definition.updated(with: body)
    }

    /// This toxic with the attributes and toxicity of an update body merged in; anything else in it is ignored.
    func updated(with body: JSONValue) -> Result<ToxicDefinition, ToxiproxyError> {
        guard case .object = body else { return .failure(.badRequestBody("expected a JSON object")) }
        var result = self
        switch body["toxicity"] {
        case nil, .null?: break
        case .number(let value)?:
            guard (0...1).contains(value) else {
                return .failure(.badRequestBody("toxicity \(value) is not between 0 and 1"))
            }
            result.toxicity = value
        default: return .failure(.badRequestBody("\"toxicity\" must be a number from 0 to 1"))
        }
        switch body["attributes"] {
        case nil, .null?: break
        case .object(let members)?:
            for (key, value) in members {
                guard let limit = kind.attributeLimits.first(where: { $0.key == key })?.maximum else { continue }
                guard case .number(let number) = value, number == number.rounded(), number >= 0, number <= Double(limit)
                else {
                    return .failure(
                        .badRequestBody(
                            "\(kind.name) attribute \"\(key)\" must be a whole number from 0 to \(limit), got \(value.rendered.prefix(40))"
                        ))
                }
                result.attributes[key] = Int64(number)
            }
        default: return .failure(.badRequestBody("\"attributes\" must be an object"))
        }
        if let reason = kind.inconsistency(result.attributes) { return .failure(.badRequestBody(reason)) }
        return .success(result)
    }
}
