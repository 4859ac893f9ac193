import Foundation
import Glibc
import LoopbackPeers
import Testing

@testable import LinkConditioner

extension ConditionedProxy {
    /// A SOCKS5 and HTTP proxy front end on 127.0.0.1 port 0.
    static func frontEnd(profile: Profile = .none, settings: ProxyFrontEndSettings = ProxyFrontEndSettings()) throws
        -> ConditionedProxy
    {
        try ConditionedProxy(
            listeners: [ListenerSpec(listen: Endpoint(host: "127.0.0.1", port: 0), kind: .proxy(settings))],
            profile: profile)
    }

    /// An IPv6 echo endpoint: an unconditioned TCP relay on [::1] port 0 in front of `echo`.
    static func ipv6Echo(inFrontOf echo: TestServer) throws -> ConditionedProxy {
        try ConditionedProxy(
            listeners: [
                ListenerSpec(
                    listen: Endpoint(host: "::1", port: 0), upstream: Endpoint(host: "127.0.0.1", port: echo.port))
            ],
            profile: .none)
    }
}

/// A front end (as `ConditionedProxy.frontEnd` makes it) and one client connected to it with `timeout`; the caller
/// closes the client, then stops the proxy.
func connectedFrontEnd(
    profile: Profile = .none, settings: ProxyFrontEndSettings = ProxyFrontEndSettings(), timeout: Double = 5
) throws -> (proxy: ConditionedProxy, client: TestConnection) {
    let proxy = try ConditionedProxy.frontEnd(profile: profile, settings: settings)
    do {
        return (proxy, try TestConnection.connect(port: proxy.port, timeout: timeout))
    } catch {
        proxy.stop()
        throw error
    }
}

/// An echo server, a TCP relay in front of it under `profile`, and one client connected through the relay.
struct EchoRelay {
    let echo: TestServer
    let proxy: ConditionedProxy
    let client: TestConnection

    init(profile: Profile) throws {
        let echo = try TestServer.echo()
        let proxy: ConditionedProxy
        do {
            proxy = try ConditionedProxy.inFront(of: echo.port, profile: profile)
        } catch {
            echo.stop()
            throw error
        }
        do {
            client = try TestConnection.connect(port: proxy.port, timeout: 30)
        } catch {
            proxy.stop()
            echo.stop()
            throw error
        }
        self.echo = echo
        self.proxy = proxy
    }

    /// Closes the client, then stops the relay and the echo server.
    func close() {
        client.close()
        proxy.stop()
        echo.stop()
    }
}

/// A profile with `delay` each way and nothing else.
func delayProfile(_ delay: Duration, dnsDelay: Duration = .zero) -> Profile {
    var profile = Profile.none
    profile.uplink.delay = delay
    profile.downlink.delay = delay
    profile.dnsDelay = dnsDelay
    return profile
}

/// The SOCKS5 client side, written out byte by byte as RFC 1928 and RFC 1929 give it.
enum SOCKS5Client {
    static func greeting(methods: [UInt8] = [0x00]) -> [UInt8] { [0x05, UInt8(methods.count)] + methods }

    static func credentials(user: String, password: String) -> [UInt8] {
        [0x01, UInt8(user.utf8.count)] + Array(user.utf8) + [UInt8(password.utf8.count)] + Array(password.utf8)
    }

    static func connect(ipv4: [UInt8], port: UInt16, command: UInt8 = 0x01) -> [UInt8] {
        [0x05, command, 0x00, 0x01] + ipv4 + [UInt8(port >> 8), UInt8(port & 0xFF)]
    }

    static func connect(ipv6: [UInt8], port: UInt16) -> [UInt8] {
        [0x05, 0x01, 0x00, 0x04] + ipv6 + [UInt8(port >> 8), UInt8(port & 0xFF)]
    }

    static func connect(name: String, port: UInt16) -> [UInt8] {
        [0x05, 0x01, 0x00, 0x03, UInt8(name.utf8.count)] + Array(name.utf8) + [UInt8(port >> 8), UInt8(port & 0xFF)]
    }

    static let loopback: [UInt8] = [127, 0, 0, 1]
    static let loopbackIPv6: [UInt8] = [UInt8](repeating: 0, count: 15) + [1]

