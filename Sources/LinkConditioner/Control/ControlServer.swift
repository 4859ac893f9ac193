import Foundation
import Logging

/// Where the control endpoint listens: a TCP address or a Unix-domain socket path.
public enum ControlAddress: Hashable, Sendable, CustomStringConvertible {
    case tcp(Endpoint)
    case unix(String)

    /// Parses `HOST:PORT`, `http://HOST:PORT`, or a path (anything with a `/`).
    public init?(parsing text: String) {
        var rest = text
        if rest.hasPrefix("http://") { rest = String(rest.dropFirst(7)) }
        if rest.hasSuffix("/") && !text.hasPrefix("/") { rest = String(rest.dropLast()) }
        if text.hasPrefix("/") || text.hasPrefix("./") || text.hasPrefix("unix:") {
            self = .unix(text.hasPrefix("unix:") ? String(text.dropFirst(5)) : text)
        } else if let endpoint = Endpoint(parsing: rest) {
            self = .tcp(endpoint)
        } else {
            return nil
        }
    }

    /// The directory only this user can enter where linkcond keeps its token files and, in `instances/`, each running
    /// instance's descriptor and control socket:
    /// `$XDG_RUNTIME_DIR/linkcond`, or `/tmp/linkcond-UID` when `XDG_RUNTIME_DIR` is not set.
    public static var privateDirectory: String {
        if let runtime = ProcessInfo.processInfo.environment["XDG_RUNTIME_DIR"], !runtime.isEmpty {
            return runtime + "/linkcond"
        }
        return "/tmp/linkcond-\(CurrentUser.id)"
    }

    /// Where `linkcond run` keeps the token of its TCP control endpoint on `port`, for the CLI to find: in
    /// `directory`, the private directory unless a test gives its own.
    public static func tokenFile(port: UInt16, in directory: String = privateDirectory) -> String {
        directory + "/control-\(port).token"
    }

    public var description: String {
        switch self {
        case .tcp(let endpoint): "http://\(endpoint)"
        case .unix(let path): path
        }
    }

    /// Whether only this machine can reach the address: a Unix socket, `localhost`, or a loopback address written as
    /// one (127.x.y.z, ::1). A name such as `127.evil.example` is not: DNS may resolve it anywhere.
    public var isLocalOnly: Bool {
        switch self {
        case .unix: true
        case .tcp(let endpoint):
            endpoint.host == "localhost" || AddressBytes.parse(endpoint.host).map(AddressBytes.isLoopback) == true
        }
    }
}

/// The token a control endpoint requires: `Authorization: Bearer TOKEN`.
public enum ControlToken {
    /// A new random token: 32 bytes from the system's cryptographic generator, as 64 hex digits.
    public static func random() -> String {
        var generator = SystemRandomNumberGenerator()
        return (0..<32).map { _ in String(format: "%02x", UInt8.random(in: 0...255, using: &generator)) }.joined()
    }

    /// Compares in time independent of where the first difference is.
    static func matches(_ given: String, _ expected: String) -> Bool {
        SecretComparison.equal(Array(given.utf8), Array(expected.utf8))
    }
}

/// Compares secrets (tokens, passwords) in time independent of where the first difference is, so timing does not
/// reveal a matching prefix.
enum SecretComparison {
    static func equal(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        var difference = UInt8(truncatingIfNeeded: a.count ^ b.count)
        for index in 0..<max(a.count, b.count) {
            difference |= (index < a.count ? a[index] : 0) ^ (index < b.count ? b[index] : 0)
        }
        return difference == 0
    }
}

/// The `Host` values that name a loopback HTTP endpoint on `port`: `localhost:PORT`, `[::1]:PORT`, or an IPv4
/// loopback address written as one (`127.x.y.z:PORT`). Any other value is a name a web page chose, which its
/// attacker can point at 127.0.0.1 (DNS rebinding), including names such as `127.evil.example`.
struct LoopbackHosts {
    let port: UInt16
    /// Values without the port, for clients that leave it out; none of them is a name an attacker can register.
    var portless: Set<String> = []

