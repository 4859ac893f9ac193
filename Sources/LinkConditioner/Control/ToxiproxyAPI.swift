import Foundation

/// Toxiproxy 2.12's HTTP API over linkcond's listeners: the routes of its `api.go`, with its JSON shapes, error
/// shape `{"error","status"}` and status codes, so its client libraries drive linkcond unchanged.
///
/// `routes` (ToxiproxyRoutes.swift) lists its routes with the method of this type that answers each.
///
/// Bodies are parsed and addresses resolved on a worker thread; changes are applied on the event loop thread,
/// validated whole first, so a bad request changes nothing. Answers that list many proxies (`GET /proxies`,
/// `POST /populate`) are copied on the loop as values and rendered on the worker, so a listing of megabytes never
/// stalls a relay. Lives on the event loop thread.
///
/// Limits, each refused with Toxiproxy's error shape, status 400 and a message naming it: at most `proxyLimit`
/// proxies, `toxicLimit` toxics per proxy, names of 256 bytes and addresses of `addressTextLimit` bytes. With them the
/// longest listing is about 16 MB (every name and address made of characters JSON escapes), where a thousand proxies
/// of 64 toxics listed 6.8 MB in the common case.
///
/// A proxy listens on loopback only unless `remoteListeners`: a listener beyond loopback hands its upstream to
/// every host that reaches the machine, and the API's loopback clients (any local program, no token) must not
/// make that choice for the user.
final class ToxiproxyAPI {
    /// The Toxiproxy version whose API this one follows.
    static let compatibleVersion = "2.12.0"
    /// The most proxies one API serves: many more than a test suite names services (Testcontainers' Toxiproxy module
    /// reserves 32 ports), few enough that their listeners take a small share of the descriptors and a listing of them
    /// all stays a few megabytes.
    static let proxyLimit = 256
    /// The most toxics one proxy holds: a test stacks a handful (latency, bandwidth, a timeout, each way), and every
    /// live connection keeps state for every one.
    static let toxicLimit = 32
    /// The longest listen or upstream text: a DNS name (253 bytes) in brackets with a colon and a port fits. A disabled
    /// proxy keeps its addresses unresolved, so without it a listing could repeat a megabyte per proxy.
    static let addressTextLimit = 300

    private unowned let state: ProxyState
    /// Parses bodies and renders listings, one at a time.
    let worker: BodyParsingWorker
    /// Whether a proxy may listen beyond loopback (`--allow-remote`, or an API itself served beyond loopback).
    private let remoteListeners: Bool
    private var proxies: [String: ToxiproxyProxy] = [:]
    /// Names in creation order, for stable listings.
    private var order: [String] = []

    init(state: ProxyState, remoteListeners: Bool) {
        self.state = state
        self.remoteListeners = remoteListeners
        worker = BodyParsingWorker(loop: state.loop)
    }

    /// `GET /version`: the Toxiproxy version this API follows, and linkcond's.
    func version(_ exchange: ToxiproxyExchange) {
        exchange.reply(
            .toxiproxyJSON(
                .object([("version", .string(Self.compatibleVersion)), ("linkcond", .string(linkcondVersion))])))
    }

    /// `GET /proxies`: every proxy by name, in creation order.
    func listProxies(_ exchange: ToxiproxyExchange) {
        let listings = order.compactMap { proxies[$0]?.listing }
        render(reply: exchange.reply) { .object(listings.map { ($0.name, $0.json) }) }
    }

    func close() {
        for proxy in proxies.values { proxy.stop(state: state) }
        proxies.removeAll()
        order.removeAll()
    }

    // MARK: proxies

    /// A proxy as a request asks for it, with its addresses resolved when it is to be enabled.
    struct ProxyRequest: Sendable {
        var name: String
        var listen: String
        var upstream: String
        var enabled: Bool
        var resolved: ResolvedAddresses?
    }

