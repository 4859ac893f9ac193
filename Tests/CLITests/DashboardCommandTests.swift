import Foundation
import LinkConditioner
import LoopbackPeers
import Testing

/// `linkcond dashboard` prints the URL of a running instance's dashboard with its token in the fragment.
@Suite(.serialized)
struct DashboardCommandTests {
    @Test func printsTheDashboardURLWithTheTokenInTheFragment() throws {
        let token = ControlToken.random()
        let instance = try RunningLinkcond([
            "run", "--listen", "127.0.0.1:0", "--upstream", "127.0.0.1:9",
            "--control", "127.0.0.1:0", "--control-token", token,
        ])
        defer { _ = try? instance.stop() }
        _ = try instance.readLine()
        let control = try instance.readLine().replacingOccurrences(of: "ready control ", with: "")
        let port = try #require(control.split(separator: ":").last)

        let result = try LinkcondProcess.run(["dashboard", "--control", control, "--control-token", token])

        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout == "http://127.0.0.1:\(port)/#token=\(token)\n")
    }

    /// A browser that xdg-open starts keeps its URL in its command line, which every user of the machine can read
    /// (`ps`): the URL `--open` hands over carries a one-time ticket, which the page trades for the token once.
    @Test func openHandsTheBrowserAOneTimeTicketInsteadOfTheToken() throws {
        let token = ControlToken.random()
        let instance = try RunningLinkcond(
            ["run", "--listen", "127.0.0.1:0", "--upstream", "127.0.0.1:9", "--control", "127.0.0.1:0"],
            environment: ["LINKCOND_CONTROL_TOKEN": token])
        defer { _ = try? instance.stop() }
        _ = try instance.readLine()
        let control = try instance.readLine().replacingOccurrences(of: "ready control ", with: "")
        let port = try #require(control.split(separator: ":").last.flatMap { UInt16($0) })
        let bin = FileManager.default.temporaryDirectory.appendingPathComponent(
            "lc-open-\(UUID().uuidString.prefix(8))"
        ).path
        try FileManager.default.createDirectory(atPath: bin, withIntermediateDirectories: false)
        defer { try? FileManager.default.removeItem(atPath: bin) }
        try "#!/bin/sh\nprintf '%s' \"$1\" > \(bin)/url.part && mv \(bin)/url.part \(bin)/url\n".write(
            toFile: bin + "/xdg-open", atomically: false, encoding: .utf8)
        #expect(chmod(bin + "/xdg-open", 0o755) == 0)

        let result = try LinkcondProcess.run(
            ["dashboard", "--control", control, "--open"],
            environment: [
                "PATH": bin + ":" + (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"),
                "LINKCOND_CONTROL_TOKEN": token,
            ])
        var opened: String?
        for _ in 0..<200 where opened == nil {
            opened = FileManager.default.contents(atPath: bin + "/url").map { String(decoding: $0, as: UTF8.self) }
            if opened == nil { usleep(50_000) }
        }
        let url = try #require(opened, "xdg-open was not run")
        let ticket = try #require(url.components(separatedBy: "#ticket=").dropFirst().first, "\(url)")
        let redeem =
            "POST /dashboard/token HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nContent-Type: text/x-linkcond\r\nContent-Length: \(ticket.utf8.count)\r\n\r\n\(ticket)"
        let first = try exchange(port: port, redeem)
        let second = try exchange(port: port, redeem)

        #expect(result.status == 0, "\(result.stderr)")
        #expect(url.hasPrefix("http://127.0.0.1:\(port)/#ticket="), "\(url)")
        #expect(!url.contains(token))
        #expect(first.hasPrefix("HTTP/1.1 200 ") && first.hasSuffix("\r\n\r\n\(token)\n"), "\(first)")
        #expect(second.hasPrefix("HTTP/1.1 403 "), "\(second)")
    }

    @Test func aWrongTokenFindsNoDashboardAndExitsOne() throws {
        let instance = try RunningLinkcond([
            "run", "--listen", "127.0.0.1:0", "--upstream", "127.0.0.1:9",
            "--control", "127.0.0.1:0", "--control-token", ControlToken.random(),
        ])
        defer { _ = try? instance.stop() }
        _ = try instance.readLine()
        let control = try instance.readLine().replacingOccurrences(of: "ready control ", with: "")

        let result = try LinkcondProcess.run(["dashboard", "--control", control, "--control-token", "wrong"])

        #expect(result.status == 1)
        #expect(result.stdout.isEmpty)
        #expect(result.stderr.contains("no running linkcond"), "\(result.stderr)")
    }

    private func exchange(port: UInt16, _ text: String) throws -> String {
        let stream = try BlockingStream.connect(
            to: SocketAddress(numericHost: "127.0.0.1", port: port)!, timeout: .seconds(10))
        defer { stream.close() }
        try stream.write(Array(text.utf8))
        return String(decoding: try stream.readToEnd(), as: UTF8.self)
    }
}