    /// Whether `host` (lowercased) names this endpoint.
    func contains(_ host: String) -> Bool {
        if portless.contains(host) || ["localhost:\(port)", "[::1]:\(port)"].contains(host) { return true }
        guard host.hasPrefix("127."), let colon = host.lastIndex(of: ":"),
            host[host.index(after: colon)...] == "\(port)"
        else { return false }
        return AddressBytes.parse(String(host[..<colon]))?.count == 4
    }
}

/// The control endpoint: a small HTTP/1.1 server on the proxy's event loop that reads and steers its conditions.
///
/// Lives on the event loop thread; started through `ConditionedProxy.serveControl`. One request per connection.
/// What a browser could send is refused before any route runs: a `Host` that is not this loopback endpoint (DNS
/// rebinding), any foreign `Origin` (a web page), and bodies not sent as `text/x-linkcond` (a form or a no-cors
/// fetch cannot send that type without a preflight, which is never granted). A Unix socket serves this user only.
final class ControlServer: HTTPExchangeServer {
    /// The most control connections held at once (see `ExchangeConnections`), so idle clients cannot take the
    /// descriptors the data path needs.
    static let connectionLimit = 64
    /// How long a client has to send its request, and then again to read the answer.
    static let exchangeTimeout = Duration.seconds(10)
    /// The media type every request body must carry.
    static let bodyType = "text/x-linkcond"

    let address: SocketAddress
    let displayAddress: String
    private let loop: EventLoop
    private let acceptor: TCPAcceptor
    /// Answers the API's routes (`routes` names which of its methods answers each).
    let api: ControlAPI
    private let token: String?
    private let unixPath: String?
    private let logger: Logger
    /// The `Host` values a request may carry (loopback TCP endpoints only); nil accepts any host.
    private let acceptedHosts: LoopbackHosts?
    private let connections: ExchangeConnections
    /// Lends a descriptor for asking the kernel who a client is while the process has none left.
    private let descriptorReserve: DescriptorReserve
    /// The one-time tickets `linkcond dashboard --open` asked for and no page has traded yet.
    private var tickets = DashboardTickets()

    init(address: SocketAddress, unixPath: String?, token: String?, state: ProxyState) throws(SystemError) {
        loop = state.loop
        logger = state.logger
        let socket =
            if let unixPath { try Socket.listening(unixPath: unixPath) } else { try Socket.listening(on: address) }
        acceptor = try TCPAcceptor(adopting: socket, loop: state.loop, logger: state.logger)
        self.address = acceptor.localAddress
        self.unixPath = unixPath
        displayAddress = unixPath ?? "http://\(self.address)"
        self.token = token
        acceptedHosts = unixPath == nil && self.address.isLoopback ? LoopbackHosts(port: self.address.port) : nil
        api = ControlAPI(state: state)
        descriptorReserve = state.descriptorReserve
        connections = ExchangeConnections(
            limit: Self.connectionLimit, acceptor: acceptor, logger: state.logger,
            name: "control endpoint", reserve: state.descriptorReserve)
        do {
            try acceptor.start(shortage: .serve(state.descriptorReserve)) { [weak self] client, _ in
                self?.accepted(client)
            }
        } catch {
            if let unixPath { Socket.removeSocketFile(unixPath) }
            throw error
        }
    }

    private func accepted(_ client: Socket) {
        if unixPath != nil, let peer = try? client.peerUserID(), peer != CurrentUser.id, peer != 0 {
            logger.warning("control socket: refused a connection from user \(peer)")
            client.close()
            return
        }
        connections.admit(ControlConnection(socket: client, server: self))
    }

    /// Whether the dashboard's routes are served here: on a loopback TCP endpoint, where a page can make
    /// same-origin requests (and whose `Host` is checked).
    var servesPages: Bool { acceptedHosts != nil }

