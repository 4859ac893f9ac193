import ArgumentParser
import Foundation
import Logging

/// The token the control endpoint of `run` or `exec` requires: `--control-token`, else `LINKCOND_CONTROL_TOKEN`,
/// else none (a loopback endpoint then makes a random one and writes it to the private token file).
///
/// A command line is world-readable (`ps`, /proc/PID/cmdline) and the environment is not, so a token a script
/// chooses belongs in the environment. A token shorter than `minimumLength` is refused: anyone on the machine
/// can try short ones against a loopback port, and an empty one would lock everyone out.
struct ServedControlToken: ParsableArguments {
    @Option(
        name: .customLong("control-token"),
        help:
            "Token the control endpoint requires, at least 16 characters (default: $LINKCOND_CONTROL_TOKEN, which other users cannot read as they can a command line, else a random one written to a private file the linkcond command reads; required off loopback)."
    )
    var given: String?

    static let minimumLength = 16
    static let environmentName = "LINKCOND_CONTROL_TOKEN"

    /// The option as the user typed it: `-token` when linkcond runs as `toxiproxy-server`, whose flags stand for
    /// `run`'s, so a diagnostic names a flag the user knows.
    static var optionName: String {
        ToxiproxyServerPersonality.isInvoked(as: CommandLine.arguments.first) ? "-token" : "--control-token"
    }

    /// The token to require, or nil to let a loopback endpoint make its own.
    var value: String? { given ?? Self.environment }

    /// `LINKCOND_CONTROL_TOKEN` when set and not empty (the linkcond commands treat an empty one as unset too).
    static var environment: String? {
        ProcessInfo.processInfo.environment[environmentName].flatMap { $0.isEmpty ? nil : $0 }
    }

    func validate() throws {
        guard let token = value, token.count < Self.minimumLength else { return }
        throw ValidationError(
            "\(given != nil ? Self.optionName : Self.environmentName) is \(token.count) characters; a control token needs at least \(Self.minimumLength) characters, since anyone on this machine can try short ones (make one with \"openssl rand -hex 32\")."
        )
    }

    /// Says once at start that a token given on the command line is readable by every user of the machine.
    func warnIfOnTheCommandLine(_ logger: Logger) {
        guard given != nil else { return }
        logger.warning(
            "\(Self.optionName) on the command line is readable by every user of this machine (ps, /proc/PID/cmdline); pass it in \(Self.environmentName) instead"
        )
    }
}
