/// One route of the control endpoint: its method and path, who may call it, where it is served, the body it takes,
/// how docs/reference/control-api.md shows it, and what answers it.
///
/// `ControlServer.routes` lists them all, and everything else comes from that one table: dispatch, the 405 answer
/// and its `Allow` field, the 404 answer's list of endpoints, the dashboard's routes, the reference's table of routes
/// (`ControlServer.referenceTable`, which a test holds the committed file to) and the operations of
/// docs/reference/control-api.yaml (which a test holds to the table).
struct ControlRouteEntry: Sendable {
    /// Who may call a route, beyond the checks every request passes (its `Host`, `Origin` and body type).
    enum Access: Sendable {
        /// Only a client that sends the endpoint's token, when it has one.
        case token
        /// Any client: the dashboard's files, which hold no secret, and the trade of a ticket for the token.
        case open
    }

    /// Where a route is served; elsewhere the path is not found (404).
    enum Reach: Sendable {
        /// On every control endpoint: TCP or a Unix socket.
        case everywhere
        /// On a loopback TCP endpoint, where a page can make same-origin requests.
        case loopbackTCP
        /// On a loopback TCP endpoint that has a token, which the dashboard's tickets stand in for.
        case loopbackTCPWithToken
    }

    /// What a route's body carries; bodies are always sent as `ControlServer.bodyType`.
    enum Body: Sendable {
        /// None: a body sent anyway is ignored.
        case none
        /// Text in the profile format, described as the reference's table says it.
        case text(String)
    }

    /// How docs/reference/control-api.md shows a route.
    enum Reference: Sendable {
        /// A row of the routes table: what the route answers, and the query it takes (`?name=N`), if any.
        case row(answer: String, query: String = "")
        /// No row: an older spelling of a route that has one (the prose names it), or a file the page loads.
        case omitted
    }

    /// What answers a route's requests, on the loop thread.
    enum Handler: Sendable {
        /// A method of the API, which acts on the proxy's state: the routes served everywhere.
        case api(@Sendable (ControlAPI, ControlExchange) -> Void)
        /// A method of the endpoint itself, which knows its connection: the dashboard's files and tickets.
        case endpoint(@Sendable (ControlServer, ControlExchange, ControlConnection) -> Void)
    }

    let route: ControlRoute
    let access: Access
    let reach: Reach
    let body: Body
    let reference: Reference
    let handler: Handler

    init(
        _ method: String, _ path: String, access: Access = .token, reach: Reach = .everywhere, body: Body = .none,
        _ reference: Reference, _ handler: Handler
    ) {
        route = ControlRoute(method, path)
        self.access = access
        self.reach = reach
        self.body = body
        self.reference = reference
        self.handler = handler
    }

    /// The row of the reference's routes table, or nil when the route has none.
    var referenceRow: String? {
        guard case .row(let answer, let query) = reference else { return nil }
        let described: String
        switch body {
        case .none: described = ""
        case .text(let text): described = " " + text
        }
        return "| `\(route.method) \(route.path)\(query)` |\(described) | \(answer) |"
    }
}

/// A request on its way to its route's handler, and where its answer goes (`reply` runs on the loop thread).
struct ControlExchange {
    let request: HTTPRequest
    let reply: (HTTPResponse) -> Void
}