    /// Whether requests need a token here (the dashboard's tickets stand in for it).
    var hasToken: Bool { token != nil }

    /// Refuses what a browser or a stranger could send, or hands the request to its route in `routes`; `reply` runs
    /// on the loop. A request no route serves here passes the same checks, then gets 404 or 405 (`unrouted`).
    /// The dashboard's files need no token (they hold no secret) but pass every other check, and are served on a
    /// loopback TCP endpoint only, where a page can make same-origin requests.
    ///
    /// A browser's command line is readable by every user of the machine, so `linkcond dashboard --open` hands it a
    /// one-time ticket instead of the token: `POST /dashboard/ticket` (with the token) makes one, and the page
    /// trades it once for the token with `POST /dashboard/token` (the ticket as its body, no token), within
    /// `DashboardTickets.lifetime`, from a connection of this user's (or root's): another user who read the ticket in the
    /// browser's command line and raced it there gets no token, and voids the ticket; so does a client that reaches
    /// the endpoint through one of linkcond's own relays, whose socket the kernel lists as this user's.
    func respond(to request: HTTPRequest, from connection: ControlConnection, reply: @escaping (HTTPResponse) -> Void) {
        guard let entry = route(request.method, request.path) else {
            return reply(refusal(of: request) ?? Self.unrouted(request))
        }
        if let refusal = refusal(of: request, needsToken: entry.access == .token) { return reply(refusal) }
        let exchange = ControlExchange(request: request, reply: reply)
        switch entry.handler {
        case .api(let handler): handler(api, exchange)
        case .endpoint(let handler): handler(self, exchange, connection)
        }
    }

    /// One of the dashboard's files (`DashboardPage.files`).
    func dashboardFile(_ exchange: ControlExchange) {
        exchange.reply(DashboardPage.file(at: exchange.request.path) ?? Self.unrouted(exchange.request))
    }

    /// `POST /dashboard/ticket`: a one-time ticket for the page to trade for the token.
    func issueTicket(_ exchange: ControlExchange) {
        guard let ticket = tickets.issue(now: loop.clock.now()) else {
            return exchange.reply(
                .error(
                    503,
                    "\(DashboardTickets.limit) dashboard tickets wait to be used; try again within \(DashboardTickets.lifetime.seconds) s"
                ))
        }
        exchange.reply(.text(ticket))
    }

    /// `POST /dashboard/token`: the token for the ticket in the body, once, to a connection of this user's.
    func redeemTicket(_ exchange: ControlExchange, from connection: ControlConnection) {
        guard let token else { return exchange.reply(Self.unrouted(exchange.request)) }
        exchange.reply(redeem(ticket: exchange.request.bodyText, for: token, from: connection))
    }

    private func redeem(ticket: String, for token: String, from connection: ControlConnection) -> HTTPResponse {
        guard tickets.redeem(ticket, now: loop.clock.now()) else {
            return .error(
                403,
                "this dashboard ticket is unknown, used or expired; run \"linkcond dashboard --open\" again, or paste the token"
            )
        }
        let client = descriptorReserve.lending { connection.socket.localClient() }
        guard client.isOwner else {
            logger.warning("control endpoint: \(client) presented a dashboard ticket; it is void now")
            return .error(
                403,
                client == .linkcondItself
                    ? "this dashboard ticket came through one of linkcond's own relays, which relay any user; it is void now"
                    : "this dashboard ticket belongs to another user; it is void now")
        }
        return .text(token)
    }

