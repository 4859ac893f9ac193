import Foundation
import LoopbackPeers
import Testing

/// `linkcond attach` on a network namespace the test makes (as root, as CI runs): an app namespace joined by a veth
/// pair to a web namespace where a web server runs. Fetches from the app namespace are checked never to be faster
/// than the profile allows (never against an upper bound on time), and the namespace's nftables show what is
/// installed.
@Suite(.serialized) struct AttachCommandTests {
    /// The two namespaces, the veth pair between them (app 198.18.5.1, web 198.18.5.2) and the web server, all
    /// removed by `remove`; a resolver in the web namespace and processes in the app one on demand.
    final class Namespaces {
        let app: String
        let web: String
        let server: Process
        let directory: URL
        /// The resolver (`startResolver`) and the processes `startInApp` started, killed by `remove`.
        private var started: [Process] = []
        /// The control socket a test's attach serves, in the test's directory.
        var controlSocket: String { directory.appendingPathComponent("control.sock").path }
        /// Where `ip netns exec` finds the app namespace's own files (its resolv.conf), removed by `remove`.
        var appConfiguration: String { "/etc/netns/\(app)" }
        /// The address every A question gets from the resolver.
        static let answer = "192.0.2.53"
        static let body = [UInt8](repeating: 0x5a, count: 200_000)
        static let url = "http://198.18.5.2:8080/file"

        init() throws {
            let tag = "\(getpid() % 10000)\(UInt16.random(in: 0...999))"
            (app, web) = ("lca-app-\(tag)", "lca-web-\(tag)")
            directory = FileManager.default.temporaryDirectory.appendingPathComponent("linkcond-attach-\(tag)")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            try Data(Self.body).write(to: directory.appendingPathComponent("file"))
            server = Process()
            try Self.ip("netns", "add", app)
            try Self.ip("netns", "add", web)
            try Self.ip(
                "-n", app, "link", "add", "lca\(tag)", "type", "veth", "peer", "name", "lcw\(tag)", "netns", web)
            try Self.ip("-n", app, "addr", "add", "198.18.5.1/24", "dev", "lca\(tag)")
            try Self.ip("-n", web, "addr", "add", "198.18.5.2/24", "dev", "lcw\(tag)")
            for (namespace, device) in [(app, "lca\(tag)"), (web, "lcw\(tag)")] {
                try Self.ip("-n", namespace, "link", "set", "lo", "up")
                try Self.ip("-n", namespace, "link", "set", device, "up")
            }
            server.executableURL = URL(fileURLWithPath: "/usr/sbin/ip")
            server.arguments = [
                "netns", "exec", web, "python3", "-m", "http.server", "8080", "--bind", "198.18.5.2", "--directory",
                directory.path,
            ]
            server.standardOutput = FileHandle.nullDevice
            server.standardError = FileHandle.nullDevice
            try server.run()
            guard waitUntil(seconds: 30, { (try? self.fetch().status) == 0 }) else {
                remove()
                throw CLITestError("the web server in \(web) did not answer within 30 s")
            }
        }

        /// Writes `text` as the test's profile file and returns its path.
        func writeProfile(_ text: String) throws -> String {
            let path = directory.appendingPathComponent("test.profile").path
            try text.write(toFile: path, atomically: true, encoding: .utf8)
            return path
        }

        func remove() {
            // SIGKILL: the server may have inherited SIGTERM blocked.
            for process in [server] + started where process.isRunning {
                kill(process.processIdentifier, SIGKILL)
                process.waitUntilExit()
            }
            _ = try? Self.ip("netns", "del", app)
            _ = try? Self.ip("netns", "del", web)
            try? FileManager.default.removeItem(at: directory)
            try? FileManager.default.removeItem(atPath: appConfiguration)
        }

        /// Starts `arguments` in `namespace` with `ip netns exec`, which execs it: the process's pid is the
        /// command's.
        @discardableResult
        func start(in namespace: String, _ arguments: [String]) throws -> Process {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/usr/sbin/ip")
            process.arguments = ["netns", "exec", namespace] + arguments
            process.standardOutput = FileHandle.nullDevice
            process.standardError = FileHandle.nullDevice
            try process.run()
            started.append(process)
            return process
        }

