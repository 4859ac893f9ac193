import ArgumentParser
import Foundation
import LinkConditioner
import Logging

/// `linkcond run`: conditions TCP connections between listen addresses and their upstreams until SIGINT/SIGTERM.
struct RunCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "run",
        abstract: "Run a conditioning proxy in front of one or more upstreams.",
        discussion: """
            Each --listen pairs with the --upstream at the same position. Once every listener is bound, one line \
            per listener is printed on stdout: "ready tcp LISTEN UPSTREAM", then "ready control URL" and \
            "ready name NAME". Logs go to stderr. SIGINT, SIGTERM or SIGHUP closes every connection and exits 0. Without any listener option, a SOCKS5 and HTTP proxy starts on \
            127.0.0.1 (port chosen by the system) and stderr says how to point an app at it.

            Examples:
              linkcond run --profile 3g
              linkcond run --listen 127.0.0.1:8080 --upstream 127.0.0.1:3000 --profile edge
              linkcond run --udp-listen 127.0.0.1:5353 --udp-upstream 127.0.0.1:53 \\
                  --profile 3g-lossy
              linkcond run --profile edge --record app.jsonl
              linkcond report app.jsonl      (after the run: the recording as a page)

            --record writes one JSON event per line (reads and writes coalesced per 20 ms and direction); at \
            --record-limit the file is truncated: its beginning is kept and its last line says where it stopped.

            Each instance has a name (--name, else the profile's name and a number, such as 3g-1) and a control \
            socket of its own; "linkcond ps" lists the running ones, and the other commands take --name to pick one.

            Exit status: 0 after SIGINT, SIGTERM or SIGHUP, 1 when a listener cannot start (address in use, unresolvable \
            upstream), 2 for bad usage, a bad profile or scenario, or a --name another running instance has.
            """
    )

    @Option(name: .long, help: "Address to accept connections on, HOST:PORT (port 0 picks a free port).")
    var listen: [String] = []

    @Option(name: .long, help: "Address to relay each connection to, HOST:PORT (a host name, IPv4 or [IPv6]).")
    var upstream: [String] = []

    @Option(
        name: .customLong("udp-listen"),
        help: "Address to receive UDP datagrams on, HOST:PORT; pairs with --udp-upstream.")
    var udpListen: [String] = []

    @Option(name: .customLong("udp-upstream"), help: "Address to relay each UDP flow to, HOST:PORT.")
    var udpUpstream: [String] = []

    @Option(
        name: .long, help: "Address for a DNS forwarder (UDP and TCP) that adds the profile's dns.delay, HOST:PORT.")
    var dns: [String] = []

    @Option(
        name: .customLong("dns-upstream"),
        help: "Resolver the DNS forwarder asks, HOST:PORT (default: the first nameserver in /etc/resolv.conf).")
    var dnsUpstream: String?

    @Option(
        name: .long, help: "Address for a SOCKS5 and HTTP proxy that conditions whatever an app connects to, HOST:PORT."
    )
    var proxy: [String] = []

    @Option(
        name: .customLong("proxy-user"),
        help: "USER:PASS every SOCKS5 and HTTP proxy client must give (recommended off loopback).")
    var proxyUser: String?

    @Flag(
        name: .customLong("allow-remote"),
        help:
            "Let a --proxy (an open proxy: other hosts can relay through it to anywhere), a --toxiproxy API (with --control-token) or the proxies a Toxiproxy client creates listen on a non-loopback address."
    )
    var allowRemote = false

    @Option(
        name: .long,
        help:
            "Destinations the proxy relays untouched, added to the profile's exclude list: host names, *.domains, IPs and CIDR networks, comma-separated."
    )
    var exclude: [String] = []

    @Option(
        name: .long, help: "Built-in profile name or path to a .profile file.", completion: .list(Profile.builtInNames))
    var profile: String = "none"

    // The numeric options parse `.unconditional`: in `--buffer -5` the `-5` is the value, which `validate` refuses
    // saying what is expected, rather than an unknown option leaving "missing value".
    @Option(
        name: .long, parsing: .unconditional,
        help: "Bytes held per connection and direction before the sender is pushed back (e.g. 4MiB; at most 1GiB).")
    var buffer: String = "4MiB"

    @Option(
        name: .customLong("max-buffered"), parsing: .unconditional,
        help: "Bytes held across all TCP connections before every sender is pushed back (from 1MiB to 65536MiB).")
    var maxBuffered: String = "256MiB"

    @Option(
        name: .long, parsing: .unconditional,
        help:
            "Event loop threads: each --listen TCP listener is shaped on one of them, given round-robin, and those beyond the first also splice the first's pass-through connections (default: one per core; 1 keeps everything on one thread)."
    )
    var threads: String?

    @Option(
        name: .customLong("udp-idle"), parsing: .unconditional,
        help: "How long a UDP flow may carry no datagram before it is forgotten (e.g. 60s, 500ms, 5min).")
    var udpIdle: String = "60s"

    @Option(
        name: .long, help: "Scenario file (or shipped scenario name) to play from the start.",
        completion: .list(Scenario.builtInNames))
    var scenario: String?

    @Option(
        name: .long,
        help:
            "Address of the control endpoint: HOST:PORT or a socket path (default 127.0.0.1:0; the instance's own socket in the private directory is served as well)."
    )
    var control: String?

    @Option(
        name: .long,
        help:
            "Serve Toxiproxy 2.12's HTTP API at HOST[:PORT] (port 8474 when only a host is given); its proxies are linkcond TCP listeners."
    )
    var toxiproxy: String?

    @Flag(
        name: .customLong("toxiproxy-allow-other-users"),
        help:
            "Let programs of every user on this machine drive the --toxiproxy API without the control token, as Toxiproxy does (by default only yours and root's are served; its relays run as you)."
    )
    var toxiproxyAllowOtherUsers = false

    @Flag(
        name: .customLong("toxiproxy-without-token"),
        help:
            "Serve a --toxiproxy API beyond loopback without a token, as Toxiproxy does (for a container, whose network is the boundary): anyone who reaches it, any local user too, can make linkcond connect anywhere it can reach. Needs --allow-remote."
    )
    var toxiproxyWithoutToken = false

    @Option(
        name: .customLong("toxiproxy-config"),
        help:
            "Toxiproxy config file (a JSON array of proxies, as for POST /populate) to create at start; needs --toxiproxy."
    )
    var toxiproxyConfig: String?

    @OptionGroup var controlToken: ServedControlToken

    @OptionGroup var instanceName: InstanceNameOption

    @OptionGroup var recordArguments: RecordArguments

    @OptionGroup var realtimeArgument: RealtimeArgument

    @Flag(name: .shortAndLong, help: "Log every connection.")
    var verbose = false

    func validate() throws {
        try validateProxyFrontEnd()
        if listen.count != upstream.count {
            throw ValidationError(
                "\(listen.count) --listen but \(upstream.count) --upstream: each --listen needs exactly one --upstream."
            )
        }
        if udpListen.count != udpUpstream.count {
            throw ValidationError(
                "\(udpListen.count) --udp-listen but \(udpUpstream.count) --udp-upstream: each --udp-listen needs exactly one --udp-upstream."
            )
        }
        for text in listen + upstream + udpListen + udpUpstream + dns + proxy + [dnsUpstream].compactMap({ $0 })
        where Endpoint(parsing: text) == nil {
            throw ValidationError("\"\(text)\" is not HOST:PORT (IPv6 in brackets: [::1]:8080).")
        }
        if toxiproxyWithoutToken && (toxiproxy == nil || !allowRemote) {
            throw ValidationError(
                "--toxiproxy-without-token serves a --toxiproxy API beyond loopback with no token: it needs --toxiproxy HOST[:PORT] and --allow-remote."
            )
        }
        if let toxiproxy {
            guard let endpoint = Self.toxiproxyEndpoint(toxiproxy) else {
                throw ValidationError(
                    "--toxiproxy \"\(toxiproxy)\": expected HOST or HOST:PORT, such as 127.0.0.1 or 127.0.0.1:8474.")
            }
            if !ControlAddress.tcp(endpoint).isLocalOnly
                && (!allowRemote || (controlToken.value == nil && !toxiproxyWithoutToken))
            {
                throw ValidationError(
                    "--toxiproxy \"\(toxiproxy)\" is reachable from other hosts: add --allow-remote and --control-token TOKEN, or the token in \(ServedControlToken.environmentName), which other users cannot read as they can a command line (clients then send \"Authorization: Bearer TOKEN\")."
                )
            }
        }
        if toxiproxyAllowOtherUsers && toxiproxy == nil {
            throw ValidationError(
                "--toxiproxy-allow-other-users needs --toxiproxy HOST[:PORT], the API it opens to other users.")
        }
        if toxiproxyConfig != nil && toxiproxy == nil {
            throw ValidationError("--toxiproxy-config needs --toxiproxy HOST[:PORT] to serve the proxies it names.")
        }
        if let control, ControlAddress(parsing: control) == nil {
            throw ValidationError("--control \"\(control)\" is neither HOST:PORT nor a socket path.")
        }
        guard let bufferSize = CommandLineByteSize.parse(buffer), CommandLineByteSize.bufferRange.contains(bufferSize)
        else {
            throw ValidationError(
                "--buffer \"\(buffer)\": expected a size from 1B to 1GiB, such as 4MiB, 512KiB or 1048576.")
        }
        guard let cap = CommandLineByteSize.parse(maxBuffered), CommandLineByteSize.maximumBufferedRange.contains(cap)
        else {
            throw ValidationError(
                "--max-buffered \"\(maxBuffered)\": expected a size from 1MiB to 65536MiB, such as 256MiB.")
        }
        guard let idle = CommandLineDuration.parse(udpIdle), idle <= .seconds(24 * 3600) else {
            throw ValidationError(
                "--udp-idle \"\(udpIdle)\": expected a duration from 1ms to 1440min, such as 60s, 500ms or 5min.")
        }
        if let threads, Self.threadCount(threads) == nil {
            throw ValidationError(
                "--threads \"\(threads)\": expected a whole number of event loop threads from 1 to \(Self.threadRange.upperBound), such as 1 or \(ProxyOptions.threadsPerCore)."
            )
        }
    }

    func run() throws {
        let profile = try loadProfileOrExit(profile)
        let scenario = try scenario.map { try loadScenarioOrExit($0).0 }
        LoggingSystem.bootstrap { label in TerminalLogHandler(label: label, level: verbose ? .debug : .info) }
        TerminationSignals.block()
        let specs = listenerSpecs
        var options = ProxyOptions(
            connectionBuffer: CommandLineByteSize.parse(buffer)!,
            maximumBuffered: CommandLineByteSize.parse(maxBuffered)!,
            udpIdleTimeout: CommandLineDuration.parse(udpIdle)!)
        options.threads = threads.map { Self.threadCount($0)! } ?? ProxyOptions.threadsPerCore
        options.recording = recordArguments.recording
        options.realtimePriority = realtimeArgument.priority
        let proxy: ConditionedProxy
        do {
            proxy = try ConditionedProxy(listeners: specs, profile: profile, options: options)
        } catch {
            printError("linkcond: \(RealtimeArgument.explain(error))")
            throw ExitStatus.runtimeFailure
        }
        let logger = Logger(label: "linkcond")
        controlToken.warnIfOnTheCommandLine(logger)
        var registration: InstanceRegistration
        do {
            registration = try InstanceRegistration.claim(
                instanceName.request(base: nameBase), command: "run", profile: self.profile,
                listeners: proxy.listeners)
        } catch {
            proxy.stop()
            throw error
        }
        // The instance's own socket first: the endpoint served last is the one the proxy keeps out of its relays.
        registration.serveSocket(proxy, logger: logger)
        var controlLines: [String] = []
        var createdFiles: [String] = []
        do {
            let address = control.flatMap(ControlAddress.init(parsing:)) ?? .tcp(Endpoint(host: "127.0.0.1", port: 0))
            let (line, tokenFile) = try serveControl(proxy, at: address, logger: logger)
            controlLines.append("ready control \(line)")
            registration.addControl(line)
            createdFiles += tokenFile.map { [$0] } ?? []
        } catch {
            printError("linkcond: control endpoint: \(error)")
            proxy.stop()
            registration.release()
            throw ExitStatus.runtimeFailure
        }
        if let toxiproxy, let endpoint = Self.toxiproxyEndpoint(toxiproxy) {
            do {
                let token = toxiproxyWithoutToken ? nil : controlToken.value
                // An API without a token beyond loopback serves whoever reaches it (in a container, clients behind
                // the published port, whose user no socket table here names): every local user among them.
                let served = try proxy.serveToxiproxy(
                    at: endpoint, token: token, remoteListeners: allowRemote,
                    clients: toxiproxyAllowOtherUsers || toxiproxyWithoutToken ? .everyLocalUser : .ownerOnly,
                    requiresTokenBeyondLoopback: !toxiproxyWithoutToken)
                controlLines.insert("ready toxiproxy \(served)", at: 0)
                registration.addListener("ready toxiproxy \(served)")
                if toxiproxyWithoutToken && !ControlAddress.tcp(endpoint).isLocalOnly {
                    logger.warning(
                        "the Toxiproxy API at \(served) asks no token: anyone who reaches it (in a container, anyone who reaches its published port) can make linkcond connect anywhere it can reach; publish it to loopback only (-p 127.0.0.1:8474:8474)"
                    )
                }
                if let toxiproxyConfig {
                    let json = try Self.readToxiproxyConfig(toxiproxyConfig)
                    if let failure = proxy.populateToxiproxy(json) {
                        throw ControlSetupError("config \(toxiproxyConfig): \(failure)")
                    }
                }
            } catch {
                printError("linkcond: Toxiproxy API on \(endpoint): \(error)")
                proxy.stop()
                createdFiles.forEach(PrivateFiles.remove)
                registration.release()
                throw ExitStatus.runtimeFailure
            }
        }
        do {
            try registration.publish()
        } catch {
            proxy.stop()
            createdFiles.forEach(PrivateFiles.remove)
            registration.release()
            throw error
        }
        // "ready name" comes last: scripts and the clients read up to "ready control" and rely on the order before.
        let readyLines = (proxy.listeners.map(\.readyLine) + controlLines + [registration.readyLine]).map { $0 + "\n" }
            .joined()
        write(readyLines, to: .standardOutput)
        explainProxyFrontEnds(proxy.listeners)
        if let scenario { proxy.startScenario(scenario) }
        logger.info("profile \(profile.name.isEmpty ? "(inline)" : profile.name): \(profile.summary)")
        noteDatagramOnlyKeys(of: profile, on: specs, logger)
        let signal = TerminationSignals.wait()
        logger.info("signal \(signal): closing every connection")
        proxy.stop()
        createdFiles.forEach(PrivateFiles.remove)
        registration.release()
    }

    /// The start of this instance's automatic name: `toxiproxy` for a Toxiproxy API over the `none` profile (as
    /// `toxiproxy-server` and the container image start it), else the profile's name.
    private var nameBase: String {
        toxiproxy != nil && profile == "none" ? "toxiproxy" : InstanceName.base(forProfile: profile)
    }

    private func serveControl(_ proxy: ConditionedProxy, at address: ControlAddress, logger: Logger) throws -> (
        String, String?
    ) {
        try proxy.serveLocalControl(at: address, token: controlToken.value, logger: logger)
    }
}

