import Foundation
import LoopbackPeers
import Testing

@testable import LinkConditioner

/// A proxy with its control endpoint on 127.0.0.1, spoken to in raw HTTP as a browser or a hostile local program would.
final class ControlEndpointUnderTest: Sendable {
    let proxy: ConditionedProxy
    let port: UInt16
    let token: String?

    init(token: String? = nil, profile: Profile = Profile.builtIn(named: "edge")!) throws {
        proxy = try ConditionedProxy.inFront(of: 9, profile: profile)
        self.token = token
        do {
            let served = try proxy.serveControl(at: .tcp(Endpoint(host: "127.0.0.1", port: 0)), token: token)
            port = try #require(served.split(separator: ":").last.flatMap { UInt16($0) })
        } catch {
            proxy.stop()
            throw error
        }
    }

    /// Sends `text` as is and returns the whole answer (the endpoint closes after one).
    func raw(_ text: String) throws -> String {
        try raw(Array(text.utf8))
    }

    func raw(_ bytes: [UInt8], timeout: Duration = .seconds(20)) throws -> String {
        let stream = try BlockingStream.connect(
            to: SocketAddress(numericHost: "127.0.0.1", port: port)!, timeout: timeout)
        defer { stream.close() }
        try stream.write(bytes)
        return String(decoding: try stream.readToEnd(), as: UTF8.self)
    }

    /// A well-formed request with the right Host (and the token, if any), plus `extra` header lines.
    func request(
        _ method: String, _ path: String, body: String = "", contentType: String? = "text/x-linkcond",
        host: String? = nil, extra: [String] = []
    ) throws -> String {
        var lines = [
            "\(method) \(path) HTTP/1.1", "Host: \(host ?? "127.0.0.1:\(port)")", "Content-Length: \(body.utf8.count)",
        ]
        if let contentType, !body.isEmpty { lines.append("Content-Type: \(contentType)") }
        if let token { lines.append("Authorization: Bearer \(token)") }
        return try raw((lines + extra).joined(separator: "\r\n") + "\r\n\r\n" + body)
    }

    func stop() { proxy.stop() }
}

/// The control endpoint takes requests from local programs only, parses them strictly, and reads no files.
@Suite(.serialized)
struct ControlEndpointSecurityTests {
    @Test(arguments: ["/status?=", "/status?&=&", "/status?==", "/status?a=%zz&b"])
    func oddQueryStringsAreAnsweredAndTheProcessLives(_ target: String) throws {
        let endpoint = try ControlEndpointUnderTest()
        defer { endpoint.stop() }

        let answer = try endpoint.request("GET", target)
        let after = try endpoint.request("GET", "/profile")

        #expect(answer.hasPrefix("HTTP/1.1 200 "), "\(answer)")
        #expect(after.hasPrefix("HTTP/1.1 200 "))
    }

    @Test func aRequestWithBareLineFeedsIsAnsweredBadRequestAtOnce() throws {
        let endpoint = try ControlEndpointUnderTest()
        defer { endpoint.stop() }

        let answer = try endpoint.raw("GET /status HTTP/1.1\nHost: 127.0.0.1:\(endpoint.port)\n\n")

        #expect(answer.hasPrefix("HTTP/1.1 400 "), "\(answer)")
    }

    @Test(arguments: [
        "Content-Length: 6\r\nContent-Length: 0",
        "Content-Length: +6",
        "Content-Length: 99999999999999999999999",
        "Content-Length: 6\r\n Folded: line",
        "Content-Length: 6\r\nBad Name: value",
        "Transfer-Encoding: chunked",
    ])
    func ambiguousFramingIsRefusedAndChangesNothing(_ fields: String) throws {
        let endpoint = try ControlEndpointUnderTest()
        defer { endpoint.stop() }

        let answer = try endpoint.raw(
            "POST /offline HTTP/1.1\r\nHost: 127.0.0.1:\(endpoint.port)\r\nContent-Type: text/x-linkcond\r\n"
                + "\(fields)\r\n\r\nrefuse")

        #expect(answer.hasPrefix("HTTP/1.1 4"), "\(answer)")
        #expect(endpoint.proxy.conditions.offline == nil)
    }

    @Test(arguments: ["evil.example", "evil.example:PORT", "127.0.0.1:1", "localhost.evil.example:PORT", ""])
    func aForeignHostIsRefusedAndChangesNothing(_ host: String) throws {
        let endpoint = try ControlEndpointUnderTest()
        defer { endpoint.stop() }

        let answer = try endpoint.request(
            "POST", "/offline", host: host.replacingOccurrences(of: "PORT", with: "\(endpoint.port)"))

        #expect(answer.hasPrefix("HTTP/1.1 403 "), "\(answer)")
        #expect(endpoint.proxy.conditions.offline == nil)
    }

