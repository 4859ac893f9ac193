import ArgumentParser
import Foundation
import LinkConditioner

/// How a command finds the running linkcond it steers: `--control`, else `--name`, else `LINKCOND_CONTROL`, else
/// `LINKCOND_NAME`, else the one instance that runs. With several running and none of these, it refuses to guess.
struct ControlOptions: ParsableArguments {
    @Option(
        name: .long,
        help:
            "Control endpoint of the running linkcond: http://HOST:PORT or a socket path (default: $LINKCOND_CONTROL)."
    )
    var control: String?

    @Option(
        name: .long,
        help:
            "Name of the running linkcond to steer, as linkcond ps lists it (default: $LINKCOND_NAME; without a name or a control endpoint, the one instance that runs)."
    )
    var name: String?

    @Option(
        name: .customLong("control-token"),
        help:
            "Token of the control endpoint (default: $LINKCOND_CONTROL_TOKEN, then the token file the running linkcond wrote)."
    )
    var controlToken: String?

    func validate() throws {
        if let control, ControlAddress(parsing: control) == nil {
            throw ValidationError("--control \"\(control)\" is neither http://HOST:PORT nor a socket path.")
        }
        if control != nil && name != nil {
            throw ValidationError("--control and --name both pick an instance: give one of them.")
        }
        if let name, let problem = InstanceName.problem(with: name) {
            throw ValidationError("--name \"\(name)\": \(problem).")
        }
    }

    /// Which running linkcond the options pick; prints why none can be picked and throws the exit status: 1 when
    /// none runs (or none has the name), 2 when several run and nothing says which, or a variable is malformed.
    func target() throws -> ControlTarget {
        let environment = ProcessInfo.processInfo.environment.filter { !$0.value.isEmpty }
        if let control { return .address(ControlAddress(parsing: control)!) }
        if let name { return .instance(try Self.instance(named: name, from: "--name")) }
        if let given = environment["LINKCOND_CONTROL"] {
            guard let address = ControlAddress(parsing: given) else {
                printError("linkcond: LINKCOND_CONTROL \"\(given)\" is neither http://HOST:PORT nor a socket path")
                throw ExitStatus.badInput
            }
            return .address(address)
        }
        if let given = environment[InstanceNameOption.environmentName] {
            if let problem = InstanceName.problem(with: given) {
                printError("linkcond: \(InstanceNameOption.environmentName) \"\(given)\": \(problem)")
                throw ExitStatus.badInput
            }
            return .instance(try Self.instance(named: given, from: InstanceNameOption.environmentName))
        }
        let directory = InstanceDirectory()
        let running = directory.running()
        let unreadable = directory.unreadableDescriptors()
        guard unreadable.isEmpty || running.count > 1 else {
            printError(
                "linkcond: not guessing which linkcond to steer: these descriptors cannot be read, and their instances may run:"
            )
            for path in unreadable { printError("  " + TerminalText.escaped(path)) }
            printError("pick one with --name NAME (or LINKCOND_NAME=NAME in the environment), or --control ADDRESS")
            throw ExitStatus.badInput
        }
        switch running.count {
        case 0:
            printError(
                "linkcond: no running linkcond answers: none runs for this user (linkcond ps lists them); start one with \"linkcond run …\", or pass --control ADDRESS"
            )
            throw ExitStatus.runtimeFailure
        case 1:
            return .instance(running[0])
        default:
            printError("linkcond: \(running.count) linkcond instances run; not guessing which one to steer:")
            InstanceTable.brief(running).forEach(printError)
            printError("pick one with --name NAME (or LINKCOND_NAME=NAME in the environment), or --control ADDRESS")
            throw ExitStatus.badInput
        }
    }

    /// The running instance called `name` (given by `source`), or exit status 1 naming the ones that run.
    private static func instance(named name: String, from source: String) throws -> InstanceDescriptor {
        let directory = InstanceDirectory()
        if let found = directory.instance(named: name) { return found }
        let running = directory.running().map(\.name)
        printError(
            "linkcond: no running linkcond is named \"\(name)\" (\(source)); "
                + (running.isEmpty ? "none runs" : "running: \(running.joined(separator: ", "))")
                + " (linkcond ps lists them)")
        throw ExitStatus.runtimeFailure
    }

    /// The endpoint of the picked instance and its token, for the requests of one command.
    func connect() throws -> ControlConnection {
        let address = try target().address
        do {
            return ControlConnection(address: address, token: try controlToken ?? ControlClient.token(for: address))
        } catch {
            printError("linkcond: \(error)")
            throw ExitStatus.runtimeFailure
        }
    }

    /// Sends one request to the picked instance (see `ControlConnection.perform`).
    func perform(_ method: String, _ path: String, body: String = "", quiet: Bool = false) throws -> String {
        try connect().perform(method, path, body: body, quiet: quiet)
    }
}

/// The running linkcond a command acts on: an endpoint given outright, or an instance found by its descriptor.
enum ControlTarget {
    case address(ControlAddress)
    case instance(InstanceDescriptor)

    /// Where to send requests: the endpoint given, or the instance's own socket (no token needed) while its file
    /// is there, else the first of its endpoints.
    var address: ControlAddress {
        switch self {
        case .address(let address): return address
        case .instance(let descriptor):
            let endpoints = descriptor.control.compactMap(ControlAddress.init(parsing:))
            let socket = endpoints.first { address in
                if case .unix(let path) = address { FileManager.default.fileExists(atPath: path) } else { false }
            }
            return socket ?? endpoints.first ?? .unix(InstanceDirectory().socketPath(descriptor.name))
        }
    }
}

