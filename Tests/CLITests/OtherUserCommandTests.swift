import Foundation
import LinkConditioner
import LoopbackPeers
import Testing

/// What another local user's program (uid 65534, run through setpriv) may do with a running linkcond's loopback
/// Toxiproxy API and control endpoint: nothing, unless the owner allows it with the control token or
/// `--toxiproxy-allow-other-users`. The CI runs as root, so linkcond runs as root and the stranger as nobody.
@Suite(
    .serialized,
    .enabled(
        if: getuid() == 0 && FileManager.default.isExecutableFile(atPath: "/usr/bin/setpriv")
            && FileManager.default.isExecutableFile(atPath: "/usr/bin/python3"), "needs root, setpriv and python3"))
struct OtherUserCommandTests {
    static let token = "0123456789abcdef0123456789abcdef"
    static let owned = #"{"name":"owned","listen":"127.0.0.1:0","upstream":"127.0.0.1:9","enabled":false}"#

    /// linkcond with the Toxiproxy API and a control endpoint on loopback, the control token given in the
    /// environment (so no token file is written); returns it with the API's port.
    static func start(_ extra: [String] = []) throws -> (RunningLinkcond, UInt16) {
        let linkcond = try RunningLinkcond(
            ["run", "--toxiproxy", "127.0.0.1:0", "--control", "127.0.0.1:0"] + extra,
            environment: ["LINKCOND_CONTROL_TOKEN": token])
        let port = try #require(try linkcond.readLine().split(separator: ":").last.flatMap { UInt16($0) })
        return (linkcond, port)
    }

