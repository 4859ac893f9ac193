import Foundation

/// Talks to a running linkcond's control endpoint: one HTTP/1.1 request per call, blocking, with a timeout.
///
/// Used by the command line from its main thread; never on an event loop.
public struct ControlClient: Sendable {
    public var address: ControlAddress
    public var token: String?
    public var timeout: Duration = .seconds(10)

    public init(address: ControlAddress, token: String? = nil) {
        self.address = address
        self.token = token
    }

    public struct Response: Sendable {
        public var status: Int
        public var body: String
    }

    /// The token for `address`: `LINKCOND_CONTROL_TOKEN` if set, else the token file `linkcond run` wrote for a
    /// loopback TCP endpoint in this user's private directory; nil for a Unix socket, which needs none, and for
    /// another host, which must never be sent a local instance's token because its port number matches.
    public static func token(for address: ControlAddress) throws(PrivateFiles.Refusal) -> String? {
        if let environment = ProcessInfo.processInfo.environment["LINKCOND_CONTROL_TOKEN"], !environment.isEmpty {
            return environment
        }
        guard case .tcp(let endpoint) = address, address.isLocalOnly else { return nil }
        return try PrivateFiles.read(ControlAddress.tokenFile(port: endpoint.port))?.trimmingCharacters(
            in: .whitespacesAndNewlines)
    }

    /// Sends one request and returns the status and body; a body goes as `text/x-linkcond`. A Unix socket that
    /// another user owns is refused before connecting.
    public func send(_ method: String, _ path: String, body: String = "") throws -> Response {
        let socketAddress: SocketAddress
        var host = "localhost"
        switch address {
        case .tcp(let endpoint):
            guard let resolved = try endpoint.resolve().first else {
                throw ControlClientError.unreachable(address, "no address")
            }
            socketAddress = resolved
            host = endpoint.description
        case .unix(let path):
            guard let local = SocketAddress(unixPath: path) else {
                throw ControlClientError.unreachable(address, "path too long")
            }
            try PrivateFiles.checkSocketOwner(path)
            socketAddress = local
        }
        let stream: BlockingStream
        do {
            stream = try BlockingStream.connect(to: socketAddress, timeout: timeout)
        } catch {
            throw ControlClientError.unreachable(address, error.errno.description)
        }
        defer { stream.close() }
        let payload = Array(body.utf8)
        var head =
            "\(method) \(path) HTTP/1.1\r\nHost: \(host)\r\nContent-Length: \(payload.count)\r\nConnection: close\r\n"
        if !payload.isEmpty { head += "Content-Type: text/x-linkcond; charset=utf-8\r\n" }
        if let token { head += "Authorization: Bearer \(token)\r\n" }
        try stream.write(Array((head + "\r\n").utf8) + payload)
        let reply = try stream.readToEnd()
        guard let split = reply.firstRange(of: [13, 10, 13, 10]) else { throw ControlClientError.malformed }
        let statusLine =
            String(decoding: reply[..<split.lowerBound], as: UTF8.self).split(separator: "\r\n").first ?? ""
        let words = statusLine.split(separator: " ")
        guard words.count >= 2, let status = Int(words[1]) else { throw ControlClientError.malformed }
        return Response(status: status, body: String(decoding: reply[split.upperBound...], as: UTF8.self))
    }
}

/// Why the command line could not talk to a running linkcond.
public enum ControlClientError: Error, CustomStringConvertible, Sendable {
    case unreachable(ControlAddress, String)
    case malformed

    public var description: String {
        switch self {
        case .unreachable(let address, let reason):
            "no running linkcond answers at \(address) (\(reason)): start one with \"linkcond run …\", or pass --control ADDRESS"
        case .malformed:
            "the control endpoint's answer was not HTTP"
        }
    }
}