    struct ResolvedAddresses: Sendable {
        var listen: SocketAddress
        var upstream: Endpoint
        var upstreamAddresses: [SocketAddress]
    }

    /// Reads `{"name","listen","upstream","enabled"}` merged onto `defaults`; runs on the worker.
    static func proxyRequest(_ body: JSONValue, defaults: ProxyRequest, position: String = "") -> Result<
        ProxyRequest, ToxiproxyError
    > {
        guard case .object = body else { return .failure(.badRequestBody("expected a JSON object")) }
        var result = defaults
        for (key, path) in [
            ("name", \ProxyRequest.name), ("listen", \ProxyRequest.listen), ("upstream", \ProxyRequest.upstream),
        ] {
            switch body[key] {
            case nil, .null?: break
            case .string(let text)?: result[keyPath: path] = text
            default: return .failure(.badRequestBody("\"\(key)\" must be a string"))
            }
        }
        switch body["enabled"] {
        case nil, .null?: break
        case .bool(let value)?: result.enabled = value
        default: return .failure(.badRequestBody("\"enabled\" must be true or false"))
        }
        if result.name.isEmpty { return .failure(.missingField("name" + position)) }
        if result.upstream.isEmpty { return .failure(.missingField("upstream" + position)) }
        guard result.name.utf8.count <= 256, !result.name.contains("/") else {
            return .failure(.badRequestBody("a proxy name is at most 256 bytes and has no \"/\""))
        }
        for (key, text) in [("listen", result.listen), ("upstream", result.upstream)]
        where text.utf8.count > addressTextLimit {
            return .failure(
                .badRequestBody(
                    "\"\(key)\" is \(text.utf8.count) bytes; an address (HOST:PORT) is at most \(addressTextLimit)"))
        }
        return .success(result)
    }

    /// Resolves the addresses of a proxy to be enabled, refusing a listen address beyond loopback unless
    /// `remoteListeners`; blocks on DNS, so it runs on the worker. A disabled proxy binds nothing: its listen
    /// address is checked now when written as an IP address, and when it is enabled when written as a name.
    static func resolve(_ request: ProxyRequest, remoteListeners: Bool) -> Result<ProxyRequest, ToxiproxyError> {
        let listenText = request.listen.isEmpty ? "127.0.0.1:0" : request.listen
        guard request.enabled else {
            let literal = Endpoint(parsing: listenText).flatMap { SocketAddress(numericHost: $0.host, port: $0.port) }
            if let literal, !remoteListeners, !literal.isLoopback {
                return .failure(.listenBeyondLoopback(proxy: request.name, listen: listenText, address: literal))
            }
            return .success(request)
        }
        guard let listen = Endpoint(parsing: listenText) else {
            return .failure(.badRequestBody("listen \"\(listenText.prefix(80))\" is not HOST:PORT"))
        }
        guard let upstream = Endpoint(parsing: request.upstream) else {
            return .failure(.badRequestBody("upstream \"\(request.upstream.prefix(80))\" is not HOST:PORT"))
        }
        do {
            let address = try listen.resolve()[0]
            if !remoteListeners && !address.isLoopback {
                return .failure(.listenBeyondLoopback(proxy: request.name, listen: listenText, address: address))
            }
            var request = request
            request.resolved = ResolvedAddresses(
                listen: address, upstream: upstream, upstreamAddresses: try upstream.resolve())
            return .success(request)
        } catch {
            return .failure(.badRequestBody("\(error)"))
        }
    }

    /// `POST /proxies`: creates a proxy (201), or 409 if the name exists.
    func createProxy(_ exchange: ToxiproxyExchange) {
        let body = exchange.request.body
        let reply = exchange.reply
        let defaults = ProxyRequest(name: "", listen: "", upstream: "", enabled: true)
        let remoteListeners = self.remoteListeners
        worker.parse {
            JSONValue.parse(body).flatMap { Self.proxyRequest($0, defaults: defaults) }.flatMap({
                Self.resolve($0, remoteListeners: remoteListeners)
            })
        } then: { [weak self] outcome in
            guard let self else { return }
            switch outcome {
            case .failure(let error): reply(error.response)
            case .success(let request):
                guard self.proxies[request.name] == nil else { return reply(ToxiproxyError.proxyExists.response) }
                switch self.add(request) {
                case .failure(let error): reply(error.response)
                case .success(let proxy): reply(.toxiproxyJSON(proxy.json, status: 201))
                }
            }
        }
    }