        /// A resolver on 198.18.5.2:53 in the web namespace that answers every question with `answer` (an A
        /// record), which the app namespace reaches over the veth pair and the test's own namespace does not.
        func startResolver() throws {
            let script = """
                import socket
                s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
                s.bind(("198.18.5.2", 53))
                while True:
                    query, peer = s.recvfrom(512)
                    end = query.index(0, 12) + 5
                    answer = bytearray(query[:end])
                    answer[2] |= 0x80
                    answer[3] = 0x80
                    answer[6:12] = bytes([0, 1, 0, 0, 0, 0])
                    record = bytes([0xC0, 12, 0, 1, 0, 1, 0, 0, 0, 60, 0, 4, 192, 0, 2, 53])
                    s.sendto(bytes(answer) + record, peer)
                """
            try start(in: web, ["python3", "-c", script])
            // Ready once it answers a lookup from the app namespace, straight (no attach yet).
            guard waitUntil(seconds: 30, { (try? self.lookup(at: "198.18.5.2").address) == Self.answer }) else {
                throw CLITestError("the resolver in \(web) did not answer within 30 s")
            }
        }

        /// Gives the app namespace a resolv.conf of its own naming `nameserver`, as `ip netns exec` reads it.
        func writeAppResolverConfiguration(nameserver: String) throws {
            try FileManager.default.createDirectory(atPath: appConfiguration, withIntermediateDirectories: true)
            try "nameserver \(nameserver)\n".write(
                toFile: appConfiguration + "/resolv.conf", atomically: true, encoding: .utf8)
        }

        /// dig in the app namespace for example.test, at `server` or the namespace's resolv.conf's: the address
        /// answered and dig's query time in milliseconds (whole ones, truncated: a lower bound's check allows 1).
        func lookup(at server: String? = nil) throws -> (address: String?, milliseconds: Int, output: String) {
            let result = try LinkcondProcess.run(
                ["netns", "exec", app, "dig", "+tries=1", "+time=10", "+noall", "+answer", "+stats"]
                    + (server.map { ["@\($0)"] } ?? []) + ["example.test"],
                timeout: 30, executable: URL(fileURLWithPath: "/usr/sbin/ip"))
            let lines = result.stdout.split(separator: "\n")
            let address = lines.first { $0.hasPrefix("example.test.") }?.split(whereSeparator: \.isWhitespace).last
            let time = lines.first { $0.contains("Query time:") }?.split(separator: " ").compactMap { Int($0) }.first
            return (address.map(String.init), time ?? -1, result.stdout + result.stderr)
        }

        /// curl in the app namespace: its exit status, the bytes it got, and its time to the first byte and in all.
        func fetch() throws -> (status: Int32, bytes: Int, firstByte: Double, total: Double) {
            let result = try LinkcondProcess.run(
                [
                    "netns", "exec", app, "curl", "-sS", "-m", "30", "-o", "/dev/null", "-w",
                    "%{size_download} %{time_starttransfer} %{time_total}", Self.url,
                ], timeout: 60, executable: URL(fileURLWithPath: "/usr/sbin/ip"))
            let fields = result.stdout.split(separator: " ").compactMap { Double($0) }
            guard fields.count == 3 else { return (result.status == 0 ? -1 : result.status, 0, 0, 0) }
            return (result.status, Int(fields[0]), fields[1], fields[2])
        }

        /// The app namespace's nftables tables, as `nft list tables` prints them.
        func tables() throws -> String {
            try LinkcondProcess.run(
                ["netns", "exec", app, "nft", "list", "tables"], executable: URL(fileURLWithPath: "/usr/sbin/ip")
            ).stdout
        }

        static func ip(_ arguments: String...) throws {
            let result = try LinkcondProcess.run(arguments, executable: URL(fileURLWithPath: "/usr/sbin/ip"))
            guard result.status == 0 else {
                throw CLITestError("ip \(arguments.joined(separator: " ")): \(result.stderr)")
            }
        }
    }

