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

    /// The per-user socket a running linkcond serves when it can, and the CLI tries first.
    public static var userDefault: ControlAddress {
        let environment = ProcessInfo.processInfo.environment
        if let runtime = environment["XDG_RUNTIME_DIR"], !runtime.isEmpty {
            return .unix(runtime + "/linkcond.sock")
        }
        return .unix("/tmp/linkcond-\(CurrentUser.id).sock")
    }

    public var description: String {
        switch self {
        case .tcp(let endpoint): "http://\(endpoint)"
        case .unix(let path): path
        }
    }

    /// Whether only this machine can reach the address (loopback or a Unix socket).
    var isLocalOnly: Bool {
        switch self {
        case .unix: true
        case .tcp(let endpoint): ["127.0.0.1", "::1", "localhost"].contains(endpoint.host) || endpoint.host.hasPrefix("127.")
        }
    }
}

/// The control endpoint: a small HTTP/1.1 server on the proxy's event loop that reads and steers its conditions.
///
/// Lives on the event loop thread; started through `ConditionedProxy.serveControl`. One request per connection.
final class ControlServer {
    let address: SocketAddress
    let displayAddress: String
    private let loop: EventLoop
    private let socket: Socket
    private let api: ControlAPI
    private let token: String?
    private let unixPath: String?
    private var registration: EventLoop.RegistrationID?
    private var connections: [Int32: ControlConnection] = [:]

    init(address: SocketAddress, unixPath: String?, token: String?, state: ProxyState) throws(SystemError) {
        loop = state.loop
        if let unixPath {
            socket = try Socket.listening(unixPath: unixPath)
        } else {
            socket = try Socket.listening(on: address)
        }
        self.unixPath = unixPath
        do {
            self.address = try socket.localAddress()
        } catch {
            socket.close()
            throw error
        }
        displayAddress = unixPath ?? "http://\(self.address)"
        self.token = token
        api = ControlAPI(state: state)
        do {
            registration = try loop.register(socket.descriptor, interest: Epoll.readable) { [weak self] _ in self?.acceptPending() }
        } catch {
            socket.close()
            throw error
        }
    }

    private func acceptPending() {
        for _ in 0..<64 {
            guard case .processed(let (client, _))? = try? socket.accept() else { return }
            let connection = ControlConnection(socket: client, server: self)
            connections[client.descriptor] = connection
            connection.start()
        }
    }

    /// Answers one parsed request: token check, then the API.
    func respond(to request: HTTPRequest) -> HTTPResponse {
        if let token, request.headers["authorization"] != "Bearer \(token)" {
            return .error(401, "this control endpoint needs \"Authorization: Bearer TOKEN\" (the token given with --control-token)")
        }
        return api.handle(request)
    }

    func connectionClosed(_ connection: ControlConnection) {
        connections.removeValue(forKey: connection.socket.descriptor)
    }

    var loopForConnections: EventLoop { loop }

    func close() {
        if let registration { loop.deregister(registration) }
        registration = nil
        socket.close()
        if let unixPath { Socket.removeSocketFile(unixPath) }
        for connection in Array(connections.values) { connection.close() }
    }
}

/// One control client: reads a request (bounded in size and time), writes the response, closes.
///
/// Lives on the event loop thread.
final class ControlConnection {
    let socket: Socket
    private unowned let server: ControlServer
    private var registration: EventLoop.RegistrationID?
    private var received: [UInt8] = []
    private var pending: [UInt8] = []
    private var timeout: EventLoop.TimerID?
    private var closed = false

    init(socket: Socket, server: ControlServer) {
        self.socket = socket
        self.server = server
    }

    func start() {
        let loop = server.loopForConnections
        do {
            registration = try loop.register(socket.descriptor, interest: Epoll.readable | Epoll.writable | Epoll.edgeTriggered) { [weak self] _ in
                self?.service()
            }
        } catch {
            socket.close()
            closed = true
            server.connectionClosed(self)
            return
        }
        timeout = loop.schedule(at: loop.clock.now() + .seconds(10)) { [weak self] in
            guard let self, self.pending.isEmpty else { return }
            self.reply(.error(408, "no complete request within 10 s"))
        }
        service()
    }

    private func service() {
        guard !closed else { return }
        if !pending.isEmpty {
            flush()
            return
        }
        var buffer = [UInt8](repeating: 0, count: 16384)
        while true {
            let result = buffer.withUnsafeMutableBytes { raw in Result { () throws(SystemError) in try socket.read(into: raw) } }
            switch result {
            case .failure:
                close()
                return
            case .success(.wouldBlock):
                return
            case .success(.processed(0)):
                close()
                return
            case .success(.processed(let count)):
                received += buffer[0..<count]
                switch HTTPRequest.parse(received) {
                case .incomplete:
                    continue
                case .invalid(let status, let reason):
                    reply(.error(status, reason))
                    return
                case .complete(let request, _):
                    reply(server.respond(to: request))
                    return
                }
            }
        }
    }

    private func reply(_ response: HTTPResponse) {
        if let timeout { server.loopForConnections.cancel(timeout) }
        timeout = nil
        pending = response.bytes
        flush()
    }

    private func flush() {
        while !pending.isEmpty {
            let result = pending.withUnsafeBytes { raw in Result { () throws(SystemError) in try socket.write(raw) } }
            switch result {
            case .success(.processed(let count)):
                pending.removeFirst(count)
            case .success(.wouldBlock):
                return
            case .failure:
                pending.removeAll()
            }
        }
        close()
    }

    func close() {
        guard !closed else { return }
        closed = true
        if let registration { server.loopForConnections.deregister(registration) }
        if let timeout { server.loopForConnections.cancel(timeout) }
        socket.close()
        server.connectionClosed(self)
    }
}
