import Foundation
import LinkConditioner

/// `linkcond container-entrypoint [ARGUMENTS]`: the OCI image's entry point, so that the image replaces Toxiproxy's
/// (`ghcr.io/shopify/toxiproxy`, whose entry point is `toxiproxy-server` and whose command is `-host=0.0.0.0`) with
/// only the image name changed.
///
/// - No arguments, or Toxiproxy server's flags (`-host=0.0.0.0 -config=FILE`, as Testcontainers passes them):
///   Toxiproxy's API on `0.0.0.0:8474` (`-host` defaults to 0.0.0.0 here) with no token, as Toxiproxy serves it,
///   and its proxies may listen anywhere: the container's network is the boundary. The profile beneath the
///   toxics is `$LINKCOND_PROFILE` (default `none`). linkcond's own control endpoint listens on port 7474: on
///   every interface with the token in `$LINKCOND_CONTROL_TOKEN` (or `-token`), else inside the container only,
///   where `linkcond use edge` run by `docker exec` finds it (the image sets `LINKCOND_CONTROL`).
/// - A linkcond command (`run --profile 3g …`, `exec …`, `profiles`): passed through unchanged.
enum ContainerEntrypoint {
    static let command = "container-entrypoint"
    /// linkcond's control endpoint in the container; Toxiproxy's API keeps Toxiproxy's 8474.
    static let controlPort: UInt16 = 7474
    static let profileEnvironmentName = "LINKCOND_PROFILE"

    /// The linkcond arguments the container's `arguments` stand for, or a usage error (or the help text).
    static func runArguments(for arguments: [String], environment: [String: String]) throws(PersonalityError)
        -> [String]
    {
        guard let first = arguments.first, first.hasPrefix("-") else {
            return arguments.isEmpty
                ? try serving(ToxiproxyServerPersonality.parse([], defaultHost: "0.0.0.0"), environment) : arguments
        }
        switch first {
        case "-h", "-help", "--help": throw PersonalityError(usage, isHelp: true)
        case "--version": return ["--version"]
        default: return try serving(ToxiproxyServerPersonality.parse(arguments, defaultHost: "0.0.0.0"), environment)
        }
    }

    private static func serving(_ flags: ToxiproxyServerPersonality.Flags, _ environment: [String: String]) -> [String]
    {
        if flags.version { return ["--version"] }
        let profile = environment[profileEnvironmentName].flatMap { $0.isEmpty ? nil : $0 } ?? "none"
        let token = flags.token ?? environment[ServedControlToken.environmentName].flatMap { $0.isEmpty ? nil : $0 }
        let control = Endpoint(host: token == nil ? "127.0.0.1" : "0.0.0.0", port: controlPort)
        var flags = flags
        flags.allowRemote = true
        return [
            "run", "--toxiproxy", Endpoint(host: flags.host, port: flags.port).description, "--toxiproxy-without-token",
            "--profile", profile, "--control", control.description,
        ] + flags.runOptions
    }

    static let usage = """
        Usage of the linkcond image (linkcond container-entrypoint):
          (no arguments)     Toxiproxy's API on 0.0.0.0:8474 with no token, as Toxiproxy's image serves it:
                             anyone who reaches the port can make the container connect anywhere it can reach,
                             so publish it to loopback only (-p 127.0.0.1:8474:8474)
          -host, -port, -config FILE, -token TOKEN
                             Toxiproxy server's flags (-host defaults to 0.0.0.0 in the image)
          COMMAND …          a linkcond command, passed through: run --profile 3g …, exec …, attach …, profiles
        Environment:
          LINKCOND_PROFILE        profile beneath the toxics (default none)
          LINKCOND_CONTROL_TOKEN  linkcond's control endpoint listens on 0.0.0.0:7474 with this token
                                  (without it, on 127.0.0.1:7474 inside the container only:
                                  docker exec CONTAINER linkcond use edge)
        """
}