    /// Answers with the JSON `body` makes, made and rendered on the worker from values copied on the loop: a
    /// listing of every proxy can be megabytes. Called on the loop thread; `reply` runs on it.
    private func render(
        status: Int = 200, reply: @escaping (HTTPResponse) -> Void, _ body: @escaping @Sendable () -> JSONValue
    ) {
        worker.parse({ HTTPResponse.toxiproxyJSON(body(), status: status) }, then: reply)
    }

    /// The refusal of a proxy beyond `proxyLimit`.
    static func proxyLimitReached(_ name: String) -> ToxiproxyError {
        ToxiproxyError(
            message: "linkcond serves at most \(proxyLimit) proxies; delete one before creating \"\(name.prefix(80))\"",
            status: 400)
    }

    /// Makes the proxy `request` describes and starts it when enabled; nothing is kept when it cannot listen.
    private func add(_ request: ProxyRequest) -> Result<ToxiproxyProxy, ToxiproxyError> {
        guard proxies.count < Self.proxyLimit else { return .failure(Self.proxyLimitReached(request.name)) }
        let seed = state.conditions.profile.seed.map { $0 ^ Self.nameHash(request.name) }
        let proxy = ToxiproxyProxy(
            name: request.name, listen: request.listen.isEmpty ? "127.0.0.1:0" : request.listen,
            upstream: request.upstream, loop: state.loop, seed: seed ?? UInt64.random(in: 0...UInt64.max))
        if let error = start(proxy, request.resolved, listen: proxy.listen, upstream: proxy.upstream) {
            return .failure(error)
        }
        proxies[request.name] = proxy
        order.append(request.name)
        return .success(proxy)
    }

    /// Starts `proxy` at `resolved` (nothing when it is to stay disabled), its listen address written as `listen`
    /// and its upstream as `upstream`; a listen failure is Toxiproxy's 500 with the reason, an address that
    /// would reach linkcond itself (`OwnListenerRefusal`) a 400 that says which; either changes nothing.
    private func start(_ proxy: ToxiproxyProxy, _ resolved: ResolvedAddresses?, listen: String, upstream: String)
        -> ToxiproxyError?
    {
        guard let resolved else { return nil }
        do {
            try proxy.start(at: resolved, upstream: upstream, state: state)
            state.logger.info("toxiproxy: proxy \(proxy.name) listening on \(proxy.listen), upstream \(proxy.upstream)")
            return nil
        } catch let refusal as OwnListenerRefusal {
            return ToxiproxyError(message: refusal.description, status: 400)
        } catch {
            return ToxiproxyError(message: "listen tcp \(listen): \(error)", status: 500)
        }
    }

    /// FNV-1a of `name`: a proxy's seed depends on the profile's seed and its name, not on creation order.
    static func nameHash(_ name: String) -> UInt64 {
        name.utf8.reduce(0xcbf2_9ce4_8422_2325) { ($0 ^ UInt64($1)) &* 0x0000_0100_0000_01b3 }
    }

    private func remove(_ name: String) {
        proxies[name]?.stop(state: state)
        proxies.removeValue(forKey: name)
        order.removeAll { $0 == name }
    }