    @Test(arguments: ["localhost", "127.0.0.1", "127.3.4.5"])
    func aLoopbackHostWithTheRightPortIsAccepted(_ host: String) throws {
        let endpoint = try ControlEndpointUnderTest()
        defer { endpoint.stop() }

        let answer = try endpoint.request("POST", "/offline", host: "\(host):\(endpoint.port)")

        #expect(answer.hasPrefix("HTTP/1.1 200 "), "\(answer)")
        #expect(endpoint.proxy.conditions.offline == .refuse)
    }

    @Test func aHostInAnotherLetterCaseIsTheSameLoopbackHost() throws {
        // Host names compare without regard to case (RFC 9110 section 4.2.3): `curl http://LocalHost:PORT/` is local.
        let endpoint = try ControlEndpointUnderTest()
        defer { endpoint.stop() }

        let answer = try endpoint.request("POST", "/offline", host: "LocalHost:\(endpoint.port)")

        #expect(answer.hasPrefix("HTTP/1.1 200 "), "\(answer)")
        #expect(endpoint.proxy.conditions.offline == .refuse)
    }

    @Test(arguments: ["Origin: http://evil.example", "Origin: null", "Sec-Fetch-Site: cross-site"])
    func aRequestFromAWebPageIsRefusedAndChangesNothing(_ field: String) throws {
        let endpoint = try ControlEndpointUnderTest()
        defer { endpoint.stop() }

        let answer = try endpoint.request("POST", "/offline", extra: [field])

        #expect(answer.hasPrefix("HTTP/1.1 403 "), "\(answer)")
        #expect(endpoint.proxy.conditions.offline == nil)
    }

    @Test(arguments: [
        Optional("text/plain"), "application/x-www-form-urlencoded", "multipart/form-data; boundary=x", nil,
    ])
    func aBodyWithoutTheDocumentedContentTypeIsRefusedAndChangesNothing(_ contentType: String?) throws {
        let endpoint = try ControlEndpointUnderTest()
        defer { endpoint.stop() }

        let answer = try endpoint.request(
            "POST", "/settings", body: "downlink.delay = 1 ms\n", contentType: contentType)

        #expect(answer.hasPrefix("HTTP/1.1 415 "), "\(answer)")
        #expect(answer.contains("text/x-linkcond"))
        #expect(endpoint.proxy.profile.downlink.delay == .milliseconds(400))
    }

    @Test func aCORSPreflightIsNeverGranted() throws {
        let endpoint = try ControlEndpointUnderTest()
        defer { endpoint.stop() }

        let answer = try endpoint.request("OPTIONS", "/settings", extra: ["Access-Control-Request-Method: POST"])

        #expect(!answer.hasPrefix("HTTP/1.1 2"), "\(answer)")
        #expect(!answer.lowercased().contains("access-control-allow"))
    }

    @Test func aTokenIsRequiredWhenConfiguredAndTheRightOneIsAccepted() throws {
        let endpoint = try ControlEndpointUnderTest(token: "s3cret-token")
        defer { endpoint.stop() }

        let without = try endpoint.raw("POST /online HTTP/1.1\r\nHost: 127.0.0.1:\(endpoint.port)\r\n\r\n")
        let wrong = try endpoint.raw(
            "POST /online HTTP/1.1\r\nHost: 127.0.0.1:\(endpoint.port)\r\nAuthorization: Bearer s3cret\r\n\r\n")
        let right = try endpoint.request("POST", "/online")

        #expect(without.hasPrefix("HTTP/1.1 401 "), "\(without)")
        #expect(wrong.hasPrefix("HTTP/1.1 401 "), "\(wrong)")
        #expect(right.hasPrefix("HTTP/1.1 200 "), "\(right)")
    }