extension RunCommand {
    /// The bytes of a Toxiproxy config file (at most 1 MiB).
    static func readToxiproxyConfig(_ path: String) throws -> [UInt8] {
        switch UserTextFile.read(path) {
        case .success(let text): return Array(text.utf8)
        case .failure(let failure):
            throw ControlSetupError("config file \(path): \(failure.reason(for: "Toxiproxy config"))")
        }
    }

    /// `--threads`: the main loop and up to 255 others.
    static let threadRange = 1...256

    /// The thread count `text` asks for, or nil when it is not a whole number in `threadRange`.
    static func threadCount(_ text: String) -> Int? {
        guard let count = Int(text.trimmingCharacters(in: .whitespaces)), threadRange.contains(count) else {
            return nil
        }
        return count
    }

    /// The Toxiproxy API's address: `HOST:PORT`, or `HOST` alone for Toxiproxy's port 8474.
    static func toxiproxyEndpoint(_ text: String) -> Endpoint? {
        if let endpoint = Endpoint(parsing: text) { return endpoint }
        let host = text.hasPrefix("[") && text.hasSuffix("]") ? String(text.dropFirst().dropLast()) : text
        guard !host.isEmpty, !host.contains("/"), !host.contains(" ") else { return nil }
        if host.contains(":") && !text.hasPrefix("[") { return nil }
        return Endpoint(host: host, port: 8474)
    }