    /// Reads one request reply (`05 REP 00 ATYP ADDR PORT`) and returns its reply code.
    static func readReply(_ connection: TestConnection) throws -> UInt8 {
        let head = try connection.receive(exactly: 4)
        let addressLength = head[3] == 0x04 ? 16 : 4
        _ = try connection.receive(exactly: addressLength + 2)
        return head[1]
    }

    /// Offers no authentication and checks that the proxy selects it.
    static func greet(_ connection: TestConnection) throws {
        try connection.send(greeting())
        guard try connection.receive(exactly: 2) == [0x05, 0x00] else { throw TestError("no-auth method not selected") }
    }

    /// Negotiates no authentication and asks for `request`; returns the reply code.
    static func negotiate(_ connection: TestConnection, request: [UInt8]) throws -> UInt8 {
        try greet(connection)
        try connection.send(request)
        return try readReply(connection)
    }
}

extension TestConnection {
    /// Reads until the peer closes or resets; returns what arrived before.
    func readUntilClosed(limit: Int = 1 << 20) -> [UInt8] {
        var bytes: [UInt8] = []
        while bytes.count < limit, let chunk = try? receive(), !chunk.isEmpty { bytes += chunk }
        return bytes
    }

    /// Reads until the peer closes or resets; returns what arrived before as UTF-8 text.
    func readTextUntilClosed() -> String { String(decoding: readUntilClosed(), as: UTF8.self) }
}

/// Reads HTTP responses with Content-Length bodies from one connection, keeping bytes of the next response.
final class HTTPResponseReader {
    let connection: TestConnection
    private var buffer: [UInt8] = []

    init(_ connection: TestConnection) { self.connection = connection }

    /// The next response's status code, head and body.
    func next() throws -> (status: Int, head: String, body: [UInt8]) {
        var headEnd: Int?
        while true {
            headEnd =
                buffer.count < 4
                ? nil
                : (0...(buffer.count - 4)).first {
                    buffer[$0] == 13 && buffer[$0 + 1] == 10 && buffer[$0 + 2] == 13 && buffer[$0 + 3] == 10
                }
            if headEnd != nil { break }
            let chunk = try connection.receive()
            guard !chunk.isEmpty else {
                throw TestError("end of stream inside a response head: \(String(decoding: buffer, as: UTF8.self))")
            }
            buffer += chunk
        }
        let head = String(decoding: buffer[..<headEnd!], as: UTF8.self)
        let status = Int(head.split(separator: " ").dropFirst().first ?? "") ?? -1
        let length =
            head.split(separator: "\r\n").first { $0.lowercased().hasPrefix("content-length:") }
            .flatMap { Int($0.split(separator: ":")[1].trimmingCharacters(in: .whitespaces)) } ?? 0
        buffer.removeFirst(headEnd! + 4)
        while buffer.count < length {
            let chunk = try connection.receive()
            guard !chunk.isEmpty else { throw TestError("end of stream inside a response body") }
            buffer += chunk
        }
        let body = Array(buffer.prefix(length))
        buffer.removeFirst(length)
        return (status, head, body)
    }
}

/// An HTTP/1.1 origin on 127.0.0.1 that keeps connections alive: `GET /bytes/N` answers N bytes of `Payload`
/// (seed N), any other path answers the request head and body it received. Records every request head and connection.
final class TestHTTPOrigin: @unchecked Sendable {
    let server: TestServer
    let requestHeads = LockedBox<[String]>([])
    let connections = LockedBox(0)
    var port: UInt16 { server.port }

