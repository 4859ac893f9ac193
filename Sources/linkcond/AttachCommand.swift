import ArgumentParser
import Foundation
import LinkConditioner
import Logging

/// `linkcond attach`: conditions every TCP connection and DNS lookup leaving a network namespace that exists
/// already (a pod's, a container's), with nftables rules in it that redirect them to linkcond, as `exec`'s proxy
/// mode does for a namespace it makes.
struct AttachCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "attach",
        abstract: "Condition the network namespace linkcond runs in (a sidecar), or another one, until it ends.",
        discussion: """
            nftables rules in the namespace (table inet linkcond-attach) send every TCP connection its programs \
            open, and every DNS query over UDP to port 53, through linkcond's TCP model and DNS path, as \
            `exec --mode proxy` does; nothing in the programs changes and no proxy settings are needed. \
            linkcond's own connections carry a firewall mark the rules let through. Not redirected: destinations \
            on the namespace itself (loopback and its own addresses, the control endpoint among them), \
            --exclude, IPv6 DNS, UDP other than DNS and ICMP, which all pass unconditioned.

            Examples:
              linkcond attach --profile 3g --control 0.0.0.0:7474
              linkcond attach --netns /run/netns/test --profile edge
              linkcond attach --pid 4242 --profile lte --exclude 10.96.0.1:443

            It needs CAP_NET_ADMIN in the namespace (and CAP_SYS_ADMIN to enter another one). The rules last \
            exactly as long as linkcond: they belong to an nft process linkcond holds, and the kernel removes \
            them when it ends, SIGKILL included; a start replaces rules an older run left. Steer it with \
            `linkcond use/set/offline/status --control URL`.

            Exit status: 0 after SIGINT, SIGTERM or SIGHUP, with the rules removed; 1 when the system refuses (no \
            CAP_NET_ADMIN, nft missing or refusing, the control address in use); 2 for bad usage or input (a \
            namespace path that does not exist, a process that is gone, a bad profile or exclusion).
            """
    )

    @Option(
        name: .long, help: "Built-in profile name or path to a .profile file.", completion: .list(Profile.builtInNames))
    var profile: String = "none"

    @Option(
        name: .long, help: "Scenario file (or shipped scenario name) to play from the start.",
        completion: .list(Scenario.builtInNames))
    var scenario: String?

    @Option(name: .long, help: "The network namespace to condition, as a file (/run/netns/NAME, /proc/PID/ns/net).")
    var netns: String?

    @Option(name: .long, help: "Condition the network namespace of this process.")
    var pid: Int32?

    @Option(
        name: .long,
        help:
            "Address of the control endpoint, in the conditioned namespace: HOST:PORT or a socket path (default 127.0.0.1:0 in the namespace linkcond runs in, none in another, where TCP needs LINKCOND_CONTROL_TOKEN; the instance's own socket in the private directory is served as well)."
    )
    var control: String?

    @OptionGroup var instanceName: InstanceNameOption

    @OptionGroup var controlToken: ServedControlToken

    @Option(
        name: .customLong("dns-upstream"),
        help:
            "Resolver the namespace's DNS lookups go to, HOST:PORT (default: the first nameserver in the resolv.conf its programs read: /etc/netns/NAME/resolv.conf for --netns /run/netns/NAME when it exists, /proc/PID/root/etc/resolv.conf for --pid, else /etc/resolv.conf)."
    )
    var dnsUpstream: String?

    @Option(
        name: .long,
        help:
            "Destinations left untouched (not redirected): addresses, CIDR networks, or ADDRESS:PORT ([IPv6]:PORT), comma-separated or repeated."
    )
    var exclude: [String] = []

    @OptionGroup var recordArguments: RecordArguments

    @OptionGroup var realtimeArgument: RealtimeArgument

    @Flag(name: .shortAndLong, help: "Log every connection.")
    var verbose = false

    func validate() throws {
        if netns != nil && pid != nil { throw ValidationError("--netns and --pid name the namespace twice: give one.") }
        if let pid, pid <= 0 { throw ValidationError("--pid \(pid): expected a process ID.") }
    }

    func run() throws {
        if let dnsUpstream, Endpoint(parsing: dnsUpstream) == nil {
            printError("linkcond: --dns-upstream \"\(dnsUpstream)\" is not HOST:PORT (IPv6 in brackets: [::1]:53).")
            throw ExitStatus.badInput
        }
        let target: NamespaceAttachment.Target = netns.map { .path($0) } ?? pid.map { .process($0) } ?? .current
        let controlNamespace: ServedInstance.ControlNamespace = target == .current ? .shared : .separate
        if let control {
            guard let address = ControlAddress(parsing: control) else {
                printError("linkcond: --control \"\(control)\" is neither HOST:PORT nor a socket path.")
                throw ExitStatus.badInput
            }
            if case .tcp = address, address.isLocalOnly, controlNamespace == .separate, controlToken.value == nil {
                printError(
                    "linkcond attach: --control \(control) would be in \(target.description), where the token file the linkcond command reads by port would stand for a socket on this side: set LINKCOND_CONTROL_TOKEN, or leave --control out and steer it through its own socket (--name NAME)."
                )
                throw ExitStatus.badInput
            }
        }
        var exclusions: [AttachExclusion] = []
        // Empty entries are kept, to be refused: `--exclude "$UNSET"` must not mean "exclude nothing" silently.
        for text in exclude.flatMap({ $0.split(separator: ",", omittingEmptySubsequences: false) }) {
            let entry = text.trimmingCharacters(in: .whitespaces)
            do {
                exclusions.append(try AttachExclusion(parsing: entry))
            } catch {
                printError("linkcond: --exclude \"\(entry)\": \(error).")
                throw ExitStatus.badInput
            }
        }
        // Before the rules go in: a refusal after would install and remove them while the namespace's
        // connections wait in a backlog.
        if let (name, _) = instanceName.given, let holder = InstanceDirectory().instance(named: name) {
            printError("linkcond: \(InstanceClaimError.nameTaken(name, pid: holder.pid)); nothing was installed")
            throw ExitStatus.badInput
        }
        let (profile, scenario, logger) = try prepareNamespaceCommand(
            profile: profile, scenario: scenario, verbose: verbose, controlToken: controlToken)
        let attachment: NamespaceAttachment
        do {
            attachment = try NamespaceAttachment(
                target: target, bypass: exclusions.map(\.match),
                dnsUpstream: dnsUpstream.flatMap(Endpoint.init(parsing:)))
        } catch {
            printError("linkcond attach: \(error)")
            throw error.isBadInput ? ExitStatus.badInput : ExitStatus.runtimeFailure
        }
        let settings = ExecSettings(
            plumbing: attachment.plumbing, dnsUpstream: dnsUpstream.flatMap(Endpoint.init(parsing:)),
            resolverConfiguration: target.resolverConfiguration)
        let proxy: ConditionedProxy
        do {
            var options = ProxyOptions()
            options.recording = recordArguments.recording
            options.realtimePriority = realtimeArgument.priority
            proxy = try ConditionedProxy(
                listeners: [ListenerSpec(listen: Endpoint(host: "127.0.0.1", port: 0), kind: .exec(settings))],
                profile: profile, options: options, logger: logger)
        } catch {
            attachment.detach()
            printError("linkcond attach: \(RealtimeArgument.explain(error))")
            throw ExitStatus.runtimeFailure
        }
        let instance: ServedInstance
        do {
            instance = try ServedInstance.start(
                proxy, command: "attach", profile: self.profile, name: instanceName, control: control,
                token: controlToken.value, namespace: controlNamespace, logger: logger)
        } catch {
            attachment.detach()
            throw error
        }
        if let scenario { proxy.startScenario(scenario) }
        let dns: String
        if let refusal = attachment.dnsRefusal {
            dns = "DNS not redirected (\(refusal)): it flows unconditioned"
        } else {
            let resolver =
                dnsUpstream
                ?? ((try? DNSForwarderSupport.systemResolver(configuration: settings.resolverConfiguration))
                    .map { "\($0), the first nameserver in \(settings.resolverConfiguration)" }
                    ?? "none: no nameserver in \(settings.resolverConfiguration)")
            dns = "DNS over UDP through the forwarder (to \(resolver))"
        }
        printError(
            "linkcond attach: conditioning \(target.description): TCP through the proxy's TCP model, \(dns); not redirected: the namespace's own addresses\(exclusions.isEmpty ? "" : ", --exclude"), IPv6 DNS, other UDP and ICMP"
        )
        logger.info("profile \(profile.name.isEmpty ? "(inline)" : profile.name): \(profile.summary)")
        var status = ExitCode.success
        while true {
            let (signal, _) = Namespaces.waitForSignalOrChild()
            if signal != Namespaces.childSignal && signal > 0 {
                logger.info("signal \(signal): removing the rules")
                break
            }
            if attachment.ownerEnded {
                printError("linkcond attach: the nft process holding the rules ended, and the rules with it; stopping")
                status = ExitStatus.runtimeFailure
                break
            }
        }
        attachment.detach()
        proxy.stop()
        instance.end()
        throw status
    }
}
