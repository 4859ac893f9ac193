import ArgumentParser
import Foundation
import LinkConditioner
import LinkNetem

/// `linkcond tc`: the kernel backend, which conditions a network device with tc qdiscs instead of proxying.
struct TCCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "tc",
        abstract: "Condition a network device in the kernel (tc qdiscs through netlink; needs root).",
        discussion: """
            Uplink is the device's egress; downlink is its ingress, redirected to an ifb device named lc-ifb-IFINDEX. \
            Rates count Ethernet frames as tc does (headers included), not payload. Inspect with `tc -s qdisc show`.

            Examples:
              sudo linkcond tc apply eth0 3g --port 8443
              sudo linkcond tc show eth0
              sudo linkcond tc clear eth0
            """,
        subcommands: [TCApplyCommand.self, TCShowCommand.self, TCClearCommand.self, TCRunCommand.self]
    )
}

/// The device to condition and the namespace to find it in, shared by every `tc` subcommand.
struct TCDeviceOptions: ParsableArguments {
    @Argument(help: "Network device, such as eth0.")
    var device: String

    @Option(name: .long, help: "Network namespace (as `ip netns` names it) the device lives in.")
    var netns: String?

    func trafficControl() throws -> TrafficControl {
        do {
            return try TrafficControl(networkNamespace: netns)
        } catch {
            printError("linkcond: \(error)")
            throw ExitStatus.runtimeFailure
        }
    }
}

/// The profile and options that say what to apply, shared by `tc apply` and `tc run`.
struct TCConditioningOptions: ParsableArguments {
    @Argument(help: "Built-in profile name or path to a .profile file.", completion: .list(Profile.builtInNames))
    var profile: String

    @Flag(name: .long, help: "Apply only the bandwidth (htb) and say what was left out; for kernels without netem.")
    var rateOnly = false

    /// `.unconditional`, so that `--port -1` is refused as a port rather than as a missing value.
    @Option(
        name: .long, parsing: .unconditional,
        help: "Condition only TCP/UDP traffic with this source or destination port.")
    var port: String?

    @Option(name: .long, help: "Condition only traffic to and from this IPv4 host.")
    var host: String?

    @Option(name: .long, help: "Condition only traffic to and from this IPv4 network, such as 198.18.0.0/15.")
    var network: String?

    func validate() throws {
        if [port, host, network].compactMap({ $0 }).count > 1 {
            throw ValidationError("give at most one of --port, --host and --network.")
        }
        if let port, TrafficMatch(port: port) == nil {
            throw ValidationError("--port \"\(port)\" is not a port number from 1 to 65535.")
        }
        if let host, TrafficMatch.init(network: host) == nil || host.contains("/") {
            throw ValidationError("--host \"\(host)\" is not an IPv4 address such as 198.18.0.2.")
        }
        if let network, TrafficMatch(network: network) == nil {
            throw ValidationError("--network \"\(network)\" is not an IPv4 network such as 198.18.0.0/15.")
        }
    }

    var match: TrafficMatch? {
        if let port { return TrafficMatch(port: port) }
        if let host { return TrafficMatch(network: host) }
        if let network { return TrafficMatch(network: network) }
        return nil
    }

    /// The profile in kernel terms; a profile that cannot be loaded, or asks for a fault, is bad input.
    func conditioning() throws -> (name: String, conditioning: KernelConditioning) {
        let loaded: Profile
        do {
            loaded = try Profile.load(profile)
        } catch {
            printError("linkcond: \(error)")
            throw ExitStatus.badInput
        }
        if loaded.fault != .none {
            printError(
                "linkcond: profile \"\(profile)\" has fault = \(loaded.fault.rawValue), which only the proxy can do (`linkcond run`)."
            )
            throw ExitStatus.badInput
        }
        let unprogrammed = Self.settingsTheKernelBackendDoesNotProgram(loaded)
        if !unprogrammed.isEmpty {
            printError(
                "linkcond: profile \"\(profile)\" sets \(unprogrammed.joined(separator: ", ")), which the kernel backend does not program yet; remove them, or use the proxy (`linkcond run --udp-listen …`)."
            )
            throw ExitStatus.badInput
        }
        return (loaded.name.isEmpty ? profile : loaded.name, KernelConditioning(profile: loaded, match: match))
    }

