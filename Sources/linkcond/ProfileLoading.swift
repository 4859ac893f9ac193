import ArgumentParser
import LinkConditioner
import Logging

/// Loads a built-in profile by name or a profile file by path; a bad one is reported on stderr with exit status 2.
func loadProfileOrExit(_ nameOrPath: String) throws -> Profile {
    do {
        return try Profile.load(nameOrPath)
    } catch {
        printError("linkcond: \(error)")
        throw ExitStatus.badInput
    }
}

/// What `exec` and `attach` do before they touch a namespace: load the profile and the scenario (exit status 2 when
/// bad), log to stderr, warn of a token on the command line, and block the signals the main thread waits for.
func prepareNamespaceCommand(
    profile: String, scenario: String?, verbose: Bool, controlToken: ServedControlToken
) throws -> (Profile, Scenario?, Logger) {
    let profile = try loadProfileOrExit(profile)
    let scenario = try scenario.map { try loadScenarioOrExit($0).0 }
    LoggingSystem.bootstrap { label in TerminalLogHandler(label: label, level: verbose ? .debug : .notice) }
    let logger = Logger(label: "linkcond")
    controlToken.warnIfOnTheCommandLine(logger)
    Namespaces.blockChildAndTerminationSignals()
    return (profile, scenario, logger)
}