    @Test func aProfilePathIsRefusedWithoutReadingTheFileOrRevealingWhetherItExists() throws {
        let endpoint = try ControlEndpointUnderTest()
        defer { endpoint.stop() }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "lc-secret-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let existing = directory.appendingPathComponent("a.profile").path
        let missing = directory.appendingPathComponent("b.profile").path
        try "password = SECRET-LINE-42\n".write(toFile: existing, atomically: true, encoding: .utf8)

        let forExisting = try endpoint.request("PUT", "/profile", body: existing)
        let forMissing = try endpoint.request("PUT", "/profile", body: missing)
        let forShadow = try endpoint.request("PUT", "/profile", body: "/etc/shadow")

        #expect(forExisting.hasPrefix("HTTP/1.1 400 "), "\(forExisting)")
        #expect(!forExisting.contains("SECRET"), "\(forExisting)")
        #expect(!forShadow.contains("root:"), "\(forShadow)")
        #expect(
            forExisting.replacingOccurrences(of: existing, with: "P")
                == forMissing.replacingOccurrences(of: missing, with: "P"))
        #expect(endpoint.proxy.profile.name == "edge")
    }

    @Test func aScenarioStepNamingAFileIsRefusedWithoutReadingIt() throws {
        let endpoint = try ControlEndpointUnderTest()
        defer { endpoint.stop() }
        let file = FileManager.default.temporaryDirectory.appendingPathComponent(
            "lc-\(UUID().uuidString.prefix(8)).profile"
        ).path
        try "SECRET-LINE-42\n".write(toFile: file, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: file) }

        let answer = try endpoint.request("PUT", "/scenario", body: "0s \(file)\n")

        #expect(answer.hasPrefix("HTTP/1.1 400 "), "\(answer)")
        #expect(!answer.contains("SECRET"), "\(answer)")
        #expect(answer.contains("reads no files") && answer.contains("linkcond run --scenario FILE"), "\(answer)")
    }

    @Test func aBuiltInNameAndInlineProfileTextAreStillAccepted() throws {
        let endpoint = try ControlEndpointUnderTest()
        defer { endpoint.stop() }

        let byName = try endpoint.request("PUT", "/profile", body: "3g")
        let nameAfterName = endpoint.proxy.profile.name
        let byText = try endpoint.request("PUT", "/profile", body: "downlink.delay = 7 ms\n")

        #expect(byName.hasPrefix("HTTP/1.1 200 "), "\(byName)")
        #expect(nameAfterName == "3g")
        #expect(byText.hasPrefix("HTTP/1.1 200 "), "\(byText)")
        #expect(endpoint.proxy.profile.downlink.delay == .milliseconds(7))
    }

    @Test func aConnectionWideKeyWithADirectionIsRefusedWithItsLineAndChangesNothing() throws {
        let endpoint = try ControlEndpointUnderTest()
        defer { endpoint.stop() }

        let answer = try endpoint.request("PUT", "/profile", body: "delay = 7 ms\ndownlink.connect.stall = 5 s\n")

        #expect(answer.hasPrefix("HTTP/1.1 400 "), "\(answer)")
        #expect(answer.contains("line 2") || answer.contains(":2:"), "\(answer)")
        #expect(answer.contains("connect.stall concerns the whole connection"), "\(answer)")
        #expect(endpoint.proxy.profile.name == "edge" && endpoint.proxy.profile.connection.connectStall == .zero)
    }

    /// `--control ./notes.txt` (a slip of the keyboard) must not delete the file: only a stale socket is replaced.
    @Test func aSocketPathNamingAFileThatIsNotASocketIsRefusedAndTheFileKept() throws {
        let proxy = try ConditionedProxy.inFront(of: 9, profile: .none)
        defer { proxy.stop() }
        let path = FileManager.default.temporaryDirectory.appendingPathComponent(
            "lc-notes-\(UUID().uuidString.prefix(8)).txt"
        ).path
        try "keep me\n".write(toFile: path, atomically: false, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: path) }

        #expect(throws: SystemError.self) { _ = try proxy.serveControl(at: .unix(path)) }
        #expect(FileManager.default.contents(atPath: path).map { String(decoding: $0, as: UTF8.self) } == "keep me\n")
    }

    @Test func aBodyOverOneMebibyteIsRefusedWith413BeforeItIsRead() throws {
        let endpoint = try ControlEndpointUnderTest()
        defer { endpoint.stop() }

        let answer = try endpoint.raw(
            "PUT /profile HTTP/1.1\r\nHost: 127.0.0.1:\(endpoint.port)\r\nContent-Type: text/x-linkcond\r\nContent-Length: 1073741824\r\n\r\n"
        )

        #expect(answer.hasPrefix("HTTP/1.1 413 "), "\(answer)")
        #expect(answer.contains("1 MiB"))
    }

    @Test func aOneMebibyteBodyWithAnUnknownKeyIsRefusedWithAShortAnswer() throws {
        let endpoint = try ControlEndpointUnderTest()
        defer { endpoint.stop() }
        let body = String(repeating: "k", count: (1 << 20) - 10) + " = 1\n"

        let answer = try endpoint.request("PUT", "/profile", body: body)

        #expect(answer.hasPrefix("HTTP/1.1 400 "), "\(answer.prefix(200))")
        #expect(answer.utf8.count < 2000)
        #expect(endpoint.proxy.profile.name == "edge")
    }

    @Test func anIdleConnectionIsClosedAfterTheExchangeTimeoutAndNeverBefore() throws {
        let endpoint = try ControlEndpointUnderTest()
        defer { endpoint.stop() }
        let started = MonotonicClock().now()
        // The read gives up after ten times the exchange timeout: a server that never closed fails here.
        let idle = try BlockingStream.connect(
            to: SocketAddress(numericHost: "127.0.0.1", port: endpoint.port)!, timeout: .seconds(100))
        defer { idle.close() }

        let received = try idle.readToEnd()
        let elapsed = secondsSince(started)

        #expect(received.isEmpty)
        #expect(elapsed >= 9.9, "closed after \(elapsed) s")
        #expect(
            endpoint.proxy.controlEndings() == ExchangeEndings(timedOut: 1, displaced: 0),
            "closed, but not by its exchange timeout")
    }

    @Test func aClientBeyondTheLimitDisplacesTheSilentClientThatWaitedLongest() throws {
        let endpoint = try ControlEndpointUnderTest()
        defer { endpoint.stop() }
        var silent: [TestConnection] = []
        defer { for connection in silent { connection.close() } }
        for _ in 0..<64 { silent.append(try TestConnection.connect(port: endpoint.port, timeout: 20)) }

        silent.append(try TestConnection.connect(port: endpoint.port, timeout: 20))
        let displaced = try silent[0].receive(max: 1)
        let endings = endpoint.proxy.controlEndings()
        let answer = try endpoint.request("GET", "/status")

        // Slowloris clients cannot lock out the linkcond command: the 65th client made room by closing the one that
        // had waited longest, not the 10 s exchange timeout (the server says which closed it).
        #expect(displaced.isEmpty)
        #expect(
            endings?.displaced == 1,
            "the longest-waiting silent client was not displaced: \(String(describing: endings))")
        #expect(Self.isOpen(silent[64]), "the newest silent client was closed")
        #expect(answer.hasPrefix("HTTP/1.1 200 "), "\(answer.prefix(200))")
    }

    /// Whether the server still holds `connection`: nothing to read yet, and no end of stream.
    static func isOpen(_ connection: TestConnection) -> Bool {
        var byte: UInt8 = 0
        let result = recv(connection.fd, &byte, 1, Int32(MSG_DONTWAIT | MSG_PEEK))
        return result < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)
    }
}