/// One running linkcond's endpoint and token, found once so that every request of a command (each refresh of
/// `status --watch`) goes to the same instance.
struct ControlConnection {
    var address: ControlAddress
    var token: String?

    /// Sends one request; prints the body and exits 0 on success, prints the error and exits 2 (bad input) or 1.
    func perform(_ method: String, _ path: String, body: String = "", quiet: Bool = false) throws -> String {
        let response: ControlClient.Response
        do {
            response = try ControlClient(address: address, token: token).send(method, path, body: body)
        } catch {
            printError("linkcond: \(error)")
            throw ExitStatus.runtimeFailure
        }
        guard response.status == 200 else {
            printError("linkcond: \(response.body.trimmingCharacters(in: .whitespacesAndNewlines))")
            throw response.status >= 400 && response.status < 500 ? ExitStatus.badInput : ExitStatus.runtimeFailure
        }
        if !quiet { print(response.body, terminator: "") }
        return response.body
    }
}

/// `linkcond use PROFILE`: switches a running instance to a profile now.
struct UseCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "use", abstract: "Switch a running linkcond to another profile now.",
        discussion: """
            Connections keep their data and its order; new data sees the new profile at once.

            Examples:
              linkcond use edge
              linkcond use ./train.profile
            """)

    @Argument(help: "Built-in profile name or path to a .profile file.", completion: .list(Profile.builtInNames))
    var profile: String

    @OptionGroup var control: ControlOptions

    func run() throws {
        let body: String
        if profile.contains("/") || profile.hasSuffix(".profile") || FileManager.default.fileExists(atPath: profile) {
            do {
                // Checked here as the running linkcond will check it, so a refusal names this file, not the request.
                _ = try Profile(contentsOfFile: profile, readsFiles: false)
            } catch {
                printError("linkcond: \(error)")
                throw ExitStatus.badInput
            }
            guard let text = try? String(contentsOfFile: profile, encoding: .utf8) else {
                printError("linkcond: cannot read \(profile)")
                throw ExitStatus.badInput
            }
            body = text
        } else {
            body = profile
        }
        _ = try control.perform("PUT", "/profile", body: body, quiet: true)
        print("now using \(profile)")
    }
}

/// `linkcond offline`: airplane mode for a running instance.
struct OfflineCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "offline", abstract: "Take a running linkcond's link down, as in airplane mode.",
        discussion: """
            New connections are reset (or hang, with --blackhole, as in a tunnel), existing ones stall with their \
            data kept, DNS fails. "linkcond online" restores everything.

            Examples:
              linkcond offline
              linkcond offline --blackhole
            """)

    @Flag(help: "Let new connections hang instead of resetting them.")
    var blackhole = false

    @OptionGroup var control: ControlOptions

    func run() throws {
        _ = try control.perform("POST", "/offline", body: blackhole ? "blackhole" : "refuse")
    }
}

/// `linkcond online`: ends airplane mode.
struct OnlineCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "online", abstract: "Bring a running linkcond's link back up.",
        discussion: """
            Example:
              linkcond online
            """)

    @OptionGroup var control: ControlOptions

    func run() throws { _ = try control.perform("POST", "/online") }
}

/// `linkcond reset`: resets every live connection.
struct ResetCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "reset",
        abstract: "Reset every live connection of a running linkcond, as when a suspended app's sockets are reclaimed.",
        discussion: """
            Example:
              linkcond reset
            """)

    @OptionGroup var control: ControlOptions

    func run() throws { _ = try control.perform("POST", "/reset") }
}

/// `linkcond scenario FILE`: plays a scenario on a running instance.
struct ScenarioCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "scenario", abstract: "Play a scenario file on a running linkcond, or check one.",
        discussion: """
            A scenario is a timeline of "TIME ACTION" lines; see docs/guides/scenarios.md. \
            "--stop" stops the one playing.

            Examples:
              linkcond scenario subway
              linkcond scenario --check ./commute.scenario
              linkcond scenario --stop
            """)

    @Argument(help: "Path to a .scenario file, or the name of a shipped one.", completion: .list(Scenario.builtInNames))
    var file: String?

    @Flag(help: "Stop the scenario that is playing.")
    var stop = false

    @Flag(help: "Only check the file and exit (0 valid, 2 invalid).")
    var check = false

    @OptionGroup var control: ControlOptions

    func validate() throws {
        if stop == (file != nil) { throw ValidationError("give a scenario file, or --stop.") }
    }

    func run() throws {
        if stop {
            _ = try control.perform("DELETE", "/scenario")
            return
        }
        // Played, it is checked as the running linkcond will check it, so a refusal names the file and line.
        let (scenario, text) = try loadScenarioOrExit(file!, builtInProfilesOnly: !check)
        if check {
            print("ok \(file!): \(scenario.steps.count) steps")
            return
        }
        let name = scenario.name.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? ""
        _ = try control.perform("PUT", "/scenario?name=\(name)", body: text)
    }
}

/// Loads a scenario by path or shipped name; a bad one is reported on stderr with exit status 2.
func loadScenarioOrExit(_ nameOrPath: String, builtInProfilesOnly: Bool = false) throws -> (Scenario, String) {
    do {
        return try Scenario.load(nameOrPath, builtInProfilesOnly: builtInProfilesOnly)
    } catch {
        printError("linkcond: \(error)")
        throw ExitStatus.badInput
    }
}
