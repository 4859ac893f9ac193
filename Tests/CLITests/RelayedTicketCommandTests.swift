import Foundation
import LinkConditioner
import LoopbackPeers
import Testing

/// A dashboard ticket that reaches the control endpoint through one of linkcond's own sockets is void, whoever sent
/// it: the kernel lists that socket as linkcond's user's. Under `exec`, the gateway's address stands for the host's
/// loopback, so a program inside (here one of uid 65534) that connects to the gateway's control port reaches the
/// endpoint through linkcond's own upstream connection, which no relay check at creation sees.
@Suite(
    .serialized,
    .enabled(
        if: getuid() == 0 && FileManager.default.isExecutableFile(atPath: "/usr/bin/setpriv")
            && FileManager.default.isExecutableFile(atPath: "/usr/bin/python3") && ExecEnvironment.missing == nil,
        "needs root, setpriv, python3 and what linkcond exec needs"))
struct RelayedTicketCommandTests {
    /// Waits (at most 30 s) for the ticket in the file `argv[2]`, trades it at the gateway's port `argv[1]`, and
    /// prints the whole answer.
    static let program = """
        import os, socket, sys, time
        port, path = int(sys.argv[1]), sys.argv[2]
        for _ in range(600):
            if os.path.exists(path): break
            time.sleep(0.05)
        ticket = open(path).read().strip()
        s = socket.create_connection(("198.18.0.2", port), timeout=20)
        s.sendall(("POST /dashboard/token HTTP/1.1\\r\\nHost: 127.0.0.1:%d\\r\\nContent-Type: text/x-linkcond\\r\\n"
                   "Content-Length: %d\\r\\n\\r\\n%s" % (port, len(ticket), ticket)).encode())
        data = b""
        while True:
            chunk = s.recv(65536)
            if not chunk: break
            data += chunk
        sys.stdout.write(data.decode())
        """

    @Test(arguments: ExecEnvironment.modes)
    func anotherUsersTicketSentThroughLinkcondsOwnRelayIsRefusedAndVoid(mode: String) throws {
        let token = OtherUserCommandTests.token
        let port = try OtherUserCommandTests.freePort()
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "linkcond-ticket-\(getpid())-\(UInt32.random(in: 0...UInt32.max))")
        try FileManager.default.createDirectory(
            at: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o755])
        defer { try? FileManager.default.removeItem(at: directory) }
        let ticketFile = directory.appendingPathComponent("ticket")
        let linkcond = try RunningLinkcond(
            [
                "exec", "--mode", mode, "--control", "127.0.0.1:\(port)", "--", "/usr/bin/setpriv", "--reuid=65534",
                "--regid=65534", "--clear-groups", "/usr/bin/python3", "-c", Self.program, "\(port)", ticketFile.path,
            ],
            environment: ["LINKCOND_CONTROL_TOKEN": token])
        defer { _ = try? linkcond.stop(signal: SIGTERM) }
        for _ in 0..<600 where !linkcond.stderrText.contains("ready control") { usleep(50_000) }

        let ticket = try OtherUserCommandTests.ticket(port)
        let written = directory.appendingPathComponent("ticket.new")
        try Data((ticket + "\n").utf8).write(to: written)
        try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: written.path)
        try FileManager.default.moveItem(at: written, to: ticketFile)
        let status = linkcond.waitForExit(timeout: 60)
        let answer = linkcond.remainingStdout()

        #expect(status == 0, "\(linkcond.stderrText)")
        #expect(answer.hasPrefix("HTTP/1.1 403 "), "\(answer)\n\(linkcond.stderrText)")
        #expect(answer.contains("came through one of linkcond's own relays"), "\(answer)")
        #expect(!answer.contains(token), "the token leaked: \(answer)")
        #expect(linkcond.stderrText.contains("one of linkcond's own relays"), "\(linkcond.stderrText)")
    }
}