    static var canRun: Bool {
        getuid() == 0
            && ["/usr/sbin/nft", "/usr/bin/python3", "/usr/bin/curl", "/usr/bin/setpriv", "/usr/bin/dig"].allSatisfy {
                FileManager.default.isExecutableFile(atPath: $0)
            }
    }

    static let token = "token-of-the-attach-test"

    /// Starts `linkcond attach` on `target` (the app namespace by default) with a control socket in the test's
    /// directory, and waits for the line it prints once it conditions.
    static func attach(
        _ namespaces: Namespaces, profile: String, control: String, target: [String]? = nil,
        options: [String] = [], environment: [String: String] = [:]
    ) throws -> RunningLinkcond {
        let running = try RunningLinkcond(
            ["attach"] + (target ?? ["--netns", "/run/netns/\(namespaces.app)"]) + [
                "--profile", profile, "--control", control,
            ] + options,
            environment: environment.merging(["LINKCOND_CONTROL_TOKEN": token]) { $1 })
        guard
            waitUntil(
                seconds: 30, { running.stderrText.contains("attach: conditioning") || !running.process.isRunning })
        else { throw CLITestError("no ready line within 30 s: \(running.stderrText)") }
        return running
    }

    static func steer(_ arguments: [String], control: String) throws -> LinkcondProcess.Result {
        try LinkcondProcess.run(arguments + ["--control", control], environment: ["LINKCOND_CONTROL_TOKEN": token])
    }

