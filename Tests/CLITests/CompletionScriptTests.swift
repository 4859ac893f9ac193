import Foundation
import Testing

/// The bash completion script the binary generates offers the built-in profile, scenario and trace names, the
/// exec modes and the profile keys (from the settings table) where a command takes them, as bash itself completes
/// them from the script.
@Suite(.serialized)
struct CompletionScriptTests {
    struct Case: Sendable, CustomTestStringConvertible {
        /// The command line typed so far, the cursor at its end.
        var line: String
        var offered: [String]
        var testDescription: String { line }
    }

    static let cases: [Case] = [
        Case(line: "linkcond run --profile ed", offered: ["edge", "edge-good", "edge-lossy"]),
        Case(line: "linkcond exec --profile very", offered: ["very-bad-network"]),
        Case(line: "linkcond use 3g", offered: ["3g", "3g-good", "3g-lossy"]),
        Case(line: "linkcond profile show fast", offered: ["fast-3g", "fast-4g"]),
        Case(line: "linkcond tc apply lo wifi-", offered: ["wifi-802.11ac", "wifi-good"]),
        Case(line: "linkcond run --scenario su", offered: ["subway"]),
        Case(line: "linkcond scenario lea", offered: ["leaving-wifi"]),
        Case(line: "linkcond exec --mode ", offered: ["auto", "tun", "proxy"]),
        Case(line: "linkcond trace generate subway", offered: ["subway.down", "subway.up"]),
        Case(line: "linkcond set ge.loss", offered: ["ge.loss-bad", "ge.loss-good"]),
        Case(line: "linkcond set uplink.connect", offered: []),
    ]

    @Test(arguments: cases)
    func bashCompletesTheNamesACommandTakes(_ given: Case) throws {
        let script = FileManager.default.temporaryDirectory.appendingPathComponent(
            "linkcond-completion-\(UUID().uuidString.prefix(8)).bash")
        defer { try? FileManager.default.removeItem(at: script) }
        let generated = try LinkcondProcess.run(["--generate-completion-script", "bash"])
        try #require(generated.status == 0, "\(generated.stderr)")
        try generated.stdout.write(to: script, atomically: true, encoding: .utf8)
        // Sets bash's completion variables as bash does for a line whose cursor is at its end, then asks the
        // script's completion function for its candidates, one a line.
        let complete = """
            source "$1"
            read -ra COMP_WORDS <<< "$2"
            [[ "$2" == *" " ]] && COMP_WORDS+=("")
            COMP_CWORD=$(( ${#COMP_WORDS[@]} - 1 ))
            COMP_LINE="$2"
            COMP_POINT=${#COMP_LINE}
            _linkcond linkcond "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD - 1]}"
            printf '%s\\n' "${COMPREPLY[@]}"
            """

        let result = try LinkcondProcess.run(
            ["-c", complete, "bash", script.path, given.line],
            executable: URL(fileURLWithPath: "/bin/bash"))

        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.split(separator: "\n").map(String.init) == given.offered, "\(result.stdout)")
    }
}
