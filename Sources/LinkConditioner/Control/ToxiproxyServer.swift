import Logging

/// Serves the Toxiproxy-compatible API over HTTP/1.1 on the proxy's event loop, one request per connection.
///
/// Lives on the event loop thread. Toxiproxy's clients send no token, so on loopback none is asked: only local
/// programs reach it, and what a browser could send is refused before any route runs: a `Host` that is not this
/// loopback endpoint (DNS rebinding), any `Origin` or cross-site `Sec-Fetch-Site` (a web page), a `Mozilla/`
/// user agent (Toxiproxy's own rule), and CORS preflights. Off loopback a token is required
/// (`Authorization: Bearer TOKEN`). Its proxies listen on loopback only unless `remoteListeners` (see `ToxiproxyAPI`).
final class ToxiproxyServer: HTTPExchangeServer {
    let address: SocketAddress
    private let loop: EventLoop
    private let acceptor: TCPAcceptor
    private let api: ToxiproxyAPI
    private let token: String?
    private let logger: Logger
    private let acceptedHosts: LoopbackHosts?
    private let connections: ExchangeConnections

    init(address: SocketAddress, token: String?, remoteListeners: Bool, state: ProxyState) throws(SystemError) {
        loop = state.loop
        logger = state.logger
        acceptor = try TCPAcceptor(address: address, loop: state.loop, logger: state.logger)
        self.address = acceptor.localAddress
        self.token = token
        let port = self.address.port
        acceptedHosts = self.address.isLoopback ? LoopbackHosts(port: port, portless: ["localhost", "127.0.0.1"]) : nil
        api = ToxiproxyAPI(state: state, remoteListeners: remoteListeners)
        connections = ExchangeConnections(limit: ControlServer.connectionLimit, acceptor: acceptor, logger: state.logger,
                                          name: "Toxiproxy API", reserve: state.descriptorReserve)
        try acceptor.start(shortage: .serve(state.descriptorReserve)) { [weak self] client, _ in self?.accepted(client) }
    }

    var displayAddress: String { "http://\(address)" }

    var loopForConnections: EventLoop { loop }

    private func accepted(_ client: Socket) {
        connections.admit(ControlConnection(socket: client, server: self))
    }

    func respond(to request: HTTPRequest, from connection: ControlConnection, reply: @escaping (HTTPResponse) -> Void) {
        if let refusal = refusal(of: request) { return reply(refusal.response) }
        api.handle(request, reply: reply)
    }

    private func refusal(of request: HTTPRequest) -> ToxiproxyError? {
        if let acceptedHosts {
            let host = request.headers["host"]?.lowercased() ?? ""
            guard acceptedHosts.contains(host) else {
                return ToxiproxyError(message: "Host \"\(host.prefix(80))\" is not this Toxiproxy API; expected 127.0.0.1:\(address.port) or localhost:\(address.port) (a web page trying DNS rebinding looks like this)", status: 403)
            }
        }
        if request.headers["origin"] != nil || request.headers["sec-fetch-site"].map({ !["same-origin", "none"].contains($0.lowercased()) }) == true {
            return ToxiproxyError(message: "requests from web pages are refused: only local programs may drive the Toxiproxy API", status: 403)
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
                return ToxiproxyError(message: "this Toxiproxy API listens beyond loopback and needs \"Authorization: Bearer TOKEN\" (the token linkcond was given in LINKCOND_CONTROL_TOKEN or --control-token)", status: 401)
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