    static func status(control: String) throws -> [String: Any] {
        let result = try steer(["status", "--json"], control: control)
        return try #require(
            try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any], "\(result)")
    }

    /// `linkcond ps --json` in `runtime`: the instances it lists.
    static func instances(_ runtime: ControlSecurityCommandTests.RuntimeDirectory) throws -> [[String: Any]] {
        let result = try LinkcondProcess.run(["ps", "--json"], environment: runtime.environment)
        return try #require(
            try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [[String: Any]], "\(result)")
    }

    static func accepted(_ status: [String: Any]) -> Int {
        ((status["listeners"] as? [[String: Any]])?.first?["connectionsAccepted"] as? Int) ?? -1
    }

    @Test(.enabled(if: canRun, "needs root, nft, python3, curl, setpriv and dig"))
    func shapesTheNamespacesFetchesObeysUseAndOfflineAndRemovesItsTableOnSigterm() throws {
        let namespaces = try Namespaces()
        defer { namespaces.remove() }
        let profile = try namespaces.writeProfile(
            "downlink.bandwidth = 1 Mbit/s\nuplink.bandwidth = 1 Mbit/s\ndelay = 20 ms\n")
        let control = namespaces.controlSocket
        let runtime = try ControlSecurityCommandTests.RuntimeDirectory()
        let running = try Self.attach(namespaces, profile: profile, control: control, environment: runtime.environment)
        defer { _ = try? running.stop(signal: SIGKILL) }

        let listedWhileAttached = try Self.instances(runtime)
        let tablesWhileAttached = try namespaces.tables()
        let shaped = try namespaces.fetch()
        let afterShaped = try Self.status(control: control)
        let useNone = try Self.steer(["use", "none"], control: control)
        let unshaped = try namespaces.fetch()
        let afterUnshaped = try Self.status(control: control)
        let offline = try Self.steer(["offline"], control: control)
        let whileOffline = try namespaces.fetch()
        let online = try Self.steer(["online"], control: control)
        let status = try running.stop(signal: SIGTERM)
        let tablesAfter = try namespaces.tables()
        let afterExit = try namespaces.fetch()
        let listedAfter = try Self.instances(runtime)

        #expect(
            listedWhileAttached.count == 1 && listedWhileAttached.first?["command"] as? String == "attach"
                && (listedWhileAttached.first?["pid"] as? NSNumber)?.int32Value == running.process.processIdentifier,
            "\(listedWhileAttached)")
        #expect(listedAfter.isEmpty, "\(listedAfter)")
        #expect(tablesWhileAttached.contains("table inet linkcond-attach"), "\(tablesWhileAttached)")
        #expect(shaped.status == 0 && shaped.bytes == Namespaces.body.count, "\(shaped); \(running.stderrText)")
        // 200 000 bytes at 1 Mbit/s of payload take 1.6 s: never less.
        let atRate = Double(Namespaces.body.count) * 8 / 1_000_000
        #expect(shaped.total >= atRate * 0.97, "the fetch took \(shaped.total) s; at 1 Mbit/s it takes \(atRate) s")
        let listener = (afterShaped["listeners"] as? [[String: Any]])?.first
        #expect(listener?["kind"] as? String == "attach" && Self.accepted(afterShaped) == 1, "\(afterShaped)")
        #expect(useNone.status == 0 && unshaped.status == 0 && unshaped.bytes == Namespaces.body.count, "\(unshaped)")
        // Through linkcond still (one more connection accepted), on the profile none.
        #expect(afterUnshaped["profile"] as? String == "none" && Self.accepted(afterUnshaped) == 2, "\(afterUnshaped)")
        #expect(offline.status == 0 && whileOffline.status != 0, "offline: \(offline); fetch: \(whileOffline)")
        #expect(online.status == 0)
        #expect(status == 0, "stderr: \(running.stderrText)")
        #expect(!tablesAfter.contains("linkcond-attach"), "\(tablesAfter)")
        #expect(afterExit.status == 0 && afterExit.bytes == Namespaces.body.count, "\(afterExit)")
    }

    /// SIGKILL leaves no rules behind: the kernel removes the table with the nft process that owned it, so the
    /// namespace's connections flow (unconditioned) at once, never refused by a redirect to a dead port; a new
    /// start conditions it again.
    @Test(.enabled(if: canRun, "needs root, nft, python3, curl, setpriv and dig"))
    func afterSigkillTheNamespaceFlowsAndANewStartAttachesAgain() throws {
        let namespaces = try Namespaces()
        defer { namespaces.remove() }
        let control = namespaces.controlSocket
        let first = try Self.attach(namespaces, profile: "lte", control: control)
        let attachedFirst = try namespaces.tables()
        _ = try first.stop(signal: SIGKILL)
        let gone = waitUntil(seconds: 10, { !((try? namespaces.tables()) ?? "").contains("linkcond-attach") })
        let afterKill = try namespaces.fetch()
        try? FileManager.default.removeItem(atPath: control)
        let second = try Self.attach(namespaces, profile: "lte", control: control)
        defer { _ = try? second.stop(signal: SIGKILL) }
        let attachedAgain = try namespaces.tables()
        let throughSecond = try namespaces.fetch()
        let status = try Self.status(control: control)
        let stopped = try second.stop(signal: SIGINT)
        let tablesAfter = try namespaces.tables()

        #expect(attachedFirst.contains("table inet linkcond-attach"), "\(attachedFirst)")
        #expect(gone, "the table outlived the SIGKILLed linkcond")
        #expect(afterKill.status == 0 && afterKill.bytes == Namespaces.body.count, "\(afterKill)")
        #expect(second.process.isRunning == false && stopped == 0, "stderr: \(second.stderrText)")
        #expect(attachedAgain.contains("table inet linkcond-attach"), "\(attachedAgain)")
        #expect(throughSecond.status == 0 && Self.accepted(status) == 1, "\(throughSecond); \(status)")
        #expect(!tablesAfter.contains("linkcond-attach"), "\(tablesAfter)")
    }

    /// A lookup from the namespace reaches the resolver `--dns-upstream` names through linkcond's forwarder and
    /// pays `dns.delay`: dig asks 198.18.5.3, where nothing answers, so an answer came through the redirect.
    @Test(.enabled(if: canRun, "needs root, nft, python3, curl, setpriv and dig"))
    func aLookupInTheNamespaceReachesTheGivenUpstreamAndPaysTheDNSDelay() throws {
        let namespaces = try Namespaces()
        defer { namespaces.remove() }
        try namespaces.startResolver()
        let profile = try namespaces.writeProfile("dns.delay = 400 ms\n")
        let control = namespaces.controlSocket
        let running = try Self.attach(
            namespaces, profile: profile, control: control, options: ["--dns-upstream", "198.18.5.2:53"])
        defer { _ = try? running.stop(signal: SIGKILL) }

        let lookup = try namespaces.lookup(at: "198.18.5.3")
        let status = try running.stop(signal: SIGTERM)

        #expect(lookup.address == Namespaces.answer, "\(lookup.output); \(running.stderrText)")
        // dig truncates to whole milliseconds and starts its clock as it sends.
        #expect(lookup.milliseconds >= 399, "the lookup took \(lookup.milliseconds) ms with dns.delay 400 ms")
        #expect(running.stderrText.contains("through the forwarder (to 198.18.5.2:53)"), "\(running.stderrText)")
        #expect(status == 0, "stderr: \(running.stderrText)")
    }

    /// Without --dns-upstream the forwarder asks the resolver the namespace's programs would have asked: for
    /// /run/netns/NAME the one in /etc/netns/NAME/resolv.conf (which `ip netns exec` mounts over
    /// /etc/resolv.conf), reachable from the namespace where the host's resolver is not.
    @Test(.enabled(if: canRun, "needs root, nft, python3, curl, setpriv and dig"))
    func withoutAnUpstreamTheForwarderAsksTheResolverOfTheNamespacesOwnResolvConf() throws {
        let namespaces = try Namespaces()
        defer { namespaces.remove() }
        try namespaces.startResolver()
        try namespaces.writeAppResolverConfiguration(nameserver: "198.18.5.2")
        let profile = try namespaces.writeProfile("dns.delay = 400 ms\n")
        let control = namespaces.controlSocket
        let running = try Self.attach(namespaces, profile: profile, control: control)
        defer { _ = try? running.stop(signal: SIGKILL) }

        let asTheAppDoes = try namespaces.lookup()
        let elsewhere = try namespaces.lookup(at: "198.18.5.3")
        let status = try running.stop(signal: SIGTERM)

        let configuration = "\(namespaces.appConfiguration)/resolv.conf"
        #expect(
            running.stderrText.contains("(to 198.18.5.2:53, the first nameserver in \(configuration))"),
            "\(running.stderrText)")
        for lookup in [asTheAppDoes, elsewhere] {
            #expect(lookup.address == Namespaces.answer, "\(lookup.output); \(running.stderrText)")
            #expect(lookup.milliseconds >= 399, "the lookup took \(lookup.milliseconds) ms with dns.delay 400 ms")
        }
        #expect(status == 0, "stderr: \(running.stderrText)")
    }

    /// With no resolver to forward to (the namespace's resolv.conf names none, and no --dns-upstream), DNS is
    /// left out of the rules, so the namespace's lookups flow unconditioned rather than into a redirect nobody
    /// answers; the start line says so.
    @Test(.enabled(if: canRun, "needs root, nft, python3, curl, setpriv and dig"))
    func withoutAResolverToForwardToDNSIsNotRedirectedAndStillAnswered() throws {
        let namespaces = try Namespaces()
        defer { namespaces.remove() }
        try namespaces.startResolver()
        try FileManager.default.createDirectory(atPath: namespaces.appConfiguration, withIntermediateDirectories: true)
        let configuration = namespaces.appConfiguration + "/resolv.conf"
        try "search example.test\n".write(toFile: configuration, atomically: true, encoding: .utf8)
        let control = namespaces.controlSocket
        let running = try Self.attach(namespaces, profile: "none", control: control)
        defer { _ = try? running.stop(signal: SIGKILL) }

        let rules = try LinkcondProcess.run(
            ["netns", "exec", namespaces.app, "nft", "list", "table", "inet", "linkcond-attach"],
            executable: URL(fileURLWithPath: "/usr/sbin/ip")
        ).stdout
        let lookup = try namespaces.lookup(at: "198.18.5.2")
        let fetched = try namespaces.fetch()
        let status = try Self.status(control: control)
        let stopped = try running.stop(signal: SIGTERM)

        #expect(
            running.stderrText.contains(
                "DNS not redirected (no nameserver in \(configuration)): it flows unconditioned"),
            "\(running.stderrText)")
        #expect(rules.contains("tcp redirect to") && !rules.contains("dport 53"), "\(rules)")
        #expect(lookup.address == Namespaces.answer, "\(lookup.output); \(running.stderrText)")
        #expect(fetched.status == 0 && Self.accepted(status) == 1, "\(fetched); \(status)")
        #expect(stopped == 0, "stderr: \(running.stderrText)")
    }

    /// `--pid` conditions the namespace of a live process (started in the app namespace by `ip netns exec`, which
    /// also gives it the namespace's resolv.conf, read under /proc/PID/root), and SIGTERM removes the rules.
    @Test(.enabled(if: canRun, "needs root, nft, python3, curl, setpriv and dig"))
    func attachingByPidConditionsTheProcesssNamespaceAndSigtermRemovesTheRules() throws {
        let namespaces = try Namespaces()
        defer { namespaces.remove() }
        try namespaces.startResolver()
        try namespaces.writeAppResolverConfiguration(nameserver: "198.18.5.2")
        let sleeper = try namespaces.start(in: namespaces.app, ["sleep", "60"])
        let pid = sleeper.processIdentifier
        // `ip netns exec` enters the namespace and mounts its resolv.conf, then execs sleep: before that, the pid
        // is in the test's own namespace, which attach must never condition.
        let entered = waitUntil(seconds: 30) {
            (try? String(contentsOfFile: "/proc/\(pid)/comm", encoding: .utf8)) == "sleep\n"
        }
        try #require(entered, "ip netns exec did not exec sleep within 30 s")
        let profile = try namespaces.writeProfile(
            "downlink.bandwidth = 1 Mbit/s\nuplink.bandwidth = 1 Mbit/s\ndns.delay = 400 ms\n")
        let control = namespaces.controlSocket
        let running = try Self.attach(namespaces, profile: profile, control: control, target: ["--pid", "\(pid)"])
        defer { _ = try? running.stop(signal: SIGKILL) }

        let tablesWhileAttached = try namespaces.tables()
        let shaped = try namespaces.fetch()
        let lookup = try namespaces.lookup(at: "198.18.5.3")
        let status = try running.stop(signal: SIGTERM)
        let tablesAfter = try namespaces.tables()

        #expect(running.stderrText.contains("conditioning the network namespace of process \(pid)"))
        #expect(
            running.stderrText.contains("the first nameserver in /proc/\(pid)/root/etc/resolv.conf"),
            "\(running.stderrText)")
        #expect(tablesWhileAttached.contains("table inet linkcond-attach"), "\(tablesWhileAttached)")
        #expect(shaped.status == 0 && shaped.bytes == Namespaces.body.count, "\(shaped); \(running.stderrText)")
        let atRate = Double(Namespaces.body.count) * 8 / 1_000_000
        #expect(shaped.total >= atRate * 0.97, "the fetch took \(shaped.total) s; at 1 Mbit/s it takes \(atRate) s")
        #expect(lookup.address == Namespaces.answer && lookup.milliseconds >= 399, "\(lookup)")
        #expect(status == 0, "stderr: \(running.stderrText)")
        #expect(!tablesAfter.contains("linkcond-attach"), "\(tablesAfter)")
        #expect(sleeper.isRunning, "attach must leave the process it conditioned alone")
    }

    /// A connection made straight to attach's own listener (loopback is not redirected, so its original
    /// destination is the listener itself) is closed at once and counted as looped, never relayed to the listener
    /// again until the descriptors run out; fetches through the rules go on working.
    @Test(.enabled(if: canRun, "needs root, nft, python3, curl, setpriv and dig"))
    func aConnectionStraightToTheListenerIsClosedAsLoopedNotRelayedToItself() throws {
        let namespaces = try Namespaces()
        defer { namespaces.remove() }
        let control = namespaces.controlSocket
        let running = try Self.attach(namespaces, profile: "none", control: control)
        defer { _ = try? running.stop(signal: SIGKILL) }
        let rules = try LinkcondProcess.run(
            ["netns", "exec", namespaces.app, "nft", "list", "table", "inet", "linkcond-attach"],
            executable: URL(fileURLWithPath: "/usr/sbin/ip")
        ).stdout
        let suffix = "meta nfproto ipv4 meta l4proto tcp redirect to :"
        let port = try #require(
            rules.split(separator: "\n").lazy.compactMap { line -> Int? in
                let text = line.trimmingCharacters(in: .whitespaces)
                return text.hasPrefix(suffix) ? Int(text.dropFirst(suffix.count)) : nil
            }.first, "\(rules)")

        let direct = try LinkcondProcess.run(
            [
                "netns", "exec", namespaces.app, "curl", "-sS", "-m", "10", "-o", "/dev/null",
                "http://127.0.0.1:\(port)/",
            ],
            timeout: 30, executable: URL(fileURLWithPath: "/usr/sbin/ip"))
        let status = try Self.status(control: control)
        let descriptors = try FileManager.default.contentsOfDirectory(
            atPath: "/proc/\(running.process.processIdentifier)/fd")
        let fetched = try namespaces.fetch()
        let stopped = try running.stop(signal: SIGTERM)

        // Closed at accept: curl sees an empty reply (52) or a reset (56), never its own timeout (28).
        #expect(direct.status == 52 || direct.status == 56, "\(direct); \(running.stderrText)")
        let listener = (status["listeners"] as? [[String: Any]])?.first
        #expect(listener?["connectionsLooped"] as? Int == 1, "\(status)")
        // The listener as status names it: where the rules redirect to, its real port.
        #expect(listener?["address"] as? String == "127.0.0.1:\(port)", "\(status)")
        #expect(Self.accepted(status) == 0, "\(status)")
        #expect(descriptors.count < 100, "\(descriptors.count) descriptors open")
        #expect(running.stderrText.contains("made to linkcond's own listener"), "\(running.stderrText)")
        #expect(fetched.status == 0 && fetched.bytes == Namespaces.body.count, "\(fetched); \(running.stderrText)")
        #expect(stopped == 0, "stderr: \(running.stderrText)")
    }

    /// In another namespace, attach's 127.0.0.1:PORT means another socket (a host instance's on the same port,
    /// perhaps): no TCP endpoint is recorded in its descriptor or keyed by port in a token file; the commands
    /// reach it through its own socket, and a loopback --control without LINKCOND_CONTROL_TOKEN is refused.
    @Test(.enabled(if: canRun, "needs root, nft, python3, curl, setpriv and dig"))
    func inAnotherNamespaceTheDescriptorNamesNoTCPControlAndTheSocketServes() throws {
        let namespaces = try Namespaces()
        defer { namespaces.remove() }
        let runtime = try ControlSecurityCommandTests.RuntimeDirectory()
        let running = try RunningLinkcond(
            ["attach", "--netns", "/run/netns/\(namespaces.app)", "--profile", "lte", "--name", "lca-elsewhere"],
            environment: runtime.environment)
        defer { _ = try? running.stop(signal: SIGKILL) }
        try #require(
            waitUntil(
                seconds: 30, { running.stderrText.contains("attach: conditioning") || !running.process.isRunning }),
            "\(running.stderrText)")

        let listed = try Self.instances(runtime)
        let status = try LinkcondProcess.run(
            ["status", "--json", "--name", "lca-elsewhere"], environment: runtime.environment)
        let privateFiles = (try? FileManager.default.contentsOfDirectory(atPath: runtime.privateDirectory)) ?? []
        let loopback = try LinkcondProcess.run(
            ["attach", "--netns", "/run/netns/\(namespaces.app)", "--control", "127.0.0.1:0"],
            environment: runtime.environment)
        let stopped = try running.stop(signal: SIGTERM)

        let control = listed.first?["control"] as? [String] ?? ["(none)"]
        #expect(listed.count == 1 && control.count == 1 && control.allSatisfy { $0.hasPrefix("/") }, "\(listed)")
        #expect(status.status == 0 && status.stdout.contains("\"listeners\""), "\(status)")
        #expect(!privateFiles.contains { $0.hasPrefix("control-") }, "\(privateFiles)")
        #expect(
            loopback.status == 2 && loopback.stderr.contains("set LINKCOND_CONTROL_TOKEN"), "\(loopback)")
        #expect(stopped == 0, "stderr: \(running.stderrText)")
    }

    /// A name a running instance has is refused before anything is installed: the namespace never sees the
    /// table (its connections would wait in a backlog while it came and went).
    @Test(.enabled(if: canRun, "needs root, nft, python3, curl, setpriv and dig"))
    func aNameTakenIsRefusedBeforeTheRulesGoIn() throws {
        let namespaces = try Namespaces()
        defer { namespaces.remove() }
        let runtime = try ControlSecurityCommandTests.RuntimeDirectory()
        let holder = try RunningLinkcond(
            ["run", "--name", "lca-taken", "--control", "127.0.0.1:0"], environment: runtime.environment)
        defer { _ = try? holder.stop(signal: SIGKILL) }
        while try !holder.readLine(timeout: 30).hasPrefix("ready name") {}

        let refused = try LinkcondProcess.run(
            ["attach", "--netns", "/run/netns/\(namespaces.app)", "--name", "lca-taken", "--verbose"],
            environment: runtime.environment)
        let tables = try namespaces.tables()

        #expect(refused.status == 2, "\(refused)")
        #expect(
            refused.stderr.contains("a linkcond named \"lca-taken\" already runs")
                && refused.stderr.contains("nothing was installed"), "\(refused)")
        #expect(!refused.stderr.contains("conditioning"), "\(refused)")
        #expect(!tables.contains("linkcond-attach"), "\(tables)")
    }

    /// An empty --exclude entry (an unset variable in a manifest) is refused, naming it, before anything is
    /// installed: it must not mean "exclude nothing" without a word.
    @Test func anEmptyExcludeEntryIsRefused() throws {
        for given in ["", ",", "10.96.0.1,"] {
            let refused = try LinkcondProcess.run(["attach", "--netns", "/run/netns/lca-unused", "--exclude", given])
            #expect(
                refused.status == 2 && refused.stderr.contains("--exclude \"\": an empty entry"),
                "\(given): \(refused)")
        }
    }

    @Test(.enabled(if: canRun, "needs root, nft, python3, curl, setpriv and dig"))
    func refusesAMissingNamespaceAGoneProcessAndAUserWithoutCapabilitiesInstallingNothing() throws {
        let namespaces = try Namespaces()
        defer { namespaces.remove() }
        let missing = try LinkcondProcess.run(["attach", "--netns", "/run/netns/lca-no-such-namespace"])
        let ended = Process()
        ended.executableURL = URL(fileURLWithPath: "/bin/true")
        try ended.run()
        ended.waitUntilExit()
        let gone = try LinkcondProcess.run(["attach", "--pid", "\(ended.processIdentifier)"])
        let unprivileged = ["/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
        let inside = try LinkcondProcess.run(
            ["netns", "exec", namespaces.app] + unprivileged + [LinkcondProcess.executable.path, "attach"],
            executable: URL(fileURLWithPath: "/usr/sbin/ip"))
        let entering = try LinkcondProcess.run(
            Array(unprivileged.dropFirst()) + [
                LinkcondProcess.executable.path, "attach", "--netns", "/run/netns/\(namespaces.app)",
            ], executable: URL(fileURLWithPath: unprivileged[0]))
        let tables = try namespaces.tables()

        #expect(
            missing.status == 2 && missing.stderr.contains("--netns /run/netns/lca-no-such-namespace: no such file"),
            "\(missing)")
        #expect(
            gone.status == 2 && gone.stderr.contains("--pid \(ended.processIdentifier): no such process"), "\(gone)")
        #expect(
            inside.status == 1
                && inside.stderr.contains("needs CAP_NET_ADMIN in the network namespace linkcond runs in"), "\(inside)")
        #expect(entering.status == 1 && entering.stderr.contains("CAP_SYS_ADMIN"), "\(entering)")
        #expect(!tables.contains("linkcond-attach"), "\(tables)")
    }
}