    init() throws {
        let heads = requestHeads
        let connections = connections
        server = try TestServer { connection in
            defer { connection.close() }
            connections.mutate { $0 += 1 }
            var buffer: [UInt8] = []
            while true {
                var end: Int?
                while end == nil {
                    end =
                        buffer.count < 4
                        ? nil
                        : (0...(buffer.count - 4)).first {
                            buffer[$0] == 13 && buffer[$0 + 1] == 10 && buffer[$0 + 2] == 13 && buffer[$0 + 3] == 10
                        }
                    if end == nil {
                        guard let chunk = try? connection.receive(), !chunk.isEmpty else { return }
                        buffer += chunk
                    }
                }
                let head = String(decoding: buffer[..<end!], as: UTF8.self)
                buffer.removeFirst(end! + 4)
                let contentLength =
                    head.split(separator: "\r\n").first { $0.lowercased().hasPrefix("content-length:") }
                    .flatMap { Int($0.split(separator: ":")[1].trimmingCharacters(in: .whitespaces)) } ?? 0
                while buffer.count < contentLength {
                    guard let chunk = try? connection.receive(), !chunk.isEmpty else { return }
                    buffer += chunk
                }
                let requestBody = Array(buffer.prefix(contentLength))
                buffer.removeFirst(contentLength)
                heads.mutate { $0.append(head) }
                let path = head.split(separator: " ").dropFirst().first.map(String.init) ?? "/"
                var body: [UInt8] = []
                if path.hasPrefix("/bytes/"), let size = Int(path.dropFirst("/bytes/".count)) {
                    Payload(size: size, seed: UInt64(size)).forEachBlock { body += $0 }
                } else {
                    body = Array(head.utf8) + requestBody
                }
                let closes = head.lowercased().contains("connection: close")
                let response =
                    "HTTP/1.1 200 OK\r\nContent-Length: \(body.count)\r\n\(closes ? "Connection: close\r\n" : "")\r\n"
                guard (try? connection.send(Array(response.utf8) + body)) != nil, !closes else { return }
            }
        }
    }

    func stop() { server.stop() }
}

/// What `runCurl` returns.
typealias CurlResult = (status: Int32, digest: StreamDigest, writeOut: String)

/// Has curl fetch through a fresh front end from a fresh `TestHTTPOrigin`, with the arguments `arguments` makes of
/// their ports. When curl is not installed, records `unavailable` as an issue and returns nil.
func curlThroughFrontEnd(
    unavailable: Comment, arguments: (_ proxyPort: UInt16, _ originPort: UInt16) -> [String],
    sourceLocation: SourceLocation = #_sourceLocation
) throws -> CurlResult? {
    let origin = try TestHTTPOrigin()
    defer { origin.stop() }
    let proxy = try ConditionedProxy.frontEnd()
    defer { proxy.stop() }
    guard let result = try runCurl(arguments(proxy.port, origin.port)) else {
        Issue.record(unavailable, sourceLocation: sourceLocation)
        return nil
    }
    return result
}

/// Expects curl to have exited successfully with exactly the body `TestHTTPOrigin` sends for `/bytes/size`.
func expectOriginBody(_ result: CurlResult, size: Int, sourceLocation: SourceLocation = #_sourceLocation) {
    #expect(result.status == 0, sourceLocation: sourceLocation)
    #expect(result.digest.count == size, sourceLocation: sourceLocation)
    #expect(result.digest.value == originBodyDigest(size: size).value, sourceLocation: sourceLocation)
}

/// Runs curl with `arguments`, writing the body to a temporary file; returns its exit status, the file's digest and
/// the `-w` output. Returns nil when curl is not installed.
func runCurl(_ arguments: [String], timeout: Double = 60) throws -> CurlResult? {
    guard
        let curl = ["/usr/bin/curl", "/usr/local/bin/curl", "/bin/curl"].first(where: {
            FileManager.default.isExecutableFile(atPath: $0)
        })
    else {
        return nil
    }
    let output = FileManager.default.temporaryDirectory.appendingPathComponent("linkcond-curl-\(UUID().uuidString)")
    defer { try? FileManager.default.removeItem(at: output) }
    let process = Process()
    process.executableURL = URL(fileURLWithPath: curl)
    process.arguments = ["--silent", "--show-error", "--max-time", "\(Int(timeout))", "-o", output.path] + arguments
    process.environment = [:]
    let pipe = Pipe()
    process.standardOutput = pipe
    try process.run()
    let writeOut = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    process.waitUntilExit()
    var digest = StreamDigest()
    if let data = FileManager.default.contents(atPath: output.path) { digest.add([UInt8](data)) }
    return (process.terminationStatus, digest, writeOut)
}

/// The digest of the body `TestHTTPOrigin` sends for `/bytes/size`.
func originBodyDigest(size: Int) -> StreamDigest { Payload(size: size, seed: UInt64(size)).digest }

extension ConditionedProxy {
    /// Holds the proxy's event loop thread until the returned closure is called, so that what peers send meanwhile
    /// waits in the kernel, as it does while the loop is busy on a loaded machine.
    func holdLoop() -> @Sendable () -> Void {
        let held = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            _ = try? self.attach { _ in
                held.signal()
                release.wait()
            }
        }
        held.wait()
        return { release.signal() }
    }
}