    /// `POST /populate`: creates the proxies of the body's list, replacing those whose addresses differ (201).
    func populate(_ exchange: ToxiproxyExchange) {
        let body = exchange.request.body
        let reply = exchange.reply
        let remoteListeners = self.remoteListeners
        worker.parse { () -> Result<[ProxyRequest], ToxiproxyError> in
            JSONValue.parse(body).flatMap { value in
                guard case .array(let items) = value else {
                    return .failure(.badRequestBody("expected a JSON array of proxies"))
                }
                guard items.count <= Self.proxyLimit else {
                    return .failure(
                        ToxiproxyError(
                            message: "linkcond serves at most \(Self.proxyLimit) proxies; the list has \(items.count)",
                            status: 400))
                }
                var requests: [ProxyRequest] = []
                for (index, item) in items.enumerated() {
                    let defaults = ProxyRequest(name: "", listen: "", upstream: "", enabled: true)
                    switch Self.proxyRequest(item, defaults: defaults, position: " at proxy \(index + 1)").flatMap({
                        Self.resolve($0, remoteListeners: remoteListeners)
                    }) {
                    case .failure(let error): return .failure(error)
                    case .success(let request):
                        if requests.contains(where: { $0.name == request.name }) {
                            return .failure(
                                ToxiproxyError(message: "duplicate proxy name \"\(request.name)\"", status: 500))
                        }
                        requests.append(request)
                    }
                }
                return .success(requests)
            }
        } then: { [weak self] outcome in
            guard let self else { return }
            switch outcome {
            case .failure(let error):
                var json = error.json
                if case .object(let members) = json { json = .object(members + [("proxies", .array([]))]) }
                reply(.toxiproxyJSON(json, status: error.status))
            case .success(let requests):
                let added = Set(requests.map(\.name)).subtracting(self.proxies.keys)
                if self.proxies.count + added.count > Self.proxyLimit {
                    let error = Self.proxyLimitReached(added.sorted()[0])
                    return reply(
                        .toxiproxyJSON(
                            .object([
                                ("error", .string(error.message)), ("status", .number(Double(error.status))),
                                ("proxies", .array([])),
                            ]), status: error.status))
                }
                var populated: [ToxiproxyProxy] = []
                for request in requests {
                    if let existing = self.proxies[request.name] {
                        if existing.listen == request.listen && existing.upstream == request.upstream {
                            populated.append(existing)
                            continue
                        }
                        self.remove(request.name)
                    }
                    switch self.add(request) {
                    case .failure(let error):
                        let listings = populated.map(\.listing)
                        return self.render(status: error.status, reply: reply) {
                            .object([
                                ("error", .string(error.message)), ("status", .number(Double(error.status))),
                                ("proxies", .array(listings.map(\.json))),
                            ])
                        }
                    case .success(let proxy):
                        populated.append(proxy)
                    }
                }
                let listings = populated.map(\.listing)
                self.render(status: 201, reply: reply) { .object([("proxies", .array(listings.map(\.json)))]) }
            }
        }
    }

    /// The proxy an exchange's path names, or nil once it has answered Toxiproxy's 404 for it.
    private func proxy(of exchange: ToxiproxyExchange) -> ToxiproxyProxy? {
        guard let proxy = proxies[exchange.proxyName] else {
            exchange.reply(ToxiproxyError.proxyNotFound.response)
            return nil
        }
        return proxy
    }

    /// `GET /proxies/{proxy}`.
    func showProxy(_ exchange: ToxiproxyExchange) {
        guard let proxy = proxy(of: exchange) else { return }
        exchange.reply(.toxiproxyJSON(proxy.json))
    }

    /// `DELETE /proxies/{proxy}` (204).
    func deleteProxy(_ exchange: ToxiproxyExchange) {
        guard proxy(of: exchange) != nil else { return }
        remove(exchange.proxyName)
        exchange.reply(HTTPResponse(status: 204, body: ""))
    }