    /// The settings a profile makes that `tc apply` would otherwise silently leave out: datagram impairments,
    /// queue disciplines other than fifo (this kernel has no codel qdisc) and traces.
    static func settingsTheKernelBackendDoesNotProgram(_ profile: Profile) -> [String] {
        ProfileSettings.kernelUnsupported(profile)
    }
}

/// Applies a conditioning and prints what is now in the kernel; shared by `tc apply` and `tc run`.
func applyConditioning(_ options: TCConditioningOptions, device: TCDeviceOptions, control: TrafficControl) throws {
    let (name, conditioning) = try options.conditioning()
    let report: TrafficControl.ApplyReport
    do {
        report = try control.apply(conditioning, to: device.device, rateOnly: options.rateOnly)
    } catch {
        printError("linkcond: \(error)")
        throw ExitStatus.runtimeFailure
    }
    let via = report.ifbDevice.map { " (downlink via \($0))" } ?? ""
    print("\(report.replacedPrevious ? "replaced with" : "applied") \(name) on \(device.device)\(via)")
    for line in report.applied.summaryLines { print("  \(line)") }
    if let leftOut = report.leftOut { printError("linkcond: --rate-only: \(leftOut)") }
    fflush(nil)
}

struct TCApplyCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "apply",
        abstract: "Condition a device with a profile, replacing what linkcond applied there before.",
        discussion: """
            Refuses, changing nothing, when the kernel has no netem and the profile needs delay, jitter or loss \
            (unless --rate-only), or when the device has a root qdisc linkcond did not create.

            Examples:
              sudo linkcond tc apply eth0 3g
              sudo linkcond tc apply veth0 lte --netns test --network 198.18.0.0/15
            """
    )

    @OptionGroup var target: TCDeviceOptions
    @OptionGroup var options: TCConditioningOptions

    func run() throws {
        try applyConditioning(options, device: target, control: target.trafficControl())
    }
}

struct TCShowCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "show", abstract: "Print what linkcond applied to a device, read back from the kernel.",
        discussion: """
            Example:
              sudo linkcond tc show eth0
            """)

    @OptionGroup var target: TCDeviceOptions

    func run() throws {
        let control = try target.trafficControl()
        do {
            guard let applied = try control.readBack(target.device) else {
                print("\(target.device): not conditioned by linkcond")
                return
            }
            print("\(target.device): conditioned by linkcond")
            for line in applied.summaryLines { print("  \(line)") }
            let counters = try control.counters(target.device)
            for (name, direction) in [("uplink", counters.uplink), ("downlink", counters.downlink)] {
                guard let direction else { continue }
                print(
                    "  \(name) counters: \(direction.packets) packets, \(direction.bytes) bytes, \(direction.drops) dropped"
                )
            }
        } catch {
            printError("linkcond: \(error)")
            throw ExitStatus.runtimeFailure
        }
    }
}

struct TCClearCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "clear", abstract: "Remove exactly what linkcond created on a device, and nothing else.",
        discussion: """
            Example:
              sudo linkcond tc clear eth0
            """)

    @OptionGroup var target: TCDeviceOptions

    func run() throws {
        try clearConditioning(target, control: target.trafficControl())
    }
}

/// Clears a device and prints what was removed; shared by `tc clear` and `tc run`.
func clearConditioning(_ target: TCDeviceOptions, control: TrafficControl) throws {
    do {
        let removed = try control.clear(target.device)
        if removed.isEmpty { print("\(target.device): nothing of linkcond's to remove") }
        for object in removed { print("removed \(object)") }
    } catch {
        printError("linkcond: \(error)")
        throw ExitStatus.runtimeFailure
    }
}

struct TCRunCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "run",
        abstract: "Apply a profile to a device, wait for SIGINT or SIGTERM, then clear it.",
        discussion: """
            Example:
              sudo linkcond tc run eth0 "Very Bad Network"
            """)

    @OptionGroup var target: TCDeviceOptions
    @OptionGroup var options: TCConditioningOptions

    func run() throws {
        TerminationSignals.block()
        let control = try target.trafficControl()
        try applyConditioning(options, device: target, control: control)
        print("conditioning \(target.device) until SIGINT or SIGTERM")
        fflush(nil)
        let signal = TerminationSignals.wait()
        printError("linkcond: signal \(signal): clearing \(target.device)")
        try clearConditioning(target, control: control)
    }
}
