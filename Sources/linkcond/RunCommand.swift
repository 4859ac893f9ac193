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
            per listener is printed on stdout: "ready tcp LISTEN UPSTREAM". Logs go to stderr. SIGINT or SIGTERM \
            closes every connection and exits 0. Without any listener option, a SOCKS5 and HTTP proxy starts on \
            127.0.0.1 (port chosen by the system) and stderr says how to point an app at it.

            Examples:
              linkcond run --profile 3g
              linkcond run --listen 127.0.0.1:8080 --upstream 127.0.0.1:3000 --profile edge
              linkcond run --udp-listen 127.0.0.1:5353 --udp-upstream 127.0.0.1:53 --profile 3g-lossy

            Exit status: 0 after SIGINT or SIGTERM, 1 when a listener cannot start (address in use, unresolvable \
            upstream), 2 for bad usage or a bad profile or scenario.
            """
    )

    @Option(name: .long, help: "Address to accept connections on, HOST:PORT (port 0 picks a free port).")
    var listen: [String] = []

    @Option(name: .long, help: "Address to relay each connection to, HOST:PORT (a host name, IPv4 or [IPv6]).")
    var upstream: [String] = []

    @Option(name: .customLong("udp-listen"), help: "Address to receive UDP datagrams on, HOST:PORT; pairs with --udp-upstream.")
    var udpListen: [String] = []

    @Option(name: .customLong("udp-upstream"), help: "Address to relay each UDP flow to, HOST:PORT.")
    var udpUpstream: [String] = []

    @Option(name: .long, help: "Address for a DNS forwarder (UDP and TCP) that adds the profile's dns.delay, HOST:PORT.")
    var dns: [String] = []

    @Option(name: .customLong("dns-upstream"), help: "Resolver the DNS forwarder asks, HOST:PORT (default: the first nameserver in /etc/resolv.conf).")
    var dnsUpstream: String?

    @Option(name: .long, help: "Address for a SOCKS5 and HTTP proxy that conditions whatever an app connects to, HOST:PORT.")
    var proxy: [String] = []

    @Option(name: .customLong("proxy-user"), help: "USER:PASS every SOCKS5 and HTTP proxy client must give (recommended off loopback).")
    var proxyUser: String?

    @Option(name: .long, help: "Destinations the proxy relays untouched, added to the profile's exclude list: host names, *.domains, IPs and CIDR networks, comma-separated.")
    var exclude: [String] = []

    @Option(name: .long, help: "Built-in profile name or path to a .profile file.")
    var profile: String = "none"

    @Option(name: .long, help: "Bytes held per connection and direction before the sender is pushed back (e.g. 4MiB).")
    var buffer: String = "4MiB"

    @Option(name: .customLong("udp-idle"), help: "How long a UDP flow may carry no datagram before it is forgotten (e.g. 60s, 500ms, 5min).")
    var udpIdle: String = "60s"

    @Option(name: .long, help: "Scenario file (or shipped scenario name) to play from the start.")
    var scenario: String?

    @Option(name: .long, help: "Address of the control endpoint: HOST:PORT or a socket path (default 127.0.0.1:0, plus the per-user socket when free).")
    var control: String?

    @Option(name: .customLong("control-token"), help: "Token the control endpoint requires (needed when it listens on a non-loopback address).")
    var controlToken: String?

    @Flag(name: .shortAndLong, help: "Log every connection.")
    var verbose = false

    func validate() throws {
        try validateProxyFrontEnd()
        if listen.count != upstream.count {
            throw ValidationError("\(listen.count) --listen but \(upstream.count) --upstream: each --listen needs exactly one --upstream.")
        }
        if udpListen.count != udpUpstream.count {
            throw ValidationError("\(udpListen.count) --udp-listen but \(udpUpstream.count) --udp-upstream: each --udp-listen needs exactly one --udp-upstream.")
        }
        for text in listen + upstream + udpListen + udpUpstream + dns + proxy + [dnsUpstream].compactMap({ $0 })
        where Endpoint(parsing: text) == nil {
            throw ValidationError("\"\(text)\" is not HOST:PORT (IPv6 in brackets: [::1]:8080).")
        }
        if let control, ControlAddress(parsing: control) == nil {
            throw ValidationError("--control \"\(control)\" is neither HOST:PORT nor a socket path.")
        }
        if CommandLineByteSize.parse(buffer) == nil {
            throw ValidationError("--buffer \"\(buffer)\" is not a size such as 4MiB, 512KiB or 1048576.")
        }
        if CommandLineDuration.parse(udpIdle) == nil {
            throw ValidationError("--udp-idle \"\(udpIdle)\" is not a duration such as 60s, 500ms or 5min.")
        }
    }

    func run() throws {
        let profile = try loadProfileOrExit(profile)
        let scenario = try scenario.map { try loadScenarioOrExit($0).0 }
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = verbose ? .debug : .info
            return handler
        }
        TerminationSignals.block()
        let specs = listenerSpecs
        let options = ProxyOptions(connectionBuffer: CommandLineByteSize.parse(buffer)!,
                                   udpIdleTimeout: CommandLineDuration.parse(udpIdle)!)
        let proxy: ConditionedProxy
        do {
            proxy = try ConditionedProxy(listeners: specs, profile: profile, options: options)
        } catch {
            printError("linkcond: \(error)")
            throw ExitStatus.runtimeFailure
        }
        let logger = Logger(label: "linkcond")
        var controlLines: [String] = []
        do {
            let address = control.flatMap(ControlAddress.init(parsing:)) ?? .tcp(Endpoint(host: "127.0.0.1", port: 0))
            controlLines.append("ready control \(try proxy.serveControl(at: address, token: controlToken))")
        } catch {
            printError("linkcond: control endpoint: \(error)")
            proxy.stop()
            throw ExitStatus.runtimeFailure
        }
        if control == nil {
            do {
                let path = try proxy.serveControl(at: .userDefault, token: nil)
                logger.info("control socket \(path) (linkcond use/set/status/offline/online find it there)")
            } catch {
                logger.notice("control socket \(ControlAddress.userDefault) is taken by another linkcond; steer this one with --control")
            }
        }
        let readyLines = (proxy.listeners.map(\.readyLine) + controlLines).map { $0 + "\n" }.joined()
        FileHandle.standardOutput.write(Data(readyLines.utf8))
        explainProxyFrontEnds(proxy.listeners)
        if let scenario { proxy.startScenario(scenario) }
        logger.info("profile \(profile.name.isEmpty ? "(inline)" : profile.name): \(profile.summary)")
        let signal = TerminationSignals.wait()
        logger.info("signal \(signal): closing every connection")
        proxy.stop()
    }
}

extension RunCommand {
    /// Every listener the options ask for, in the order their ready lines are printed.
    var listenerSpecs: [ListenerSpec] {
        let endpoint = { (text: String) in Endpoint(parsing: text)! }
        return zip(listen, upstream).map { ListenerSpec(listen: endpoint($0.0), kind: .tcp(upstream: endpoint($0.1))) }
            + zip(udpListen, udpUpstream).map { ListenerSpec(listen: endpoint($0.0), kind: .udp(upstream: endpoint($0.1))) }
            + dns.map { ListenerSpec(listen: endpoint($0), kind: .dns(upstream: dnsUpstream.map(endpoint))) }
            + proxyListenerSpecs
    }
}

/// Sizes given on the command line: a number with an optional B, KiB, MiB, KB or MB suffix.
enum CommandLineByteSize {
    static func parse(_ text: String) -> Int? {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        let units: [(String, Int)] = [("KiB", 1024), ("MiB", 1024 * 1024), ("KB", 1000), ("MB", 1_000_000), ("B", 1)]
        for (suffix, factor) in units where trimmed.hasSuffix(suffix) {
            guard let value = Int(trimmed.dropLast(suffix.count).trimmingCharacters(in: .whitespaces)), value > 0 else { return nil }
            return value * factor
        }
        guard let value = Int(trimmed), value > 0 else { return nil }
        return value
    }
}