    /// `POST` or `PATCH /proxies/{proxy}`: merges the body's listen, upstream and enabled into the proxy.
    func updateProxy(_ exchange: ToxiproxyExchange) {
        guard let proxy = proxy(of: exchange) else { return }
        let name = exchange.proxyName
        let reply = exchange.reply
        let current = ProxyRequest(name: name, listen: proxy.listen, upstream: proxy.upstream, enabled: proxy.enabled)
        let body = exchange.request.body
        let remoteListeners = self.remoteListeners
        worker.parse {
            JSONValue.parse(body).flatMap { Self.proxyRequest($0, defaults: current) }.flatMap { update in
                var update = update
                update.name = current.name
                return Self.resolve(update, remoteListeners: remoteListeners)
            }
        } then: { [weak self, weak proxy] outcome in
            guard let self, let proxy, self.proxies[name] === proxy else {
                return reply(ToxiproxyError.proxyNotFound.response)
            }
            switch outcome {
            case .failure(let error): reply(error.response)
            case .success(let update):
                if let error = self.update(proxy, to: update) { return reply(error.response) }
                reply(.toxiproxyJSON(proxy.json))
            }
        }
    }

    /// Toxiproxy's update: a new listen or upstream restarts the listener; `enabled` starts or stops it. A listener
    /// that cannot bind refuses the update whole: the proxy keeps its listen address, upstream and enabled state.
    private func update(_ proxy: ToxiproxyProxy, to update: ProxyRequest) -> ToxiproxyError? {
        let listen = update.listen.isEmpty ? "127.0.0.1:0" : update.listen
        let moved = listen != proxy.listen || update.upstream != proxy.upstream
        guard update.enabled else {
            proxy.stop(state: state)
            proxy.listen = listen
            proxy.upstream = update.upstream
            return nil
        }
        guard moved || !proxy.enabled else { return nil }
        return start(proxy, update.resolved, listen: listen, upstream: update.upstream)
    }

    /// `POST /reset` (204): every proxy enabled, every toxic removed.
    ///
    /// Toxiproxy's reset, all or nothing: every disabled proxy is checked first (its addresses resolved, a listen
    /// address beyond loopback refused), then each is enabled, and only then are the toxics removed. A listener
    /// that cannot bind (its address taken since the proxy was disabled) is found only by trying: the proxies this
    /// request already enabled are stopped again, so a refused reset leaves every proxy and toxic as it was.
    /// (Toxiproxy stops at the failing proxy, the earlier ones enabled and their toxics gone.) The worker is one
    /// serial queue, so no other request's change lands between the check and the change.
    func reset(_ exchange: ToxiproxyExchange) {
        let reply = exchange.reply
        let disabled = order.compactMap { proxies[$0] }.filter { !$0.enabled }
            .map { ProxyRequest(name: $0.name, listen: $0.listen, upstream: $0.upstream, enabled: true) }
        let remoteListeners = self.remoteListeners
        worker.parse { () -> Result<[ProxyRequest], ToxiproxyError> in
            var requests: [ProxyRequest] = []
            for request in disabled {
                switch Self.resolve(request, remoteListeners: remoteListeners) {
                case .failure(let error): return .failure(error)
                case .success(let request): requests.append(request)
                }
            }
            return .success(requests)
        } then: { [weak self] outcome in
            guard let self else { return }
            let requests: [ProxyRequest]
            switch outcome {
            case .failure(let error): return reply(error.response)
            case .success(let resolved): requests = resolved
            }
            var started: [(proxy: ToxiproxyProxy, listen: String)] = []
            for request in requests {
                guard let proxy = self.proxies[request.name], !proxy.enabled else { continue }
                let listen = proxy.listen
                if let error = self.start(proxy, request.resolved, listen: proxy.listen, upstream: proxy.upstream) {
                    for (proxy, listen) in started {
                        proxy.stop(state: self.state)
                        proxy.listen = listen
                        self.state.logger.info("toxiproxy: reset refused, proxy \(proxy.name) disabled again")
                    }
                    return reply(error.response)
                }
                started.append((proxy, listen))
            }
            for name in self.order {
                guard let proxy = self.proxies[name] else { continue }
                for chain in proxy.chains.values { chain.removeAll() }
            }
            reply(HTTPResponse(status: 204, body: ""))
        }
    }

