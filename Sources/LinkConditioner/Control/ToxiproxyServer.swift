import Logging

/// Serves the Toxiproxy-compatible API over HTTP/1.1 on the proxy's event loop, one request per connection.
///
/// Lives on the event loop thread. Toxiproxy's clients send no token, so on loopback none is asked; the kernel
/// says instead whose program is at the other end, and only linkcond's own user and root are served (unless
/// `ToxiproxyClients.everyLocalUser`), or a client that sends the control token. What a browser could send is
/// refused before any route runs: a `Host` that is not this loopback endpoint (DNS rebinding), any `Origin` or
/// cross-site `Sec-Fetch-Site` (a web page), a `Mozilla/` user agent (Toxiproxy's own rule), and CORS preflights.
/// Off loopback a token is required (`Authorization: Bearer TOKEN`). Its proxies listen on loopback only unless
/// `remoteListeners` (see `ToxiproxyAPI`).
final class ToxiproxyServer: HTTPExchangeServer {
    let address: SocketAddress
    private let loop: EventLoop
    private let acceptor: TCPAcceptor
    let api: ToxiproxyAPI
    private let token: String?
    private let logger: Logger
    private let acceptedHosts: LoopbackHosts?
    private let connections: ExchangeConnections
    private let clients: ToxiproxyClients
    /// Where the control endpoint's token is found, which also lets another user's client in.
    private unowned let state: ProxyState
    /// Whether a refused other user has been logged; once per server, so a flood logs one line.
    private var loggedStranger = false

    init(
        address: SocketAddress, token: String?, remoteListeners: Bool, clients: ToxiproxyClients,
        state: ProxyState
    ) throws(SystemError) {
        self.clients = clients
        self.state = state
        loop = state.loop
        logger = state.logger
        acceptor = try TCPAcceptor(address: address, loop: state.loop, logger: state.logger)
        self.address = acceptor.localAddress
        self.token = token
        let port = self.address.port
        acceptedHosts = self.address.isLoopback ? LoopbackHosts(port: port, portless: ["localhost", "127.0.0.1"]) : nil
        api = ToxiproxyAPI(state: state, remoteListeners: remoteListeners)
        connections = ExchangeConnections(
            limit: ControlServer.connectionLimit, acceptor: acceptor, logger: state.logger,
            name: "Toxiproxy API", reserve: state.descriptorReserve)
        try acceptor.start(shortage: .serve(state.descriptorReserve)) { [weak self] client, _ in self?.accepted(client)
        }
        if clients == .everyLocalUser && token == nil {
            logger.warning(
                "Toxiproxy API on \(self.address) serves every user of this machine: any of them may change your proxies and create relays that run as user \(CurrentUser.id)"
            )
        }
    }

    var displayAddress: String { "http://\(address)" }

    var loopForConnections: EventLoop { loop }

    private func accepted(_ client: Socket) {
        connections.admit(ControlConnection(socket: client, server: self))
    }

    func respond(to request: HTTPRequest, from connection: ControlConnection, reply: @escaping (HTTPResponse) -> Void) {
        if let refusal = refusal(of: request) ?? strangerRefusal(of: request, on: connection) {
            var response = refusal.response
            let allowed = ToxiproxyAPI.methods(allowedOn: request.path)
            if refusal.status == 405, !allowed.isEmpty {
                response.extraHeaders = [("Allow", allowed.joined(separator: ", "))]
            }
            return reply(response)
        }
        api.handle(request, reply: reply)
    }

    /// Why a loopback client that is not a program of linkcond's user (or root) is refused, or nil: the API runs
    /// relays as linkcond's user and holds the owner's proxies, which no other user may list, change or delete.
    /// The control token lets a client in, as does `ToxiproxyClients.everyLocalUser`. Beyond loopback the token
    /// was required already. Asks the kernel of the client's socket (`localClient`), after every cheaper check passed.
    private func strangerRefusal(of request: HTTPRequest, on connection: ControlConnection) -> ToxiproxyError? {
        guard token == nil, clients == .ownerOnly else { return nil }
        let controlToken = state.controlToken
        if let controlToken, let given = request.headers["authorization"], given.hasPrefix("Bearer "),
            ControlToken.matches(String(given.dropFirst(7)), controlToken)
        {
            return nil
        }
        let client = state.descriptorReserve.lending { connection.socket.localClient() }
        if client.isOwner { return nil }
        if !loggedStranger {
            loggedStranger = true
            logger.warning(
                "Toxiproxy API: refused \(client) (only user \(CurrentUser.id) and root are served; logged once)")
        }
        let allow =
            (controlToken != nil
                ? "send linkcond's control token as \"Authorization: Bearer TOKEN\" (the one it was given, or the one in the file it names on stderr), or "
                : "")
            + "start linkcond with --toxiproxy-allow-other-users (toxiproxy-server: -allow-other-users)"
        let who =
            client == .linkcondItself
            ? "this connection comes through \(client), which relays any user"
            : "this connection belongs to \(client)"
        return ToxiproxyError(
            message:
                "this Toxiproxy API serves only programs of user \(CurrentUser.id), who started linkcond, and root; \(who). To allow it, \(allow)",
            status: 403)
    }

    private func refusal(of request: HTTPRequest) -> ToxiproxyError? {
        if let acceptedHosts {
            let host = request.headers["host"]?.lowercased() ?? ""
            guard acceptedHosts.contains(host) else {
                return ToxiproxyError(
                    message:
                        "Host \"\(host.prefix(80))\" is not this Toxiproxy API; expected 127.0.0.1:\(address.port) or localhost:\(address.port) (a web page trying DNS rebinding looks like this)",
                    status: 403)
            }
        }
        if request.headers["origin"] != nil
            || request.headers["sec-fetch-site"].map({ !["same-origin", "none"].contains($0.lowercased()) }) == true
        {
            return ToxiproxyError(
                message: "requests from web pages are refused: only local programs may drive the Toxiproxy API",
                status: 403)
        }
        if request.headers["user-agent"]?.hasPrefix("Mozilla/") == true {
            return ToxiproxyError(message: "User agent not allowed", status: 403)
        }
        if request.method == "OPTIONS" {
            return ToxiproxyError(message: "the Toxiproxy API answers no cross-origin (CORS) requests", status: 405)
        }
        if let token {
            let given = request.headers["authorization"] ?? ""
            guard given.hasPrefix("Bearer "), ControlToken.matches(String(given.dropFirst(7)), token) else {
                return ToxiproxyError(
                    message:
                        "this Toxiproxy API listens beyond loopback and needs \"Authorization: Bearer TOKEN\" (the token linkcond was given in LINKCOND_CONTROL_TOKEN or --control-token)",
                    status: 401)
            }
        }
        return nil
    }

    /// Runs `POST /populate` with `json` as its body, for a config file read at start.
    func populate(_ json: [UInt8], reply: @escaping (HTTPResponse) -> Void) {
        api.handle(HTTPRequest(method: "POST", path: "/populate", query: [:], headers: [:], body: json), reply: reply)
    }

    func connectionClosed(_ connection: ControlConnection) {
        connections.closed(connection)
    }

    func close() {
        acceptor.close()
        api.close()
        connections.closeAll()
    }
}

/// Which local programs the loopback Toxiproxy API serves without a token.
public enum ToxiproxyClients: Sendable {
    /// Programs of linkcond's own user and root; another user's need the control token.
    case ownerOnly
    /// Every program on the machine, as Toxiproxy itself does (`--toxiproxy-allow-other-users`).
    case everyLocalUser
}