    @Test func anotherUsersToxiproxyClientIsRefusedWithToxiproxysErrorAndChangesNothing() throws {
        let (linkcond, port) = try Self.start()
        defer { _ = try? linkcond.stop(signal: SIGTERM) }
        let created = try Self.request(port, "POST", "/proxies", Self.owned)
        let before = try Self.request(port, "GET", "/proxies")

        let answers = try [
            ("GET", "/proxies", ""), ("GET", "/proxies/owned", ""),
            ("POST", "/proxies", #"{"name":"theirs","listen":"127.0.0.1:0","upstream":"127.0.0.1:9"}"#),
            ("POST", "/proxies/owned", #"{"upstream":"127.0.0.1:10"}"#),
            ("POST", "/proxies/owned/toxics", #"{"type":"latency","attributes":{"latency":1000}}"#),
            ("DELETE", "/proxies/owned", ""), ("POST", "/reset", ""),
        ]
        .map { try OtherUser.send(port: port, $0.0, $0.1, body: $0.2) }
        let after = try Self.request(port, "GET", "/proxies")

        #expect(created.hasPrefix("HTTP/1.1 201 "), "\(created)")
        for answer in answers {
            #expect(answer.hasPrefix("HTTP/1.1 403 "), "\(answer)")
            #expect(answer.contains(#""status":403"#) && answer.contains("user 65534"), "\(answer)")
            #expect(
                answer.contains("--toxiproxy-allow-other-users") && answer.contains("Authorization: Bearer"),
                "\(answer)")
            #expect(!answer.contains("127.0.0.1:9"), "the owner's proxy leaked: \(answer)")
        }
        #expect(after == before, "another user changed the proxies:\n\(before)\n\(after)")
        #expect(
            after.contains(#""upstream":"127.0.0.1:9""#) && !after.contains("theirs") && !after.contains("latency"),
            "\(after)")
    }

    /// A client that can send a header gets in with the control token, which only the owner can read.
    @Test func anotherUserWithTheControlTokenIsServed() throws {
        let (linkcond, port) = try Self.start()
        defer { _ = try? linkcond.stop(signal: SIGTERM) }

        let wrongToken = try OtherUser.send(
            port: port, "GET", "/proxies", headers: ["Authorization: Bearer \(String(Self.token.reversed()))"])
        let created = try OtherUser.send(
            port: port, "POST", "/proxies", body: Self.owned, headers: ["Authorization: Bearer \(Self.token)"])

        #expect(wrongToken.hasPrefix("HTTP/1.1 403 "), "\(wrongToken)")
        #expect(created.hasPrefix("HTTP/1.1 201 "), "\(created)")
    }

    @Test func allowOtherUsersServesEveryLocalUser() throws {
        let (linkcond, port) = try Self.start(["--toxiproxy-allow-other-users"])
        defer { _ = try? linkcond.stop(signal: SIGTERM) }

        let created = try OtherUser.send(port: port, "POST", "/proxies", body: Self.owned)
        let listed = try Self.request(port, "GET", "/proxies/owned")

        #expect(created.hasPrefix("HTTP/1.1 201 "), "\(created)")
        #expect(listed.hasPrefix("HTTP/1.1 200 "), "\(listed)")
    }

    @Test func toxiproxyServerTakesAllowOtherUsers() throws {
        let (directory, server) = try ToxiproxyCommandTests.toxiproxyServerLink()
        defer { try? FileManager.default.removeItem(at: directory) }

        let strict = try RunningLinkcond(
            ["-host", "127.0.0.1", "-port", "0"], environment: ["LINKCOND_CONTROL_TOKEN": Self.token],
            executable: server)
        defer { _ = try? strict.stop(signal: SIGTERM) }
        let strictPort = try #require(try strict.readLine().split(separator: ":").last.flatMap { UInt16($0) })
        let open = try RunningLinkcond(
            ["-host", "127.0.0.1", "-port", "0", "-allow-other-users"],
            environment: ["LINKCOND_CONTROL_TOKEN": Self.token], executable: server)
        defer { _ = try? open.stop(signal: SIGTERM) }
        let openPort = try #require(try open.readLine().split(separator: ":").last.flatMap { UInt16($0) })

        let refused = try OtherUser.send(port: strictPort, "GET", "/proxies")
        let served = try OtherUser.send(port: openPort, "GET", "/proxies")

        #expect(refused.hasPrefix("HTTP/1.1 403 ") && refused.contains("-allow-other-users"), "\(refused)")
        #expect(served.hasPrefix("HTTP/1.1 200 "), "\(served)")
    }

    @Test func allowOtherUsersNeedsTheToxiproxyAPI() throws {
        let result = try LinkcondProcess.run(["run", "--toxiproxy-allow-other-users"])

        #expect(result.status == 2)
        #expect(result.stderr.contains("--toxiproxy-allow-other-users needs --toxiproxy"), "\(result.stderr)")
    }

    /// A relay whose upstream is the control endpoint would make linkcond's own socket the client the endpoint
    /// sees, which the kernel lists as the owner's, so another user could trade a dashboard ticket through it: such
    /// a relay is refused at start (see SelfLoopTests), and the endpoint stays the owner's alone.
    @Test func aRelayToTheControlEndpointIsRefusedSoNoTicketCanBeSentThroughIt() throws {
        let controlPort = try Self.freePort()
        let result = try LinkcondProcess.run(
            [
                "run", "--listen", "127.0.0.1:0", "--upstream", "127.0.0.1:\(controlPort)",
                "--control", "127.0.0.1:\(controlPort)",
            ],
            environment: ["LINKCOND_CONTROL_TOKEN": Self.token])

        #expect(result.status != 0)
        #expect(
            result.stderr.contains("control endpoint on 127.0.0.1:\(controlPort)")
                && result.stderr.contains("linkcond's own"),
            "\(result.stderr)")
        #expect(!result.stdout.contains("ready control"))
    }

    /// One request from this process (the owner's) to 127.0.0.1:`port`; the whole answer.
    static func request(
        _ port: UInt16, _ method: String, _ path: String, _ body: String = "", headers: [String] = [],
        host: String? = nil
    ) throws -> String {
        let stream = try BlockingStream.connect(
            to: SocketAddress(numericHost: "127.0.0.1", port: port)!, timeout: .seconds(20))
        defer { stream.close() }
        let head =
            [
                "\(method) \(path) HTTP/1.1", "Host: \(host ?? "127.0.0.1:\(port)")", "User-Agent: Go-http-client/1.1",
                "Content-Length: \(body.utf8.count)",
            ] + headers
        try stream.write(Array((head.joined(separator: "\r\n") + "\r\n\r\n" + body).utf8))
        return String(decoding: try stream.readToEnd(), as: UTF8.self)
    }

    /// A ticket from the control endpoint at `port`, asked with the token.
    static func ticket(_ port: UInt16) throws -> String {
        let answer = try Self.request(
            port, "POST", "/dashboard/ticket", headers: ["Authorization: Bearer \(token)"],
            host: "127.0.0.1:\(port)")
        #expect(answer.hasPrefix("HTTP/1.1 200 "), "\(answer)")
        return try #require(
            answer.components(separatedBy: "\r\n\r\n").last?.trimmingCharacters(in: .whitespacesAndNewlines))
    }

    /// A loopback port free a moment ago (bound to port 0 and closed), for an endpoint whose port a relay must
    /// know before it starts.
    static func freePort() throws -> UInt16 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = loopbackAddress()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0
            }
        }
        guard bound else { throw CLITestError("no free port: \(errno)") }
        return UInt16(bigEndian: address.sin_port)
    }
}

/// A client of another user: python3 run as uid 65534 through setpriv, sending one HTTP request to 127.0.0.1.
enum OtherUser {
    /// Sends one request to 127.0.0.1:`port` as uid 65534 and returns the whole answer.
    static func send(
        port: UInt16, _ method: String, _ path: String, body: String = "", host: String? = nil,
        headers: [String] = []
    ) throws -> String {
        let head =
            [
                "\(method) \(path) HTTP/1.1", "Host: \(host ?? "127.0.0.1:\(port)")", "User-Agent: python-urllib/3.11",
                "Content-Length: \(body.utf8.count)",
            ] + headers
        return try exchangeAsAnotherUser(port: port, head.joined(separator: "\r\n") + "\r\n\r\n" + body)
    }
}