    /// Tells the user that the profile's datagram-only keys (such as `corrupt`) do nothing when every listener relays
    /// TCP streams, which take no datagram impairment.
    private func noteDatagramOnlyKeys(of profile: Profile, on specs: [ListenerSpec], _ logger: Logger) {
        let keys = ProfileSettings.datagramOnlyKeys(profile)
        guard !keys.isEmpty, !specs.isEmpty, specs.allSatisfy({ if case .tcp = $0.kind { true } else { false } }) else {
            return
        }
        logger.notice("\(keys.joined(separator: ", ")) act on datagrams only: the TCP listeners here ignore them")
    }

    /// Every listener the options ask for, in the order their ready lines are printed.
    var listenerSpecs: [ListenerSpec] {
        let endpoint = { (text: String) in Endpoint(parsing: text)! }
        return zip(listen, upstream).map { ListenerSpec(listen: endpoint($0.0), kind: .tcp(upstream: endpoint($0.1))) }
            + zip(udpListen, udpUpstream).map {
                ListenerSpec(listen: endpoint($0.0), kind: .udp(upstream: endpoint($0.1)))
            }
            + dns.map { ListenerSpec(listen: endpoint($0), kind: .dns(upstream: dnsUpstream.map(endpoint))) }
            + proxyListenerSpecs
    }
}

/// Sizes given on the command line: a number with an optional B, KiB, MiB, KB or MB suffix.
enum CommandLineByteSize {
    /// `--buffer`: per connection and direction.
    static let bufferRange = 1...(1 << 30)
    /// `--max-buffered`: across every connection.
    static let maximumBufferedRange = (1 << 20)...(1 << 36)

    /// The size in bytes, or nil when the text is not a positive size or its bytes overflow.
    static func parse(_ text: String) -> Int? {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        let units: [(String, Int)] = [("KiB", 1024), ("MiB", 1024 * 1024), ("KB", 1000), ("MB", 1_000_000), ("B", 1)]
        for (suffix, factor) in units where trimmed.hasSuffix(suffix) {
            guard let value = Int(trimmed.dropLast(suffix.count).trimmingCharacters(in: .whitespaces)), value > 0 else {
                return nil
            }
            let (bytes, overflow) = value.multipliedReportingOverflow(by: factor)
            return overflow ? nil : bytes
        }
        guard let value = Int(trimmed), value > 0 else { return nil }
        return value
    }
}