    /// Why `request` is refused, or nil. An `Origin` passes only when it is this endpoint's own origin: `http://`
    /// followed by the request's `Host`, which has already matched this loopback endpoint (the dashboard's requests).
    private func refusal(of request: HTTPRequest, needsToken: Bool = true) -> HTTPResponse? {
        if let acceptedHosts {
            let host = request.headers["host"]?.lowercased() ?? ""
            guard acceptedHosts.contains(host) else {
                return .error(
                    403,
                    "Host \"\(host.prefix(80))\" is not this control endpoint; expected localhost:\(address.port) or 127.0.0.1:\(address.port) (a web page trying DNS rebinding looks like this)"
                )
            }
        }
        if let origin = request.headers["origin"] {
            let sameOrigin =
                request.headers["host"].map { "http://" + $0.lowercased() } == origin.lowercased()
                && acceptedHosts != nil
            guard sameOrigin else {
                return .error(
                    403,
                    "requests from web pages (Origin \"\(origin.prefix(80))\") are refused: only local programs such as the linkcond command may steer linkcond"
                )
            }
        }
        if let site = request.headers["sec-fetch-site"]?.lowercased(), !["same-origin", "none"].contains(site) {
            return .error(403, "requests from web pages (Sec-Fetch-Site: \(site.prefix(20))) are refused")
        }
        if request.method == "OPTIONS" {
            var response = HTTPResponse.error(405, "the control endpoint answers no cross-origin (CORS) requests")
            let allowed = ControlRoute.methods(allowedOn: request.path)
            if !allowed.isEmpty { response.extraHeaders = [("Allow", allowed.joined(separator: ", "))] }
            return response
        }
        if needsToken, let token {
            let given = request.headers["authorization"] ?? ""
            guard given.hasPrefix("Bearer "), ControlToken.matches(String(given.dropFirst(7)), token) else {
                return .error(
                    401,
                    "this control endpoint needs \"Authorization: Bearer TOKEN\"; the linkcond command finds the token itself, scripts read it from the file \"linkcond run\" names on stderr (or pass --control-token)"
                )
            }
        }
        if !request.body.isEmpty {
            let type = request.headers["content-type"]?.split(separator: ";").first?.trimmingCharacters(
                in: .whitespaces
            ).lowercased()
            guard type == Self.bodyType else {
                return .error(
                    415,
                    "send request bodies as \"Content-Type: \(Self.bodyType)\" (got \(type.map { "\"\($0.prefix(60))\"" } ?? "none"))"
                )
            }
        }
        return nil
    }

    func connectionClosed(_ connection: ControlConnection) {
        connections.closed(connection)
    }

    /// Why its connections ended so far.
    var endings: ExchangeEndings { connections.endings }

    var loopForConnections: EventLoop { loop }

    func close() {
        acceptor.close()
        if let unixPath { Socket.removeSocketFile(unixPath) }
        connections.closeAll()
    }
}

/// One control client: reads a request (bounded in size and time), answers it, closes.
///
/// Lives on the event loop thread. The request must arrive within `exchangeTimeout`, and the answer must be read
/// within another; a client that never reads its answer is closed then, holding one answer's bytes meanwhile, or
/// sooner when newer answers need the room (`ExchangeConnections.answerBytesLimit`). Nothing after the request is read.
final class ControlConnection {
    private enum Phase { case reading, answering, writing, closed }

    let socket: Socket
    private unowned let server: HTTPExchangeServer
    private var registration: EventLoop.RegistrationID?
    private var phase = Phase.reading
    private var reader = HTTPRequestReader()
    private var pending: [UInt8] = []
    /// Bytes of `pending` already written.
    private var written = 0
    private var timeout: EventLoop.TimerID?
    /// Whether its exchange timeout passed, which closes it.
    private(set) var timedOut = false
    /// Its place in the order its server accepted connections.
    var sequence = 0
    /// Its place in the order its server's answers began to wait for their clients.
    var answerOrder = 0
    /// The connections it is one of, told when its answer waits for the client to read it; set when admitted.
    weak var peers: ExchangeConnections?

    init(socket: Socket, server: HTTPExchangeServer) {
        self.socket = socket
        self.server = server
    }

    private var loop: EventLoop { server.loopForConnections }

    /// Whether its request has not fully arrived yet.
    var isWaitingForRequest: Bool { phase == .reading }

    /// The bytes of the answer it holds while its client has not read all of it; 0 before it answers.
    var heldAnswerBytes: Int { phase == .writing ? pending.count : 0 }

