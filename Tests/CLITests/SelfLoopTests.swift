import CLinuxShims
import Foundation
import Glibc
import LinkConditioner
import LoopbackPeers
import Testing

/// Relays and Toxiproxy proxies that would reach linkcond itself are refused (a relay to itself used to take every
/// descriptor for good), and a Toxiproxy proxy may not listen where it would catch clients of linkcond's own ports.
@Suite(.serialized)
struct SelfLoopTests {
    /// A `toxiproxy-server` (linkcond started under that name) on a loopback port the kernel picks.
    final class ToxiproxyServer {
        let linkcond: RunningLinkcond
        let port: UInt16
        private let directory: URL

        init(extraFlags: [String] = []) throws {
            directory = FileManager.default.temporaryDirectory.appendingPathComponent(
                "linkcond-selfloop-\(getpid())-\(UInt32.random(in: 0...UInt32.max))")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            let server = directory.appendingPathComponent("toxiproxy-server")
            try FileManager.default.createSymbolicLink(at: server, withDestinationURL: LinkcondProcess.executable)
            linkcond = try RunningLinkcond(["-host=127.0.0.1", "-port", "0"] + extraFlags, executable: server)
            let line = try linkcond.readLine()
            guard let port = line.split(separator: ":").last.flatMap({ UInt16($0) }) else {
                throw CLITestError("not a ready line: \(line)")
            }
            self.port = port
        }

        /// Sends one request and returns the status code and body.
        func request(_ method: String, _ path: String, _ body: String = "") throws -> (status: Int, body: String) {
            try SelfLoopTests.request(port: port, method, path, body)
        }

        /// The listen address a proxy's JSON answer gives, as `HOST:PORT`.
        static func listen(in body: String) -> String? {
            guard let range = body.range(of: #""listen":""#) else { return nil }
            return String(body[range.upperBound...].prefix { $0 != "\"" })
        }

        var descriptors: Int { SelfLoopTests.descriptors(of: linkcond.process.processIdentifier) }

        func stop() {
            _ = try? linkcond.stop(signal: SIGTERM)
            try? FileManager.default.removeItem(at: directory)
        }
    }

    /// Sends one HTTP request to 127.0.0.1:`port` and returns the status code and body.
    static func request(port: UInt16, _ method: String, _ path: String, _ body: String = "") throws -> (
        status: Int, body: String
    ) {
        let stream = try BlockingStream.connect(
            to: SocketAddress(numericHost: "127.0.0.1", port: port)!, timeout: .seconds(20))
        defer { stream.close() }
        try stream.write(
            Array(
                "\(method) \(path) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nContent-Length: \(body.utf8.count)\r\n\r\n\(body)"
                    .utf8))
        let answer = String(decoding: try stream.readToEnd(), as: UTF8.self)
        let status = answer.split(separator: " ").dropFirst().first.flatMap { Int($0) } ?? 0
        let text = answer.range(of: "\r\n\r\n").map { String(answer[$0.upperBound...]) } ?? ""
        return (status, text)
    }

    /// The value of `key` for each listener of a `linkcond status --json` answer.
    static func listenerCounts(_ key: String, in json: String) -> [Int] {
        guard let object = try? JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any],
            let listeners = object["listeners"] as? [[String: Any]]
        else { return [] }
        return listeners.map { $0[key] as? Int ?? 0 }
    }

    static func descriptors(of pid: Int32) -> Int {
        ((try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd")) ?? []).count
    }

    /// A loopback TCP port nobody listens on now.
    static func freePort() throws -> UInt16 {
        let server = try TestServer { $0.close() }
        let port = server.port
        server.stop()
        return port
    }

    /// Whether a connection to 127.0.0.1:`port` is refused (nothing listens there).
    static func isRefused(port: UInt16) -> Bool {
        (try? TestConnection.connect(port: port, timeout: 5)).map {
            $0.close()
            return false
        } ?? true
    }

    @Test func aToxiproxyProxyWhoseUpstreamIsItselfIsRefusedInEverySpelling() throws {
        let server = try ToxiproxyServer()
        defer { server.stop() }
        let port = try Self.freePort()
        let descriptorsAtStart = server.descriptors
        let spellings = [
            "127.0.0.1:\(port)", "localhost:\(port)", "[::ffff:127.0.0.1]:\(port)", "127.0.0.2:\(port)",
            "0.0.0.0:\(port)", "[::1]:\(port)", "[::]:\(port)",
        ]

        var answers: [(String, Int, String)] = []
        for (index, upstream) in spellings.enumerated() {
            let answer = try server.request(
                "POST", "/proxies", #"{"name":"loop\#(index)","listen":"127.0.0.1:\#(port)","upstream":"\#(upstream)"}"#
            )
            answers.append((upstream, answer.status, answer.body))
        }
        let refusedConnect = Self.isRefused(port: port)
        let listing = try server.request("GET", "/proxies")
        let version = try server.request("GET", "/version")

        for (upstream, status, body) in answers {
            #expect(status == 400, "upstream \(upstream): \(status) \(body)")
            #expect(body.contains("linkcond's own") && body.contains(#""status":400"#), "upstream \(upstream): \(body)")
        }
        #expect(refusedConnect, "a refused proxy still listens on \(port)")
        #expect(
            listing.status == 200 && listing.body.trimmingCharacters(in: .whitespacesAndNewlines) == "{}", "\(listing)")
        #expect(version.status == 200)
        #expect(
            server.descriptors <= descriptorsAtStart + 2,
            "\(server.descriptors) descriptors, \(descriptorsAtStart) at start")
    }

