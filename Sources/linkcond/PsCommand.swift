import ArgumentParser
import Foundation
import LinkConditioner

/// `linkcond ps`: the running instances of this user, as their descriptors in the private directory describe them.
struct PsCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ps", abstract: "List the running linkcond instances of this user.",
        discussion: """
            One line per instance: its name (which --name of the other commands picks), pid, current profile, \
            age and listeners. An instance whose process is gone is removed from the list for good.

            Examples:
              linkcond ps
              linkcond ps --json
            """)

    @Flag(help: "Print the instances as a JSON array.")
    var json = false

    func run() throws {
        let directory = InstanceDirectory()
        let instances = directory.running().map(InstanceTable.Row.init)
        for path in directory.unreadableDescriptors() {
            printError("linkcond: \(TerminalText.escaped(path)) cannot be read; its instance may run unlisted")
        }
        if json {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
            encoder.dateEncodingStrategy = .iso8601
            write(String(decoding: try encoder.encode(instances), as: UTF8.self) + "\n", to: .standardOutput)
        } else if instances.isEmpty {
            print("no linkcond runs for this user")
        } else {
            let columns = Terminal.isStandardOutput ? Terminal.standardOutputSize?.columns ?? 80 : 80
            print(InstanceTable.render(instances, columns: columns), terminator: "")
        }
    }
}

/// The running instances as `ps` and the steering commands' refusals show them.
enum InstanceTable {
    /// One instance, with the profile it runs now when it answers (else the one it started with).
    struct Row: Encodable {
        var name: String
        var pid: Int32
        var profile: String
        var command: String
        var started: Date
        var ageSeconds: Int
        var listeners: [String]
        var control: [String]
        var version: String

        init(_ descriptor: InstanceDescriptor) {
            name = descriptor.name
            pid = descriptor.pid
            profile = InstanceTable.currentProfile(of: descriptor)
            command = descriptor.command
            started = descriptor.started
            ageSeconds = max(0, Int(Date().timeIntervalSince(descriptor.started)))
            listeners = descriptor.listeners
            control = descriptor.control
            version = descriptor.version
        }

        /// The row with its name, profile and listeners' control characters escaped (`TerminalText`), for a
        /// terminal; JSON escapes by its own rules.
        var escaped: Row {
            var row = self
            row.name = TerminalText.escaped(name)
            row.profile = TerminalText.escaped(profile)
            row.listeners = listeners.map(TerminalText.escaped)
            return row
        }
    }

    /// The profile `descriptor`'s instance runs now, as its status names it; the one it started with (a file's
    /// base name) when it does not answer within a second.
    static func currentProfile(of descriptor: InstanceDescriptor) -> String {
        struct Answer: Decodable { var profile: String }
        let address = ControlTarget.instance(descriptor).address
        var client = ControlClient(address: address, token: try? ControlClient.token(for: address))
        client.timeout = .seconds(1)
        if let response = try? client.send("GET", "/status"), response.status == 200,
            let answer = try? JSONDecoder().decode(Answer.self, from: Data(response.body.utf8))
        {
            return answer.profile.isEmpty ? "(inline)" : answer.profile
        }
        return descriptor.profile.contains("/")
            ? (descriptor.profile as NSString).lastPathComponent : descriptor.profile
    }

    /// The table, fitted to `columns` as a terminal shows them (`TerminalText.columns`): the listeners come last and
    /// are cut with "…" where the line would be longer. Names come from others' command lines and profiles, so
    /// control characters are shown escaped, before they are measured.
    static func render(_ rows: [Row], columns: Int) -> String {
        let rows = rows.map(\.escaped)
        let nameWidth = rows.reduce(4) { max($0, TerminalText.columns($1.name)) }
        let profileWidth = min(16, rows.reduce(7) { max($0, TerminalText.columns($1.profile)) })
        let head =
            [
                "NAME".rightPadded(nameWidth), "PID".leftPadded(7), "PROFILE".rightPadded(profileWidth),
                "AGE".leftPadded(7), "LISTENERS",
            ].joined(separator: "  ")
        var lines = [head]
        for row in rows {
            let profile = StatusCommand.clipped(row.profile, to: profileWidth)
            let start =
                [
                    row.name.rightPadded(nameWidth), String(row.pid).leftPadded(7), profile.rightPadded(profileWidth),
                    age(row.ageSeconds).leftPadded(7),
                ].joined(separator: "  ") + "  "
            let listeners = row.listeners.map(summary).joined(separator: ", ")
            let room = max(1, columns - TerminalText.columns(start))
            lines.append(start + StatusCommand.clipped(listeners, to: room))
        }
        return lines.joined(separator: "\n") + "\n"
    }

    /// The lines a refusal lists the instances in: name, pid and profile.
    static func brief(_ instances: [InstanceDescriptor]) -> [String] {
        let rows = instances.map(Row.init)
        let nameWidth = rows.reduce(0) { max($0, $1.name.count) }
        return rows.map {
            "  \($0.name.padding(toLength: nameWidth, withPad: " ", startingAt: 0))  pid \($0.pid)  profile "
                + TerminalText.escaped($0.profile)
        }
    }

    /// A listener as the table shows it: its kind and where it listens (`tcp 127.0.0.1:4000`), without upstream.
    static func summary(_ listener: String) -> String {
        let words = listener.split(separator: " ")
        guard words.count >= 2 else { return listener }
        let address = words[1].hasPrefix("http://") ? words[1].dropFirst("http://".count) : words[1]
        return "\(words[0]) \(address)"
    }

    /// An age as `42s`, `5m07s`, `3h05m` or `2d03h`.
    static func age(_ seconds: Int) -> String {
        switch seconds {
        case ..<60: "\(seconds)s"
        case ..<3600: String(format: "%dm%02ds", seconds / 60, seconds % 60)
        case ..<86400: String(format: "%dh%02dm", seconds / 3600, seconds % 3600 / 60)
        default: String(format: "%dd%02dh", seconds / 86400, seconds % 86400 / 3600)
        }
    }
}
