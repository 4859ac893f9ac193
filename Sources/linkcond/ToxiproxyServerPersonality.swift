import Foundation
import LinkConditioner

/// `toxiproxy-server`: linkcond started under that name (a symlink) takes Toxiproxy server's flags, so scripts and
/// containers that start `toxiproxy-server` run linkcond in its place.
///
/// Go's flag syntax: `-host H`, `-host=H`, `--host H`. `-host` defaults to localhost and `-port` to 8474, as in
/// Toxiproxy; `-config FILE` creates the file's proxies at start. Beyond loopback, add `-allow-remote` and a
/// token, in `LINKCOND_CONTROL_TOKEN` as for `run` or with `-token TOKEN` (linkcond's rule for a remotely
/// reachable API; Toxiproxy has no such flags). `-allow-remote` also lets the API's proxies listen beyond loopback.
/// On loopback only the user's own programs (and root's) are served, unless `-allow-other-users`.
enum ToxiproxyServerPersonality {
    static let name = "toxiproxy-server"

    /// Whether the program was started as `toxiproxy-server`.
    static func isInvoked(as program: String?) -> Bool {
        program.map { ($0 as NSString).lastPathComponent == name } ?? false
    }

    /// Toxiproxy server's flags as given: `-host`, `-port`, `-config`, `-token`, `-name`, `-allow-remote`,
    /// `-allow-other-users`, `-version`.
    struct Flags {
        var host: String
        var port: UInt16 = 8474
        var config: String?
        var token: String?
        /// The instance's name (`run --name`).
        var name: String?
        var allowRemote = false
        var allowOtherUsers = false
        var version = false
    }

    /// Parses Go's flag syntax (`-host H`, `-host=H`, `--host H`); `-host` defaults to `defaultHost`.
    static func parse(_ flags: [String], defaultHost: String = "localhost") throws(PersonalityError) -> Flags {
        var parsed = Flags(host: defaultHost)
        var port = "8474"
        var index = 0
        func value(_ flag: String, inline: String?) throws(PersonalityError) -> String {
            if let inline { return inline }
            index += 1
            guard index < flags.count else { throw PersonalityError("flag needs an argument: -\(flag)") }
            return flags[index]
        }
        while index < flags.count {
            let word = flags[index]
            guard word.hasPrefix("-"), word != "-", word != "--" else {
                throw PersonalityError("unexpected argument \"\(word)\"")
            }
            let body = word.drop { $0 == "-" }
            let parts = body.split(separator: "=", maxSplits: 1).map(String.init)
            let inline = parts.count == 2 ? parts[1] : nil
            switch parts[0] {
            case "host": parsed.host = try value("host", inline: inline)
            case "port": port = try value("port", inline: inline)
            case "config": parsed.config = try value("config", inline: inline)
            case "token": parsed.token = try value("token", inline: inline)
            case "name": parsed.name = try value("name", inline: inline)
            case "allow-remote": parsed.allowRemote = true
            case "allow-other-users": parsed.allowOtherUsers = true
            case "version":
                parsed.version = true
                return parsed
            case "h", "help": throw PersonalityError(usage, isHelp: true)
            default:
                throw PersonalityError(
                    "flag provided but not supported by linkcond's toxiproxy-server: -\(parts[0])\n\(usage)")
            }
            index += 1
        }
        guard let portNumber = UInt16(port) else { throw PersonalityError("-port \"\(port)\" is not a port number") }
        parsed.port = portNumber
        return parsed
    }

    /// The `linkcond run` arguments Toxiproxy server's `flags` stand for, or a usage error.
    static func runArguments(for flags: [String]) throws(PersonalityError) -> [String] {
        let parsed = try parse(flags)
        if parsed.version { return ["--version"] }
        let endpoint = Endpoint(host: parsed.host, port: parsed.port)
        if !ControlAddress.tcp(endpoint).isLocalOnly
            && (!parsed.allowRemote || (parsed.token ?? ServedControlToken.environment) == nil)
        {
            throw PersonalityError(
                "-host \(parsed.host) is reachable from other hosts: add -allow-remote and a token, in \(ServedControlToken.environmentName) (other users cannot read it) or with -token TOKEN (every user can read it in ps); clients then send \"Authorization: Bearer TOKEN\""
            )
        }
        return ["run", "--toxiproxy", endpoint.description] + parsed.runOptions
    }

    static let usage = """
        Usage of toxiproxy-server (linkcond):
          -host string      Host for toxiproxy's API to listen on (default "localhost")
          -port string      Port for toxiproxy's API to listen on (default "8474")
          -config string    JSON file containing proxies to create on startup
          -allow-remote     Let the API and its proxies listen beyond loopback (the API needs a token)
          -allow-other-users
                            Serve programs of every local user, as Toxiproxy does (default: only yours and
                            root's, and clients that send the control token)
          -token string     Token every API request must carry as "Authorization: Bearer TOKEN" (beyond loopback;
                            default $LINKCOND_CONTROL_TOKEN, which other users cannot read as they can this flag)
          -name string      Name of this linkcond instance, which linkcond ps lists and linkcond --name picks
                            (default $LINKCOND_NAME, else toxiproxy-N)
          -version          Print the version and exit
        """
}

/// A `toxiproxy-server` usage error (or the help text).
struct PersonalityError: Error, CustomStringConvertible {
    var description: String
    var isHelp = false

    init(_ description: String, isHelp: Bool = false) {
        self.description = description
        self.isHelp = isHelp
    }
}

extension ToxiproxyServerPersonality.Flags {
    /// The `linkcond run` options for `-config`, `-token`, `-name`, `-allow-remote` and `-allow-other-users`.
    var runOptions: [String] {
        (config.map { ["--toxiproxy-config", $0] } ?? []) + (token.map { ["--control-token", $0] } ?? [])
            + (name.map { ["--name", $0] } ?? [])
            + (allowRemote ? ["--allow-remote"] : []) + (allowOtherUsers ? ["--toxiproxy-allow-other-users"] : [])
    }
}