extension ControlServer {
    /// Every route of the control endpoint, the API's and the dashboard's.
    ///
    /// Its order shows in answers: `Allow` names a path's methods in table order, and a 404 names the paths served
    /// everywhere in the order they first appear. The reference's table keeps the same order.
    static let routes: [ControlRouteEntry] = [
        ControlRouteEntry(
            "GET", "/status",
            .row(
                answer: "JSON: version, profile, offline state, scenario, listeners with "
                    + "per-direction counters and current rate"), .api { $0.status($1) }),
        ControlRouteEntry("GET", "/version", .row(answer: "JSON: `{\"version\": \"0.1.0\"}`"), .api { $0.version($1) }),
        ControlRouteEntry(
            "GET", "/metrics", .row(answer: "Prometheus text format, see [metrics](metrics.md)"),
            .api { $0.metrics($1) }),
        ControlRouteEntry(
            "GET", "/connections", .row(answer: "JSON: the live connections (at most 500) and their total"),
            .api { $0.connections($1) }),
        ControlRouteEntry(
            "GET", "/history",
            .row(
                answer: "JSON: throughput, queue delay and the profile's rate, one point a second for the last "
                    + "10 minutes (idle seconds as zeros)"), .api { $0.history($1) }),
        ControlRouteEntry(
            "GET", "/catalog", .row(answer: "JSON: built-in profiles (name, summary, text) and scenarios"),
            .api { $0.catalog($1) }),
        ControlRouteEntry(
            "GET", "/profile", .row(answer: "the current profile, fully resolved"), .api { $0.currentProfile($1) }),
        ControlRouteEntry(
            "PUT", "/profile", body: profileBody, .row(answer: "switches to it (and stops a scenario)"),
            .api { $0.switchProfile($1) }),
        ControlRouteEntry("POST", "/profile", body: profileBody, .omitted, .api { $0.switchProfile($1) }),
        ControlRouteEntry(
            "POST", "/settings", body: settingsBody, .row(answer: "changes those settings, all or none"),
            .api { $0.changeSettings($1) }),
        ControlRouteEntry("PATCH", "/profile", body: settingsBody, .omitted, .api { $0.changeSettings($1) }),
        ControlRouteEntry(
            "POST", "/offline", body: .text("empty, `refuse` or `blackhole`"), .row(answer: "airplane mode"),
            .api { $0.goOffline($1) }),
        ControlRouteEntry("POST", "/online", .row(answer: "restores the profile"), .api { $0.goOnline($1) }),
        ControlRouteEntry(
            "POST", "/reset", .row(answer: "resets every live connection"), .api { $0.resetConnections($1) }),
        ControlRouteEntry(
            "PUT", "/scenario", body: scenarioBody, .row(answer: "starts it", query: "?name=N"),
            .api { $0.startScenario($1) }),
        ControlRouteEntry("POST", "/scenario", body: scenarioBody, .omitted, .api { $0.startScenario($1) }),
        ControlRouteEntry("DELETE", "/scenario", .row(answer: "stops it"), .api { $0.stopScenario($1) }),
        ControlRouteEntry(
            "GET", "/", access: .open, reach: .loopbackTCP,
            .row(answer: "the dashboard (no token needed for the page itself)"), dashboardFile),
        ControlRouteEntry("GET", "/index.html", access: .open, reach: .loopbackTCP, .omitted, dashboardFile),
        ControlRouteEntry("GET", "/dashboard.css", access: .open, reach: .loopbackTCP, .omitted, dashboardFile),
        ControlRouteEntry("GET", "/dashboard.js", access: .open, reach: .loopbackTCP, .omitted, dashboardFile),
        ControlRouteEntry(
            "POST", "/dashboard/ticket", reach: .loopbackTCPWithToken,
            .row(answer: "a one-time ticket for `dashboard --open`, valid 60 s"),
            .endpoint { server, exchange, _ in server.issueTicket(exchange) }),
        ControlRouteEntry(
            "POST", "/dashboard/token", access: .open, reach: .loopbackTCPWithToken,
            body: .text("the ticket (no token needed)"),
            .row(answer: "the token, once per ticket; 403 for an unknown, used or expired ticket"),
            .endpoint { $0.redeemTicket($1, from: $2) }),
    ]

    private static let dashboardFile = ControlRouteEntry.Handler.endpoint { server, exchange, _ in
        server.dashboardFile(exchange)
    }
    private static let profileBody = ControlRouteEntry.Body.text(
        "a built-in profile name, or profile text (never a path)")
    private static let settingsBody = ControlRouteEntry.Body.text(
        "`key = value` lines, each key once (as in a profile file)")
    private static let scenarioBody = ControlRouteEntry.Body.text(
        "scenario text (its profile steps name built-in profiles)")

    /// The route that serves `method` and `path` on this endpoint, or nil (the request is refused: 404 or 405).
    func route(_ method: String, _ path: String) -> ControlRouteEntry? {
        Self.routes.first { entry in
            guard entry.route.method == method, entry.route.path == path else { return false }
            switch entry.reach {
            case .everywhere: return true
            case .loopbackTCP: return servesPages
            case .loopbackTCPWithToken: return servesPages && hasToken
            }
        }
    }

    /// The answer to a request no route serves here: 405 for a path the endpoint knows, with the `Allow` field
    /// RFC 9110 requires, else 404 (also for a route this endpoint does not serve, such as the dashboard on a Unix
    /// socket), naming the paths served everywhere.
    static func unrouted(_ request: HTTPRequest) -> HTTPResponse {
        let allowed = ControlRoute.methods(allowedOn: request.path)
        guard allowed.isEmpty || allowed.contains(request.method) else {
            var response = HTTPResponse.error(
                405,
                "\(request.method.prefix(20)) is not allowed on \(request.path); it takes \(allowed.joined(separator: ", "))"
            )
            response.extraHeaders = [("Allow", allowed.joined(separator: ", "))]
            return response
        }
        var known: [String] = []
        for entry in routes where entry.reach == .everywhere && !known.contains(entry.route.path) {
            known.append(entry.route.path)
        }
        return .error(404, "no such endpoint \(request.path.prefix(80)); endpoints: \(known.joined(separator: ", "))")
    }

    /// The routes table of docs/reference/control-api.md, between its `<!-- table:routes -->` and `<!-- /table -->`
    /// lines: a row per route that has one, in table order.
    static var referenceTable: String {
        (["| request | body | answer |", "|---|---|---|"] + routes.compactMap(\.referenceRow)).joined(separator: "\n")
    }
}

/// One method and path the control endpoint serves (or, in the Toxiproxy API's table, a path pattern).
struct ControlRoute: Hashable, Sendable, CustomStringConvertible {
    var method: String
    var path: String

    init(_ method: String, _ path: String) {
        self.method = method
        self.path = path
    }

    var description: String { "\(method) \(path)" }

    /// The methods the control endpoint serves on `path` (on some endpoint), in the table's order; empty for a path
    /// it does not know.
    static func methods(allowedOn path: String) -> [String] {
        ControlServer.routes.filter { $0.route.path == path }.map(\.route.method)
    }
}
