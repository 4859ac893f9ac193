import ArgumentParser
import Foundation
import LinkConditioner
import Logging

/// `linkcond exec`: runs one program (and everything it starts) in its own network namespace whose only way out
/// is linkcond's link model, packet by packet.
struct ExecCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "exec",
        abstract: "Run a program whose whole network crosses the conditioned link.",
        discussion: """
            The program runs in its own network namespace: every TCP connection, UDP datagram and DNS lookup it \
            makes to anything but its own loopback crosses the link as IP packets, so its own kernel TCP sees \
            the emulated network. No proxy settings are needed. Standard input, output and error are the \
            program's; linkcond's messages, and the lines "ready control URL" and "ready name NAME", go to \
            stderr. The program runs in \
            a PID namespace of its own, under a small init: when it exits, or linkcond ends in any way (SIGKILL \
            included), everything it started ends with it; /proc inside shows only those processes.

            Examples:
              linkcond exec --profile 3g -- curl -O http://example.test/file
              linkcond exec --profile edge --scenario subway -- npm test
              linkcond exec --profile very-bad-network --forward 5432 -- go test ./...

            Inside, 198.18.0.2 (fd0c:1c0d::2) is the host's loopback, through the link: 198.18.0.2:8080 reaches \
            127.0.0.1:8080 on the host. --forward makes 127.0.0.1:PORT inside do the same.

            Modes: tun (packets cross the link; needs /dev/net/tun) and proxy (nftables in the program's \
            namespace redirects its TCP connections and DNS lookups to linkcond, whose TCP model shapes them, \
            as `run` does; other UDP and ICMP are not carried and fail with "Operation not permitted"). The \
            default, auto, runs tun when /dev/net/tun opens and says on stderr when it falls back to proxy.

            Exit status: the program's (128+N when signal N ended it); 127 when it is not found, 126 when it \
            cannot run; 1 when the namespaces cannot be built (the message says what the kernel refused), 2 for \
            bad usage or a bad profile or scenario.
            """
    )

    @Option(
        name: .long, help: "Built-in profile name or path to a .profile file.", completion: .list(Profile.builtInNames))
    var profile: String = "none"

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

    @OptionGroup var controlToken: ServedControlToken

    @OptionGroup var instanceName: InstanceNameOption

    @Option(
        name: .customLong("dns-upstream"),
        help: "Resolver the program's DNS lookups go to, HOST:PORT (default: the first nameserver in /etc/resolv.conf)."
    )
    var dnsUpstream: String?

    /// `.unconditionalSingleValue`, so that `--forward -5` is refused as a port rather than as a missing value.
    @Option(
        name: .long, parsing: .unconditionalSingleValue,
        help:
            "Ports whose 127.0.0.1:PORT inside reaches 127.0.0.1:PORT on the host, through the link (TCP and UDP), comma-separated or repeated."
    )
    var forward: [String] = []

    @Option(
        name: .long,
        help:
            "Destinations whose packets bypass the link, added to the profile's exclude list: IPs and CIDR networks, comma-separated."
    )
    var exclude: [String] = []

    @Option(
        name: .long,
        help:
            "How the program's traffic leaves: auto (tun when /dev/net/tun opens, else proxy), tun (packets cross the link) or proxy (TCP and DNS through the proxy's TCP model).",
        completion: .list(ExecNamespace.Mode.allCases.map(\.rawValue)))
    var mode: String = "auto"

    @OptionGroup var recordArguments: RecordArguments

    @OptionGroup var realtimeArgument: RealtimeArgument

    @Flag(name: .shortAndLong, help: "Log every connection.")
    var verbose = false

    @Argument(parsing: .postTerminator, help: "The program and its arguments, after --.")
    var program: [String] = []

    func validate() throws {
        if forward.contains("--") {
            throw ValidationError("--forward: expected ports from 1 to 65535 before --, such as --forward 5432.")
        }
        guard !program.isEmpty else {
            throw ValidationError("no program given: linkcond exec [OPTIONS] -- PROGRAM [ARGUMENTS…]")
        }
        guard ExecNamespace.Mode(rawValue: mode) != nil else {
            throw ValidationError("--mode \"\(mode)\": expected auto, tun or proxy.")
        }
    }

    /// The command line that `arguments` (those after `exec`) meant when they name a program without the `--`
    /// that must come before it: the same words with `--` before the first word from which they parse, or nil when
    /// no place makes them valid (ArgumentParser's own message stands then).
    ///
    /// Without `--`, exec would take the program's options for its own (`curl -v`), or refuse them.
    static func withTerminator(_ arguments: [String]) -> String? {
        guard !arguments.contains("--") else { return nil }
        for index in arguments.indices where !arguments[index].hasPrefix("-") {
            let placed = Array(arguments[..<index]) + ["--"] + arguments[index...]
            if (try? parse(placed)) != nil {
                return (["linkcond", configuration.commandName!] + placed).map(shellWord).joined(separator: " ")
            }
        }
        return nil
    }

    /// `word` as a shell reads it back: bare when no shell treats any of its characters specially, else quoted, in
    /// single quotes unless it holds one (a backslash would show doubled, as error messages escape it).
    private static func shellWord(_ word: String) -> String {
        let plain = word.unicodeScalars.allSatisfy {
            ("a"..."z").contains($0) || ("A"..."Z").contains($0) || ("0"..."9").contains($0)
                || "@%+=:,./_-".unicodeScalars.contains($0)
        }
        if plain && !word.isEmpty { return word }
        if !word.contains("'") { return "'\(word)'" }
        if !word.contains(where: { #""$`\"#.contains($0) }) { return "\"\(word)\"" }
        return "'" + word.replacingOccurrences(of: "'", with: #"'\''"#) + "'"
    }

    func run() throws {
        let arguments = program
        if let dnsUpstream, Endpoint(parsing: dnsUpstream) == nil {
            printError("linkcond: --dns-upstream \"\(dnsUpstream)\" is not HOST:PORT (IPv6 in brackets: [::1]:53).")
            throw ExitStatus.badInput
        }
        if let control, ControlAddress(parsing: control) == nil {
            printError("linkcond: --control \"\(control)\" is neither HOST:PORT nor a socket path.")
            throw ExitStatus.badInput
        }
        guard let forwards = ExecNamespace.parseForwards(forward.isEmpty ? "-" : forward.joined(separator: ",")) else {
            printError(
                "linkcond: --forward \"\(forward.joined(separator: ","))\": expected ports from 1 to 65535, such as 5432 or 3000,8080."
            )
            throw ExitStatus.badInput
        }
        var exclusions: [HostPattern] = []
        do {
            for list in exclude { exclusions += try Profile.none.setting("exclude", to: list).exclude }
        } catch {
            printError("linkcond: --exclude: \(error)")
            throw ExitStatus.badInput
        }
        let (profile, scenario, logger) = try prepareNamespaceCommand(
            profile: profile, scenario: scenario, verbose: verbose, controlToken: controlToken)
        let launch: ExecLaunch
        do {
            launch = try ExecLaunch(
                program: arguments, congestion: profile.tcp.congestion.rawValue, forwards: forwards,
                mode: ExecNamespace.Mode(rawValue: mode)!)
        } catch {
            printError("linkcond exec: \(error)")
            throw ExitStatus.runtimeFailure
        }
        switch launch.plumbing {
        case .tunnel:
            logger.info("tun mode: every packet crosses the link; the program's own TCP runs over it")
        case .attached:
            break
        case .redirect(_, _, _, let tunRefusal):
            let why =
                tunRefusal.map { "/dev/net/tun is not usable (\($0)); running in proxy mode" }
                ?? "proxy mode (--mode proxy)"
            printError(
                "linkcond exec: \(why): TCP through the proxy's TCP model (the program's connect() returns at once; the link's round trip comes before its first byte), DNS through the forwarder; other UDP and ICMP are not carried (sending fails with \"Operation not permitted\")\(forwards.isEmpty ? "" : "; --forward carries TCP only")."
            )
        }
        let settings = ExecSettings(
            plumbing: launch.plumbing, dnsUpstream: dnsUpstream.flatMap(Endpoint.init(parsing:)),
            exclude: exclusions)
        let proxy: ConditionedProxy
        do {
            var options = ProxyOptions()
            options.recording = recordArguments.recording
            options.realtimePriority = realtimeArgument.priority
            proxy = try ConditionedProxy(
                listeners: [ListenerSpec(listen: Endpoint(host: "127.0.0.1", port: 0), kind: .exec(settings))],
                profile: profile, options: options, logger: logger)
        } catch {
            printError("linkcond exec: \(RealtimeArgument.explain(error))")
            launch.abandon()
            throw ExitStatus.runtimeFailure
        }
        let instance: ServedInstance
        do {
            instance = try ServedInstance.start(
                proxy, command: "exec", profile: self.profile, name: instanceName, control: control,
                token: controlToken.value, logger: logger)
        } catch {
            launch.abandon()
            throw error
        }
        if let scenario { proxy.startScenario(scenario) }
        logger.info("profile \(profile.name.isEmpty ? "(inline)" : profile.name): \(profile.summary)")
        do {
            try launch.start()
        } catch {
            printError("linkcond exec: \(error)")
            proxy.stop()
            launch.abandon()
            instance.end()
            throw ExitStatus.runtimeFailure
        }
        let status = launch.waitForExit { signal in logger.info("signal \(signal): passed to the program") }
        proxy.stop()
        instance.end()
        throw ExitCode(status)
    }
}
