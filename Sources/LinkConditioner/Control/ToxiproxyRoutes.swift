/// One route of the Toxiproxy API: its method and path pattern (`{proxy}` and `{toxic}` each stand for one path
/// segment), the body it takes, and the method of `ToxiproxyAPI` that answers it.
///
/// `ToxiproxyAPI.routes` lists them all, and dispatch, the 404 and 405 answers (with `Allow`) and the operations of
/// docs/reference/toxiproxy-api.yaml (which a test holds to the table) come from that one table.
struct ToxiproxyRoute: Sendable {
    /// What a route's body carries.
    enum Body: Sendable {
        /// None: a body sent anyway is ignored.
        case none
        /// A JSON value in Toxiproxy's shape.
        case json
    }

    /// Answers the request of an exchange. Runs on the loop thread.
    typealias Handler = @Sendable (ToxiproxyAPI, ToxiproxyExchange) -> Void

    let route: ControlRoute
    let body: Body
    let handler: Handler

    init(_ method: String, _ path: String, body: Body = .none, handler: @escaping Handler) {
        route = ControlRoute(method, path)
        self.body = body
        self.handler = handler
    }
}

/// A request on its way to its route's handler, with the path segments its pattern's placeholders matched (`reply`
/// runs on the loop thread).
struct ToxiproxyExchange {
    let request: HTTPRequest
    /// The percent-decoded segment each placeholder matched, by the placeholder's name (`proxy`, `toxic`).
    let arguments: [String: String]
    let reply: (HTTPResponse) -> Void

    /// The segment `{proxy}` matched.
    var proxyName: String { arguments["proxy"] ?? "" }
    /// The segment `{toxic}` matched.
    var toxicName: String { arguments["toxic"] ?? "" }
}

/// Where the table sends a request: to the route that serves it, or to the answer that refuses it.
enum ToxiproxyRouting {
    case served(ToxiproxyRoute, arguments: [String: String])
    case refused(HTTPResponse)
}

extension ToxiproxyAPI {
    /// Every route of the API, the routes of Toxiproxy 2.12's `api.go`. `Allow` names a path's methods in this order.
    static let routes: [ToxiproxyRoute] = [
        ToxiproxyRoute("GET", "/version") { $0.version($1) },
        ToxiproxyRoute("POST", "/reset") { $0.reset($1) },
        ToxiproxyRoute("GET", "/proxies") { $0.listProxies($1) },
        ToxiproxyRoute("POST", "/proxies", body: .json) { $0.createProxy($1) },
        ToxiproxyRoute("POST", "/populate", body: .json) { $0.populate($1) },
        ToxiproxyRoute("GET", "/proxies/{proxy}") { $0.showProxy($1) },
        ToxiproxyRoute("POST", "/proxies/{proxy}", body: .json) { $0.updateProxy($1) },
        ToxiproxyRoute("PATCH", "/proxies/{proxy}", body: .json) { $0.updateProxy($1) },
        ToxiproxyRoute("DELETE", "/proxies/{proxy}") { $0.deleteProxy($1) },
        ToxiproxyRoute("GET", "/proxies/{proxy}/toxics") { $0.listToxics($1) },
        ToxiproxyRoute("POST", "/proxies/{proxy}/toxics", body: .json) { $0.addToxic($1) },
        ToxiproxyRoute("GET", "/proxies/{proxy}/toxics/{toxic}") { $0.showToxic($1) },
        ToxiproxyRoute("POST", "/proxies/{proxy}/toxics/{toxic}", body: .json) { $0.updateToxic($1) },
        ToxiproxyRoute("PATCH", "/proxies/{proxy}/toxics/{toxic}", body: .json) { $0.updateToxic($1) },
        ToxiproxyRoute("DELETE", "/proxies/{proxy}/toxics/{toxic}") { $0.deleteToxic($1) },
    ]

    /// The first pattern in `routes` that the path segments `parts` match, with the segment each placeholder
    /// matched; nil when none does.
    static func pattern(matching parts: [String]) -> (path: String, arguments: [String: String])? {
        var seen: Set<String> = []
        for entry in routes where seen.insert(entry.route.path).inserted {
            let segments = entry.route.path.split(separator: "/", omittingEmptySubsequences: false).dropFirst()
            guard segments.count == parts.count, zip(segments, parts).allSatisfy({ $0.hasPrefix("{") || $0 == $1 })
            else { continue }
            var arguments: [String: String] = [:]
            for (segment, part) in zip(segments, parts) where segment.hasPrefix("{") {
                arguments[String(segment.dropFirst().dropLast())] = part
            }
            return (entry.route.path, arguments)
        }
        return nil
    }

    /// The segments of `path` after its leading "/", percent-decoded.
    static func segments(of path: String) -> [String] {
        path.split(separator: "/", omittingEmptySubsequences: false).dropFirst().map {
            String($0).removingPercentEncoding ?? String($0)
        }
    }

    /// The methods `routes` serves on `path`, in the table's order; empty for a path it does not know.
    static func methods(allowedOn path: String) -> [String] {
        guard let (pattern, _) = pattern(matching: segments(of: path)) else { return [] }
        return routes.filter { $0.route.path == pattern }.map(\.route.method)
    }

    /// The route that serves `method` on `path`, or the refusal: Toxiproxy's 404 for an unknown path, 405 with the
    /// `Allow` field RFC 9110 requires for a method the path does not take.
    static func routing(_ method: String, _ path: String) -> ToxiproxyRouting {
        guard let (pattern, arguments) = pattern(matching: segments(of: path)) else {
            return .refused(ToxiproxyError(message: "404 page not found", status: 404).response)
        }
        if let entry = routes.first(where: { $0.route == ControlRoute(method, pattern) }) {
            return .served(entry, arguments: arguments)
        }
        let allowed = routes.filter { $0.route.path == pattern }.map(\.route.method)
        var response = ToxiproxyError(
            message:
                "\(method.prefix(20)) is not allowed on \(path.prefix(80)); it takes \(allowed.joined(separator: ", "))",
            status: 405
        ).response
        response.extraHeaders = [("Allow", allowed.joined(separator: ", "))]
        return .refused(response)
    }

    /// The refusal of a request outside `routes`, or nil when the table serves it.
    static func unrouted(_ method: String, _ path: String) -> HTTPResponse? {
        guard case .refused(let response) = routing(method, path) else { return nil }
        return response
    }

    /// Answers `request` through its route in `routes`; `reply` runs on the loop thread.
    func handle(_ request: HTTPRequest, reply: @escaping (HTTPResponse) -> Void) {
        switch Self.routing(request.method, request.path) {
        case .refused(let response):
            reply(response)
        case .served(let entry, let arguments):
            entry.handler(self, ToxiproxyExchange(request: request, arguments: arguments, reply: reply))
        }
    }
}
