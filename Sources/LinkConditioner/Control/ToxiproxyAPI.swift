import Foundation

/// Toxiproxy 2.12's HTTP API over linkcond's listeners: the routes of its `api.go`, with its JSON shapes, error
/// shape `{"error","status"}` and status codes, so its client libraries drive linkcond unchanged.
///
/// | method and path                          | answer                                             |
/// |------------------------------------------|----------------------------------------------------|
/// | GET /version                             | `{"version": "2.12.0", "linkcond": "…"}`           |
/// | GET /proxies                             | every proxy by name                                |
/// | POST /proxies                            | 201 and the proxy; 409 if the name exists          |
/// | POST /populate                           | 201 `{"proxies": […]}`: replace the different ones |
/// | GET, POST, PATCH, DELETE /proxies/NAME   | show, merge listen/upstream/enabled, remove (204)  |
/// | GET, POST /proxies/NAME/toxics           | list, add (200)                                    |
/// | GET, POST, PATCH, DELETE …/toxics/TOXIC  | show, merge attributes and toxicity, remove (204)  |
/// | POST /reset                              | 204: every proxy enabled, every toxic removed      |
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

    /// Every method and path pattern `handle` serves, `{proxy}` and `{toxic}` standing for one path segment; any
    /// other request is refused before its switch (404, or 405 with `Allow`), so a case missing here is never
    /// reached. docs/reference/toxiproxy-api.yaml is tested against it.
    static let routes: [ControlRoute] = [
        ControlRoute("GET", "/version"), ControlRoute("POST", "/reset"),
        ControlRoute("GET", "/proxies"), ControlRoute("POST", "/proxies"), ControlRoute("POST", "/populate"),
        ControlRoute("GET", "/proxies/{proxy}"), ControlRoute("POST", "/proxies/{proxy}"),
        ControlRoute("PATCH", "/proxies/{proxy}"), ControlRoute("DELETE", "/proxies/{proxy}"),
        ControlRoute("GET", "/proxies/{proxy}/toxics"), ControlRoute("POST", "/proxies/{proxy}/toxics"),
        ControlRoute("GET", "/proxies/{proxy}/toxics/{toxic}"), ControlRoute("POST", "/proxies/{proxy}/toxics/{toxic}"),
        ControlRoute("PATCH", "/proxies/{proxy}/toxics/{toxic}"), ControlRoute("DELETE", "/proxies/{proxy}/toxics/{toxic}"),
    ]

    /// The pattern in `routes` that the path segments `parts` match, or nil.
    static func pattern(matching parts: [String]) -> String? {
        var seen: Set<String> = []
        for route in routes where seen.insert(route.path).inserted {
            let segments = route.path.split(separator: "/", omittingEmptySubsequences: false).dropFirst()
            if segments.count == parts.count, zip(segments, parts).allSatisfy({ $0.hasPrefix("{") || $0 == $1 }) { return route.path }
        }
        return nil
    }

    /// The segments of `path` after its leading "/", percent-decoded.
    static func segments(of path: String) -> [String] {
        path.split(separator: "/", omittingEmptySubsequences: false).dropFirst().map { String($0).removingPercentEncoding ?? String($0) }
    }

    /// The methods `routes` serves on `path`, in the table's order; empty for a path it does not know.
    static func methods(allowedOn path: String) -> [String] {
        guard let pattern = pattern(matching: segments(of: path)) else { return [] }
        return routes.filter { $0.path == pattern }.map(\.method)
    }

    /// The refusal of a request outside `routes`, or nil when the table serves it: Toxiproxy's 404 for an unknown
    /// path, 405 with the `Allow` field RFC 9110 requires for a method the path does not take.
    static func unrouted(_ method: String, _ path: String) -> HTTPResponse? {
        let allowed = methods(allowedOn: path)
        guard !allowed.isEmpty else { return ToxiproxyError(message: "404 page not found", status: 404).response }
        guard !allowed.contains(method) else { return nil }
        var response = ToxiproxyError(message: "\(method.prefix(20)) is not allowed on \(path.prefix(80)); it takes \(allowed.joined(separator: ", "))", status: 405).response
        response.extraHeaders = [("Allow", allowed.joined(separator: ", "))]
        return response
    }

    /// Answers `request`; `reply` runs on the loop thread.
    func handle(_ request: HTTPRequest, reply: @escaping (HTTPResponse) -> Void) {
        if let refusal = Self.unrouted(request.method, request.path) { return reply(refusal) }
        let parts = Self.segments(of: request.path)
        switch (request.method, parts.count, parts.first ?? "") {
        case ("GET", 1, "version"):
            reply(.toxiproxyJSON(.object([("version", .string(Self.compatibleVersion)), ("linkcond", .string(linkcondVersion))])))
        case ("POST", 1, "reset"):
            reset(reply: reply)
        case ("GET", 1, "proxies"):
            let listings = order.compactMap { proxies[$0]?.listing }
            render(reply: reply) { .object(listings.map { ($0.name, $0.json) }) }
        case ("POST", 1, "proxies"):
            create(request.body, reply: reply)
        case ("POST", 1, "populate"):
            populate(request.body, reply: reply)
        case (_, 2, "proxies"):
            proxyRoute(request, name: parts[1], reply: reply)
        case (_, 3, "proxies") where parts[2] == "toxics":
            toxicsRoute(request, proxyName: parts[1], reply: reply)
        case (_, 4, "proxies") where parts[2] == "toxics":
            toxicRoute(request, proxyName: parts[1], toxicName: parts[3], reply: reply)
        default:
            reply(ToxiproxyError(message: "404 page not found", status: 404).response)
        }
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
    static func proxyRequest(_ body: JSONValue, defaults: ProxyRequest, position: String = "") -> Result<ProxyRequest, ToxiproxyError> {
        guard case .object = body else { return .failure(.badRequestBody("expected a JSON object")) }
        var result = defaults
        for (key, path) in [("name", \ProxyRequest.name), ("listen", \ProxyRequest.listen), ("upstream", \ProxyRequest.upstream)] {
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
        for (key, text) in [("listen", result.listen), ("upstream", result.upstream)] where text.utf8.count > addressTextLimit {
            return .failure(.badRequestBody("\"\(key)\" is \(text.utf8.count) bytes; an address (HOST:PORT) is at most \(addressTextLimit)"))
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
            request.resolved = ResolvedAddresses(listen: address, upstream: upstream, upstreamAddresses: try upstream.resolve())
            return .success(request)
        } catch {
            return .failure(.badRequestBody("\(error)"))
        }
    }

    private func create(_ body: [UInt8], reply: @escaping (HTTPResponse) -> Void) {
        let defaults = ProxyRequest(name: "", listen: "", upstream: "", enabled: true)
        let remoteListeners = self.remoteListeners
        worker.parse({
            JSONValue.parse(body).flatMap { Self.proxyRequest($0, defaults: defaults) }.flatMap({ Self.resolve($0, remoteListeners: remoteListeners) })
        }) { [weak self] outcome in
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
    private func render(status: Int = 200, reply: @escaping (HTTPResponse) -> Void, _ body: @escaping @Sendable () -> JSONValue) {
        worker.parse({ HTTPResponse.toxiproxyJSON(body(), status: status) }, then: reply)
    }

    /// The refusal of a proxy beyond `proxyLimit`.
    static func proxyLimitReached(_ name: String) -> ToxiproxyError {
        ToxiproxyError(message: "linkcond serves at most \(proxyLimit) proxies; delete one before creating \"\(name.prefix(80))\"", status: 400)
    }

    /// Makes the proxy `request` describes and starts it when enabled; nothing is kept when it cannot listen.
    private func add(_ request: ProxyRequest) -> Result<ToxiproxyProxy, ToxiproxyError> {
        guard proxies.count < Self.proxyLimit else { return .failure(Self.proxyLimitReached(request.name)) }
        let seed = state.conditions.profile.seed.map { $0 ^ Self.nameHash(request.name) }
        let proxy = ToxiproxyProxy(name: request.name, listen: request.listen.isEmpty ? "127.0.0.1:0" : request.listen,
                                   upstream: request.upstream, loop: state.loop, seed: seed ?? UInt64.random(in: 0...UInt64.max))
        if let error = start(proxy, request.resolved, listen: proxy.listen, upstream: proxy.upstream) { return .failure(error) }
        proxies[request.name] = proxy
        order.append(request.name)
        return .success(proxy)
    }

    /// Starts `proxy` at `resolved` (nothing when it is to stay disabled), its listen address written as `listen`
    /// and its upstream as `upstream`; a listen failure is Toxiproxy's 500 with the reason, an address that
    /// would reach linkcond itself (`OwnListenerRefusal`) a 400 that says which; either changes nothing.
    private func start(_ proxy: ToxiproxyProxy, _ resolved: ResolvedAddresses?, listen: String, upstream: String) -> ToxiproxyError? {
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

    private func populate(_ body: [UInt8], reply: @escaping (HTTPResponse) -> Void) {
        let remoteListeners = self.remoteListeners
        worker.parse({ () -> Result<[ProxyRequest], ToxiproxyError> in
            JSONValue.parse(body).flatMap { value in
                guard case .array(let items) = value else { return .failure(.badRequestBody("expected a JSON array of proxies")) }
                guard items.count <= Self.proxyLimit else {
                    return .failure(ToxiproxyError(message: "linkcond serves at most \(Self.proxyLimit) proxies; the list has \(items.count)", status: 400))
                }
                var requests: [ProxyRequest] = []
                for (index, item) in items.enumerated() {
                    let defaults = ProxyRequest(name: "", listen: "", upstream: "", enabled: true)
                    switch Self.proxyRequest(item, defaults: defaults, position: " at proxy \(index + 1)").flatMap({ Self.resolve($0, remoteListeners: remoteListeners) }) {
                    case .failure(let error): return .failure(error)
                    case .success(let request):
                        if requests.contains(where: { $0.name == request.name }) {
                            return .failure(ToxiproxyError(message: "duplicate proxy name \"\(request.name)\"", status: 500))
                        }
                        requests.append(request)
                    }
                }
                return .success(requests)
            }
        }) { [weak self] outcome in
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
                    return reply(.toxiproxyJSON(.object([("error", .string(error.message)), ("status", .number(Double(error.status))),
                                                         ("proxies", .array([]))]), status: error.status))
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
                            .object([("error", .string(error.message)), ("status", .number(Double(error.status))),
                                     ("proxies", .array(listings.map(\.json)))])
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

    private func proxyRoute(_ request: HTTPRequest, name: String, reply: @escaping (HTTPResponse) -> Void) {
        guard let proxy = proxies[name] else {
            return reply(["GET", "POST", "PATCH", "DELETE"].contains(request.method)
                         ? ToxiproxyError.proxyNotFound.response : ToxiproxyError(message: "method not allowed", status: 405).response)
        }
        switch request.method {
        case "GET":
            reply(.toxiproxyJSON(proxy.json))
        case "DELETE":
            remove(name)
            reply(HTTPResponse(status: 204, body: ""))
        case "POST", "PATCH":
            let current = ProxyRequest(name: name, listen: proxy.listen, upstream: proxy.upstream, enabled: proxy.enabled)
            let body = request.body
            let remoteListeners = self.remoteListeners
            worker.parse({
                JSONValue.parse(body).flatMap { Self.proxyRequest($0, defaults: current) }.flatMap { update in
                    var update = update
                    update.name = current.name
                    return Self.resolve(update, remoteListeners: remoteListeners)
                }
            }) { [weak self, weak proxy] outcome in
                guard let self, let proxy, self.proxies[name] === proxy else { return reply(ToxiproxyError.proxyNotFound.response) }
                switch outcome {
                case .failure(let error): reply(error.response)
                case .success(let update):
                    if let error = self.update(proxy, to: update) { return reply(error.response) }
                    reply(.toxiproxyJSON(proxy.json))
                }
            }
        default:
            reply(ToxiproxyError(message: "method not allowed", status: 405).response)
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

    /// Toxiproxy's reset, all or nothing: every disabled proxy is checked first (its addresses resolved, a listen
    /// address beyond loopback refused), then each is enabled, and only then are the toxics removed. A listener
    /// that cannot bind (its address taken since the proxy was disabled) is found only by trying: the proxies this
    /// request already enabled are stopped again, so a refused reset leaves every proxy and toxic as it was.
    /// (Toxiproxy stops at the failing proxy, the earlier ones enabled and their toxics gone.) The worker is one
    /// serial queue, so no other request's change lands between the check and the change.
    private func reset(reply: @escaping (HTTPResponse) -> Void) {
        let disabled = order.compactMap { proxies[$0] }.filter { !$0.enabled }
            .map { ProxyRequest(name: $0.name, listen: $0.listen, upstream: $0.upstream, enabled: true) }
        let remoteListeners = self.remoteListeners
        worker.parse({ () -> Result<[ProxyRequest], ToxiproxyError> in
            var requests: [ProxyRequest] = []
            for request in disabled {
                switch Self.resolve(request, remoteListeners: remoteListeners) {
                case .failure(let error): return .failure(error)
                case .success(let request): requests.append(request)
                }
            }
            return .success(requests)
        }) { [weak self] outcome in
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

    private func toxicsRoute(_ request: HTTPRequest, proxyName: String, reply: @escaping (HTTPResponse) -> Void) {
        guard let proxy = proxies[proxyName] else { return reply(ToxiproxyError.proxyNotFound.response) }
        switch request.method {
        case "GET":
            reply(.toxiproxyJSON(.array(proxy.toxics.map(\.json))))
        case "POST":
            let body = request.body
            worker.parse({ JSONValue.parse(body).flatMap(ToxicDefinition.parsing) }) { [weak self, weak proxy] outcome in
                guard let self, let proxy, self.proxies[proxyName] === proxy else { return reply(ToxiproxyError.proxyNotFound.response) }
                switch outcome {
                case .failure(let error): reply(error.response)
                case .success(let toxic):
                    guard proxy.toxic(named: toxic.name) == nil else { return reply(ToxiproxyError.toxicExists.response) }
                    guard proxy.toxics.count < Self.toxicLimit else {
                        return reply(ToxiproxyError(message: "proxy \"\(proxyName.prefix(80))\" has \(Self.toxicLimit) toxics, the most linkcond keeps per proxy; delete one before adding \"\(toxic.name.prefix(80))\"", status: 400).response)
                    }
                    proxy.chains[toxic.stream]!.append(toxic)
                    reply(.toxiproxyJSON(toxic.json))
                }
            }
        default:
            reply(ToxiproxyError(message: "method not allowed", status: 405).response)
        }
    }

    private func toxicRoute(_ request: HTTPRequest, proxyName: String, toxicName: String, reply: @escaping (HTTPResponse) -> Void) {
        guard let proxy = proxies[proxyName] else { return reply(ToxiproxyError.proxyNotFound.response) }
        guard let toxic = proxy.toxic(named: toxicName) else { return reply(ToxiproxyError.toxicNotFound.response) }
        switch request.method {
        case "GET":
            reply(.toxiproxyJSON(toxic.json))
        case "DELETE":
            proxy.chains[toxic.stream]!.remove(named: toxicName)
            reply(HTTPResponse(status: 204, body: ""))
        case "POST", "PATCH":
            let body = request.body
            worker.parse({ JSONValue.parse(body).flatMap { toxic.updated(with: $0) } }) { [weak self, weak proxy] outcome in
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
        default:
            reply(ToxiproxyError(message: "method not allowed", status: 405).response)
        }
    }
}