    // MARK: toxics

    /// `GET /proxies/{proxy}/toxics`: the proxy's toxics, upstream ones first.
    func listToxics(_ exchange: ToxiproxyExchange) {
        guard let proxy = proxy(of: exchange) else { return }
        exchange.reply(.toxiproxyJSON(.array(proxy.toxics.map(\.json))))
    }

    /// `POST /proxies/{proxy}/toxics`: adds the body's toxic (200), or 409 if the name exists.
    func addToxic(_ exchange: ToxiproxyExchange) {
        guard let proxy = proxy(of: exchange) else { return }
        let proxyName = exchange.proxyName
        let reply = exchange.reply
        let body = exchange.request.body
        worker.parse {
            JSONValue.parse(body).flatMap(ToxicDefinition.parsing)
        } then: { [weak self, weak proxy] outcome in
            guard let self, let proxy, self.proxies[proxyName] === proxy else {
                return reply(ToxiproxyError.proxyNotFound.response)
            }
            switch outcome {
            case .failure(let error): reply(error.response)
            case .success(let toxic):
                guard proxy.toxic(named: toxic.name) == nil else { return reply(ToxiproxyError.toxicExists.response) }
                guard proxy.toxics.count < Self.toxicLimit else {
                    return reply(
                        ToxiproxyError(
                            message:
                                "proxy \"\(proxyName.prefix(80))\" has \(Self.toxicLimit) toxics, the most linkcond keeps per proxy; delete one before adding \"\(toxic.name.prefix(80))\"",
                            status: 400
                        ).response)
                }
                proxy.chains[toxic.stream]!.append(toxic)
                reply(.toxiproxyJSON(toxic.json))
            }
        }
    }

    /// The proxy and toxic an exchange's path names, or nil once it has answered Toxiproxy's 404 for either.
    private func toxic(of exchange: ToxiproxyExchange) -> (ToxiproxyProxy, ToxicDefinition)? {
        guard let proxy = proxy(of: exchange) else { return nil }
        guard let toxic = proxy.toxic(named: exchange.toxicName) else {
            exchange.reply(ToxiproxyError.toxicNotFound.response)
            return nil
        }
        return (proxy, toxic)
    }

    /// `GET /proxies/{proxy}/toxics/{toxic}`.
    func showToxic(_ exchange: ToxiproxyExchange) {
        guard let (_, toxic) = toxic(of: exchange) else { return }
        exchange.reply(.toxiproxyJSON(toxic.json))
    }

    /// `DELETE /proxies/{proxy}/toxics/{toxic}` (204).
    func deleteToxic(_ exchange: ToxiproxyExchange) {
        guard let (proxy, toxic) = toxic(of: exchange) else { return }
        proxy.chains[toxic.stream]!.remove(named: exchange.toxicName)
        exchange.reply(HTTPResponse(status: 204, body: ""))
    }

    /// `POST` or `PATCH /proxies/{proxy}/toxics/{toxic}`: merges the body's attributes and toxicity into the toxic.
    func updateToxic(_ exchange: ToxiproxyExchange) {
        guard let (proxy, toxic) = toxic(of: exchange) else { return }
        let proxyName = exchange.proxyName
        let toxicName = exchange.toxicName
        let reply = exchange.reply
        let body = exchange.request.body
        worker.parse {
            JSONValue.parse(body).flatMap { toxic.updated(with: $0) }
        } then: { [weak self, weak proxy] outcome in
            guard let self, let proxy, self.proxies[proxyName] === proxy, proxy.toxic(named: toxicName) != nil else {
                return reply(ToxiproxyError.toxicNotFound.response)
            }
            switch outcome {
            case .failure(let error): reply(error.response)
            case .success(let updated):
                proxy.chains[updated.stream]!.replace(updated)
                reply(.toxiproxyJSON(updated.json))
            }
        }
    }
}