/// A Unix control socket serves the user who runs linkcond (and root), whatever its file mode says.
@Suite(.serialized)
struct ControlSocketPeerTests {
    /// Runs a python client as `user` (through setpriv) that sends `request` to the Unix socket `path`; returns the answer.
    private func send(_ request: String, to path: String, as user: UInt32?) throws -> String {
        let script = """
            import socket, sys
            s = socket.socket(socket.AF_UNIX); s.settimeout(10); s.connect(sys.argv[1]); s.sendall(sys.argv[2].encode())
            data = b""
            try:
                while True:
                    chunk = s.recv(65536)
                    if not chunk: break
                    data += chunk
            except OSError:
                pass
            sys.stdout.write(data.decode())
            """
        let process = Process()
        let python = ["/usr/bin/python3", "-c", script, path, request]
        if let user {
            process.executableURL = URL(fileURLWithPath: "/usr/bin/setpriv")
            process.arguments = ["--reuid=\(user)", "--regid=\(user)", "--clear-groups"] + python
        } else {
            process.executableURL = URL(fileURLWithPath: python[0])
            process.arguments = Array(python.dropFirst())
        }
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return String(decoding: data, as: UTF8.self)
    }

    @Test(
        .enabled(
            if: getuid() == 0 && FileManager.default.isExecutableFile(atPath: "/usr/bin/setpriv"),
            "needs root and setpriv"))
    func anotherUserIsRefusedEvenWhenTheSocketFileLetsThemConnect() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "lc-peer-\(UUID().uuidString.prefix(8))"
        ).path
        try FileManager.default.createDirectory(
            atPath: directory, withIntermediateDirectories: false, attributes: [.posixPermissions: 0o755])
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/control.sock"
        let proxy = try ConditionedProxy.inFront(of: 9, profile: .none)
        defer { proxy.stop() }
        _ = try proxy.serveControl(at: .unix(path))
        #expect(chmod(path, 0o666) == 0)
        let offline = "POST /offline HTTP/1.1\r\nHost: localhost\r\nContent-Length: 0\r\n\r\n"

        let fromNobody = try send(offline, to: path, as: 65534)
        let offlineAfterNobody = proxy.conditions.offline
        let fromOwner = try send("GET /status HTTP/1.1\r\nHost: localhost\r\n\r\n", to: path, as: nil)

        #expect(!fromNobody.hasPrefix("HTTP/1.1 200"), "\(fromNobody)")
        #expect(offlineAfterNobody == nil)
        #expect(fromOwner.hasPrefix("HTTP/1.1 200 "), "\(fromOwner.prefix(200))")
    }
}