    func start() {
        do {
            registration = try loop.register(
                socket.descriptor, interest: Epoll.readable | Epoll.writable | Epoll.edgeTriggered
            ) { [weak self] _ in
                self?.service()
            }
        } catch {
            close()
            return
        }
        timeout = loop.schedule(at: loop.clock.now() + ControlServer.exchangeTimeout) { [weak self] in
            self?.exchangeTimedOut()
        }
        service()
    }

    private func exchangeTimedOut() {
        timeout = nil
        switch phase {
        case .reading:
            timedOut = true
            if reader.bytes.isEmpty { return close() }
            reply(.error(408, "no complete request within \(ControlServer.exchangeTimeout.seconds) s"))
        case .writing:
            timedOut = true
            close()
        case .answering, .closed:
            break
        }
    }

    private func service() {
        switch phase {
        case .reading: readRequest()
        case .writing: flush()
        case .answering, .closed: break
        }
    }

    private func readRequest() {
        var buffer = [UInt8](repeating: 0, count: 16384)
        while phase == .reading {
            let result = buffer.withUnsafeMutableBytes { raw in
                Result { () throws(SystemError) in try socket.read(into: raw) }
            }
            switch result {
            case .failure, .success(.processed(0)):
                close()
                return
            case .success(.wouldBlock):
                return
            case .success(.processed(let count)):
                switch reader.append(buffer[0..<count]) {
                case .incomplete:
                    continue
                case .invalid(let status, let reason):
                    reply(.error(status, reason))
                case .complete(let request, _):
                    phase = .answering
                    reader = HTTPRequestReader()
                    let connection = LoopBound(WeakControlConnection(self))
                    server.respond(to: request, from: self) { response in connection.value.connection?.reply(response) }
                }
            }
        }
    }

    private func reply(_ response: HTTPResponse) {
        guard phase == .reading || phase == .answering else { return }
        phase = .writing
        reader = HTTPRequestReader()
        pending = response.bytes
        if let timeout { loop.cancel(timeout) }
        timeout = loop.schedule(at: loop.clock.now() + ControlServer.exchangeTimeout) { [weak self] in
            self?.exchangeTimedOut()
        }
        flush()
        if phase == .writing { peers?.holdsAnswer(self) }
    }

    private func flush() {
        while written < pending.count {
            let result = pending.withUnsafeBytes { raw in
                Result { () throws(SystemError) in try socket.write(UnsafeRawBufferPointer(rebasing: raw[written...])) }
            }
            switch result {
            case .success(.processed(let count)):
                written += count
            case .success(.wouldBlock):
                return
            case .failure:
                written = pending.count
            }
        }
        close()
    }

    func close() {
        guard phase != .closed else { return }
        phase = .closed
        if let registration { loop.deregister(registration) }
        registration = nil
        if let timeout { loop.cancel(timeout) }
        timeout = nil
        socket.close()
        server.connectionClosed(self)
    }
}

/// A server whose connections `ControlConnection` serves: the control endpoint and the Toxiproxy API.
/// Lives on the event loop thread.
protocol HTTPExchangeServer: AnyObject {
    var loopForConnections: EventLoop { get }
    /// Answers `request`, which arrived on `connection`; `reply` runs on the loop.
    func respond(to request: HTTPRequest, from connection: ControlConnection, reply: @escaping (HTTPResponse) -> Void)
    func connectionClosed(_ connection: ControlConnection)
}

/// A control connection reference that does not keep the connection alive while its request is answered.
struct WeakControlConnection {
    weak var connection: ControlConnection?

    init(_ connection: ControlConnection) { self.connection = connection }
}

extension ConditionedProxy {
    /// Why the control endpoint's connections ended so far, read on the loop thread (tests show with it that a
    /// silent client was closed by the exchange timeout, or displaced); nil without a control endpoint.
    func controlEndings() -> ExchangeEndings? {
        (try? attach { $0.control?.endings }) ?? nil
    }
}
