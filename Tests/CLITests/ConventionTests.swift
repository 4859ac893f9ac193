import Foundation
import LinkConditioner
import Testing

/// What users of command-line tools expect of every linkcond command: a version, help with an example,
/// documented exit statuses, and output fit for a pipe.
@Suite(.serialized)
struct ConventionTests {
    static let commands: [[String]] = [
        ["run"], ["exec"], ["attach"], ["ps"], ["use"], ["set"], ["status"], ["offline"], ["online"], ["reset"],
        ["scenario"], ["profiles"],
        ["profile"], ["profile", "show"], ["profile", "check"],
        ["tc"], ["tc", "apply"], ["tc", "show"], ["tc", "clear"], ["tc", "run"], ["report"], ["dashboard"],
        ["trace"], ["trace", "list"], ["trace", "generate"],
    ]

    @Test func versionPrintsTheVersionWrittenInVersionSwiftAndExitsZero() throws {
        let result = try LinkcondProcess.run(["--version"])

        #expect(result.status == 0)
        #expect(result.stdout == linkcondVersion + "\n")
    }

    @Test(arguments: commands)
    func helpOfEveryCommandShowsAnExampleOfItAndExitsZero(command: [String]) throws {
        let long = try LinkcondProcess.run(command + ["--help"])
        let short = try LinkcondProcess.run(command + ["-h"])

        #expect(long.status == 0 && short.status == 0)
        #expect(long.stdout == short.stdout)
        #expect(long.stdout.contains("Example"), "\(long.stdout)")
        let invocation = (["linkcond"] + command).joined(separator: " ")
        #expect(
            long.stdout.split(separator: "\n").contains { $0.contains(invocation) && $0.hasPrefix("  ") },
            "no example line runs \(invocation): \(long.stdout)")
    }

    /// Examples fit the 80 columns help is wrapped to off a terminal: a wrapped one would start a line unindented,
    /// and a user copying it would run half a command.
    @Test(arguments: [[]] + commands)
    func examplesFitEightyColumns(command: [String]) throws {
        let help = try LinkcondProcess.run(command + ["--help"]).stdout
        let examples =
            help.components(separatedBy: "Examples:\n").dropFirst().first?.components(separatedBy: "\n\n").first ?? ""

        for line in examples.split(separator: "\n") {
            #expect(
                line.hasPrefix("  "),
                "wrapped example line in \((["linkcond"] + command).joined(separator: " ")) --help: \(line)")
        }
    }

    /// Help in a terminal too narrow to wrap it into is printed at the narrowest width help takes, not a crash:
    /// the argument parser traps below it.
    @Test(arguments: [[]] + commands)
    func helpInANarrowTerminalIsPrinted(command: [String]) throws {
        let help = try LinkcondProcess.run(command + ["--help"], environment: ["COLUMNS": "5"])

        #expect(help.status == 0, "\((["linkcond"] + command).joined(separator: " ")) --help: \(help.stderr)")
        #expect(help.stdout.contains("USAGE:"), "\(help.stdout)")
    }

    /// An option's help says its default once: the parser appends "(default: VALUE)" to whatever the text says.
    @Test(arguments: commands)
    func helpStatesEachDefaultOnce(command: [String]) throws {
        let help = try LinkcondProcess.run(command + ["--help"]).stdout.split(whereSeparator: \.isWhitespace).joined(
            separator: " ")
        let repeated = try Regex(#"default:? ([^ ()]+?)\)?\.? \(default: \1\)"#)

        #expect(help.firstMatch(of: repeated) == nil, "\(help)")
    }

    /// `commands` is every command and subcommand the help lists, so a new command cannot go without an example.
    @Test func theCommandsCheckedAreEveryCommandTheHelpLists() throws {
        var listed: [[String]] = []
        var pending: [[String]] = [[]]
        while let command = pending.popLast(), listed.count < 100 {
            let help = try LinkcondProcess.run(command + ["--help"]).stdout
            let section = help.components(separatedBy: "SUBCOMMANDS:\n").dropFirst().first ?? ""
            for line in section.split(separator: "\n", omittingEmptySubsequences: false) {
                guard line.hasPrefix("  "), !line.hasPrefix("   ") else {
                    if line.isEmpty { break } else { continue }
                }
                guard let name = line.split(separator: " ").first.map(String.init), name != "help", name != "See" else {
                    continue
                }
                listed.append(command + [name])
                pending.append(command + [name])
            }
        }

        #expect(
            Set(listed) == Set(Self.commands),
            "listed by --help but not checked: \(Set(listed).subtracting(Self.commands))")
    }

    @Test func badUsageExitsTwoNamingTheOptionAndValue() throws {
        let unknownCommand = try LinkcondProcess.run(["teleport"])
        let badValue = try LinkcondProcess.run(["run", "--buffer", "lots"])

        #expect(unknownCommand.status == 2)
        #expect(
            unknownCommand.stderr.hasPrefix("linkcond: ") && unknownCommand.stderr.contains("teleport"),
            "\(unknownCommand.stderr)")
        #expect(badValue.status == 2)
        #expect(badValue.stderr.hasPrefix("linkcond: --buffer \"lots\""), "\(badValue.stderr)")
    }

    @Test func statusJSONAndTheControlEndpointSayTheVersion() throws {
        let instance = try ControlCommandTests.Instance()
        defer { instance.stop() }

        let status = try instance.linkcond(["status", "--json"])
        let version = try ControlClient(address: .unix(instance.socketPath)).send("GET", "/version")

        let report = try JSONDecoder().decode(StatusReport.self, from: Data(status.stdout.utf8))
        #expect(report.version == linkcondVersion)
        #expect(version.status == 200)
        let body = try JSONSerialization.jsonObject(with: Data(version.body.utf8)) as? [String: String]
        #expect(body == ["version": linkcondVersion])
    }

    /// On an 80×24 terminal (a pty from util-linux's `script`) each redraw fits the screen, so none scrolls the
    /// view away: the status of a relay with TCP losses and late deliveries is wider and taller than that.
    @Test(
        .enabled(
            if: FileManager.default.isExecutableFile(atPath: "/usr/bin/script"), "util-linux's script is not installed")
    )
    func statusWatchOnASmallTerminalRedrawsWithinTheScreen() throws {
        let instance = try ControlCommandTests.Instance(profile: "edge")
        defer { instance.stop() }
        let watch =
            "stty cols 80 rows 24; exec '\(LinkcondProcess.executable.path)' status --watch --count 2 --control '\(instance.socketPath)'"

        let result = try LinkcondProcess.run(
            ["-q", "-e", "-c", watch, "/dev/null"], executable: URL(fileURLWithPath: "/usr/bin/script"))

        let clear = "\u{1B}[H\u{1B}[2J"
        let redraws = result.stdout.components(separatedBy: clear).dropFirst()
        #expect(result.status == 0 && redraws.count == 2, "\(result.stdout.debugDescription)")
        for redraw in redraws {
            let lines = redraw.replacingOccurrences(of: "\r\n", with: "\n").split(
                separator: "\n", omittingEmptySubsequences: false
            ).dropLast()
            #expect(lines.count <= 23, "\(lines.count) lines on 24 rows: \(redraw)")
            #expect(lines.allSatisfy { $0.count <= 80 }, "a line wider than 80 columns: \(redraw)")
            #expect(lines.first?.hasPrefix("profile   edge:") == true, "\(redraw)")
        }
    }

    @Test func statusWatchIntoAPipeAppendsPlainLinesWithoutScreenControl() throws {
        let instance = try ControlCommandTests.Instance(profile: "edge")
        defer { instance.stop() }

        let watch = try instance.linkcond(["status", "--watch", "--count", "2"])

        #expect(watch.status == 0)
        #expect(!watch.stdout.contains("\u{1B}"), "\(watch.stdout.debugDescription)")
        #expect(watch.stdout.components(separatedBy: "profile   edge:").count == 3, "\(watch.stdout)")
    }
}
