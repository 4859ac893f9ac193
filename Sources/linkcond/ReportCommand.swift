import ArgumentParser
import Foundation
import LinkConditioner

/// `linkcond report`: turns a recording into one HTML page, a plain-text summary and, with --json, JSON.
struct ReportCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "report",
        abstract: "Turn a recording (run --record) into a timeline and hygiene report.",
        discussion: """
            Writes one self-contained HTML page (no network needed to view it) and prints a summary with the \
            findings on stdout; --json prints the report as JSON instead.

            Examples:
              linkcond report app.jsonl -o app.html
              linkcond report app.jsonl --json

            A recording whose last line is cut short (the disk filled, linkcond was killed) is reported from the \
            lines before it, with a warning on stderr naming that line; a damaged line anywhere else is refused.

            Exit status: 0 success, 1 when the page cannot be written, 2 when FILE is not a recording this \
            linkcond reads (the error names file:line).
            """
    )

    @Argument(help: "The recording, as written by linkcond run --record FILE.")
    var file: String

    @Option(name: .shortAndLong, help: "Where to write the HTML page (default: FILE with .html).")
    var output: String?

    @Flag(name: .long, help: "Print the report as JSON on stdout instead of the summary.")
    var json = false

    func run() throws {
        let recording: Recording
        do {
            recording = try Recording(contentsOf: file)
        } catch {
            printError("linkcond: \(error)")
            throw ExitStatus.badInput
        }
        if let cut = recording.cutLine {
            printError(
                "linkcond: warning: \(file):\(cut): the last line is cut short (the recording was interrupted before it was written out: a full disk, a kill); the report covers the \(cut - 1) lines before it"
            )
        }
        let report = TrafficReport(recording)
        let page = output ?? (file.hasSuffix(".jsonl") ? String(file.dropLast(6)) : file) + ".html"
        guard FileManager.default.createFile(atPath: page, contents: Data(ReportPage.html(recording, report).utf8))
        else {
            printError("linkcond: cannot write \(page)")
            throw ExitStatus.runtimeFailure
        }
        if json {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
            write(String(decoding: try encoder.encode(report), as: UTF8.self) + "\n", to: .standardOutput)
        } else {
            write(report.summary + "page: \(page)\n", to: .standardOutput)
        }
    }
}