    @Test func aToxiproxyProxyMayNotRelayToTheAPIOrAnotherProxy() throws {
        let server = try ToxiproxyServer()
        defer { server.stop() }
        let first = try server.request(
            "POST", "/proxies", #"{"name":"a","listen":"127.0.0.1:0","upstream":"127.0.0.1:9"}"#)
        let a = try #require(ToxiproxyServer.listen(in: first.body), "\(first)")
        let aPort = try #require(a.split(separator: ":").last.flatMap { UInt16($0) })

        let toAPI = try server.request(
            "POST", "/proxies", #"{"name":"api","listen":"127.0.0.1:0","upstream":"localhost:\#(server.port)"}"#)
        let toA = try server.request("POST", "/proxies", #"{"name":"b","listen":"127.0.0.1:0","upstream":"\#(a)"}"#)
        let populated = try server.request(
            "POST", "/populate", #"[{"name":"c","listen":"127.0.0.1:0","upstream":"[::1]:\#(aPort)"}]"#)
        // A disabled proxy binds nothing, so nothing is checked until it is enabled: by PATCH, or by reset.
        let disabled = try server.request(
            "POST", "/proxies", #"{"name":"d","listen":"127.0.0.1:0","upstream":"\#(a)","enabled":false}"#)
        let enabled = try server.request("PATCH", "/proxies/d", #"{"enabled":true}"#)
        let reset = try server.request("POST", "/reset")
        // The loop a -> e -> a: made by changing a's upstream to e once e relays to a.
        let e = try server.request("POST", "/proxies", #"{"name":"e","listen":"127.0.0.1:0","upstream":"127.0.0.1:9"}"#)
        let eListen = try #require(ToxiproxyServer.listen(in: e.body), "\(e)")
        let eToA = try server.request("PATCH", "/proxies/e", #"{"upstream":"\#(a)"}"#)
        let aToItself = try server.request("PATCH", "/proxies/a", #"{"upstream":"\#(a)"}"#)
        let version = try server.request("GET", "/version")

        #expect(first.status == 201 && e.status == 201 && disabled.status == 201)
        #expect(toAPI.status == 400 && toAPI.body.contains("Toxiproxy API on 127.0.0.1:\(server.port)"), "\(toAPI)")
        #expect(toA.status == 400 && toA.body.contains(#"Toxiproxy proxy \"a\""#), "\(toA)")
        #expect(populated.status == 400 && populated.body.contains("linkcond's own"), "\(populated)")
        #expect(enabled.status == 400 && enabled.body.contains("linkcond's own"), "\(enabled)")
        #expect(reset.status == 400 && reset.body.contains("linkcond's own"), "\(reset)")
        #expect(eToA.status == 400 && eToA.body.contains("linkcond's own"), "\(eToA)")
        #expect(aToItself.status == 400, "\(aToItself)")
        #expect(version.status == 200)
        #expect(!eListen.isEmpty)
    }

    @Test func aToxiproxyProxyMayNotListenOnAnotherLoopbackAddressOfLinkcondsOwnPorts() throws {
        let server = try ToxiproxyServer()
        defer { server.stop() }
        let first = try server.request(
            "POST", "/proxies", #"{"name":"a","listen":"127.0.0.1:0","upstream":"127.0.0.1:9"}"#)
        let aPort = try #require(ToxiproxyServer.listen(in: first.body)?.split(separator: ":").last)

        let answers = try ["[::1]:\(server.port)", "127.0.0.2:\(server.port)", "[::1]:\(aPort)", "127.0.0.3:\(aPort)"]
            .map { listen in
                (
                    listen,
                    try server.request(
                        "POST", "/proxies",
                        #"{"name":"x\#(listen.count)","listen":"\#(listen)","upstream":"127.0.0.1:9"}"#)
                )
            }

        for (listen, answer) in answers {
            #expect(answer.status == 400 && answer.body.contains("would share port"), "listen \(listen): \(answer)")
        }
        #expect(try server.request("GET", "/version").status == 200)
    }

    @Test func runRefusesARelayToItselfOrToItsOwnControlEndpoint() throws {
        let port = try Self.freePort()
        let toItself = try LinkcondProcess.run([
            "run", "--listen", "127.0.0.1:\(port)", "--upstream", "127.0.0.1:\(port)",
        ])
        let control = try Self.freePort()
        let toControl = try LinkcondProcess.run([
            "run", "--listen", "127.0.0.1:0", "--upstream", "localhost:\(control)",
            "--control", "127.0.0.1:\(control)",
        ])

        #expect(
            toItself.status != 0 && toItself.stderr.contains("upstream 127.0.0.1:\(port) is linkcond's own tcp relay"),
            "\(toItself)")
        #expect(
            toControl.status != 0 && toControl.stderr.contains("control endpoint on 127.0.0.1:\(control)"),
            "\(toControl)")
    }

    /// Runs `body` on a thread of its own that entered the network namespace `name`, and returns its result.
    static func inNamespace<T: Sendable>(_ name: String, _ body: @escaping @Sendable () throws -> T) throws -> T {
        let result = LockedBox<Result<T, any Error>?>(nil)
        let done = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            defer { done.signal() }
            let descriptor = open("/run/netns/\(name)", O_RDONLY | O_CLOEXEC)
            guard descriptor >= 0, clinux_setns(descriptor, clinux_clone_newnet()) == 0 else {
                result.mutate { $0 = .failure(CLITestError("cannot enter network namespace \(name): errno \(errno)")) }
                return
            }
            close(descriptor)
            let outcome = Result { try body() }
            result.mutate { $0 = outcome }
        }
        guard done.wait(timeout: .now() + 120) == .success, let outcome = result.value else {
            throw CLITestError("the thread in namespace \(name) did not finish")
        }
        return try outcome.get()
    }

    static func ip(_ arguments: String...) throws {
        let result = try LinkcondProcess.run(Array(arguments), executable: URL(fileURLWithPath: "/usr/sbin/ip"))
        guard result.status == 0 else { throw CLITestError("ip \(arguments.joined(separator: " ")): \(result.stderr)") }
    }

    /// Two proxies relaying to each other through an address that became local only after both were made, which
    /// no check at creation can see: the connection that reaches the other proxy from linkcond's own upstream
    /// socket is closed at accept and counted, so the client's connection ends and descriptors stay few. Runs in a
    /// network namespace of its own (root, as CI runs), where the test may add an address.
    @Test func aLoopCreationCouldNotSeeIsClosedAtAcceptAndCounted() throws {
        guard getuid() == 0 else { return }
        let namespace = "lc-loop-\(getpid())-\(UInt16.random(in: 0...UInt16.max))"
        try Self.ip("netns", "add", namespace)
        defer { _ = try? Self.ip("netns", "del", namespace) }
        try Self.ip("-n", namespace, "link", "set", "lo", "up")
        let linkcond = try RunningLinkcond(
            [
                "netns", "exec", namespace, LinkcondProcess.executable.path, "run",
                "--toxiproxy", "127.0.0.1:0", "--allow-remote", "--control", "127.0.0.1:0",
            ],
            executable: URL(fileURLWithPath: "/usr/sbin/ip"))
        defer { _ = try? linkcond.stop(signal: SIGTERM) }
        let api = try linkcond.readReadyPort()
        let control = try linkcond.readReadyPort()
        let pid = linkcond.process.processIdentifier

        let created = try Self.inNamespace(namespace) {
            [
                try Self.request(
                    port: api, "POST", "/proxies",
                    #"{"name":"a","listen":"0.0.0.0:20001","upstream":"198.18.7.7:20002"}"#),
                try Self.request(
                    port: api, "POST", "/proxies", #"{"name":"b","listen":"0.0.0.0:20002","upstream":"198.18.7.7:9"}"#),
                try Self.request(port: api, "PATCH", "/proxies/b", #"{"upstream":"198.18.7.7:20001"}"#),
            ].map(\.status)
        }
        try Self.ip("-n", namespace, "addr", "add", "198.18.7.7/32", "dev", "lo")
        // The client's connection ends (closed or reset) once the loop is cut; a receive timeout would mean it hangs.
        let clientEnding = try Self.inNamespace(namespace) { () -> String in
            let client = try TestConnection.connect(port: 20001, timeout: 20)
            defer { client.close() }
            try client.send(Array("hello".utf8))
            do { return "closed after \(try client.drain().count) bytes" } catch { return "\(error)" }
        }
        let descriptorsAfter = Self.descriptors(of: pid)
        let status = try LinkcondProcess.run(
            [
                "netns", "exec", namespace, LinkcondProcess.executable.path, "status", "--json",
                "--control", "http://127.0.0.1:\(control)",
            ], executable: URL(fileURLWithPath: "/usr/sbin/ip"))
        let looped = Self.listenerCounts("connectionsLooped", in: status.stdout).reduce(0, +)

        #expect(created == [201, 201, 200])
        #expect(clientEnding.hasPrefix("closed") || clientEnding.contains("reset"), "\(clientEnding)")
        #expect(looped >= 1, "\(status)")
        #expect(descriptorsAfter < 64, "linkcond holds \(descriptorsAfter) descriptors")
        #expect(
            linkcond.stderrText.contains("linkcond's own upstream connection (a relay loop)"), "\(linkcond.stderrText)")
    }
}
