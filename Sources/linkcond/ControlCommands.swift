import ArgumentParser
import Foundation
import LinkConditioner

/// How a command finds the running linkcond it steers.
struct ControlOptions: ParsableArguments {
    @Option(
        name: .long,
        help:
            "Control endpoint of the running linkcond: http://HOST:PORT or a socket path (default: $LINKCOND_CONTROL, then the per-user socket)."
    )
    var control: String?

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
    }

    /// Sends one request; prints the body and exits 0 on success, prints the error and exits 2 (bad input) or 1.
    func perform(_ method: String, _ path: String, body: String = "", quiet: Bool = false) throws -> String {
        guard let address = ControlClient.locate(control) else { throw ValidationError("no control address") }
        let response: ControlClient.Response
        do {
            let token = try controlToken ?? ControlClient.token(for: address)
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
