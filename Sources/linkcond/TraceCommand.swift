import ArgumentParser
import LinkConditioner

/// `linkcond trace`: the built-in capacity traces.
struct TraceCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "trace",
        abstract: "List or write the built-in capacity traces (mahimahi's format).",
        discussion: """
            Examples:
              linkcond trace list
              linkcond trace generate subway.down > subway.down
            """,
        subcommands: [List.self, Generate.self]
    )

    /// `linkcond trace list`: the built-in traces and their average rates.
    struct List: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "List the built-in traces.",
            discussion: """
                Examples:
                  linkcond trace list
                """)

        func run() {
            for name in TraceModel.presetNames {
                guard let trace = DeliveryTrace.builtIn(named: name) else { continue }
                let seconds = Double(trace.periodMilliseconds) / 1000
                print("\(name)  average \(formatRate(trace.averageRate)) over \(seconds) s, repeating")
            }
        }
    }

    /// `linkcond trace generate NAME`: writes a built-in trace, or a variant with another seed or duration.
    struct Generate: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Print a built-in trace in mahimahi's format.",
            discussion: """
                With --seed or --duration, draws a new trace from the same model. profiles/traces/ holds the defaults.

                Examples:
                  linkcond trace generate subway.down > subway.down
                  linkcond trace generate lte-driving.up --seed 7 --duration 30s
                """
        )

        @Argument(
            help: ArgumentHelp("A built-in trace name (see `linkcond trace list`).", valueName: "name"),
            completion: .list(TraceModel.presetNames))
        var name: String

        /// `--seed` and `--duration` parse `.unconditional`, so that `-1` is refused as their value says, not as a
        /// missing value.
        @Option(
            parsing: .unconditional, help: "Seed for the model's random draws (a whole number from 0 to 2^64-1).",
            transform: { text throws in
                guard let seed = UInt64(text) else {
                    throw ValidationError("expected a whole number from 0 to \(UInt64.max), such as 7.")
                }
                return seed
            })
        var seed: UInt64?

        @Option(
            parsing: .unconditional,
            help: ArgumentHelp(
                "How long the trace lasts: seconds, or with ms, s or min (\"90s\").", valueName: "duration"))
        var duration: String?

        func validate() throws {
            if TraceModel.presets[name] == nil {
                throw ValidationError(
                    "no built-in trace \"\(name)\"; expected one of \(TraceModel.presetNames.joined(separator: ", ")).")
            }
            if let duration {
                guard let value = CommandLineDuration.parse(duration), value <= .seconds(3600) else {
                    throw ValidationError(
                        "--duration \"\(duration)\": expected a duration up to 60 min (so the trace stays loadable), such as \"60s\" or \"500ms\"."
                    )
                }
            }
        }

        func run() {
            var model = TraceModel.presets[name]!
            if let seed { model.seed = seed }
            if let duration, let value = CommandLineDuration.parse(duration) { model.duration = value }
            print(model.fileText(), terminator: "")
        }
    }
}

private func formatRate(_ rate: BitRate) -> String {
    let megabits = rate.bitsPerSecond / 1e6
    return megabits >= 1
        ? "\((megabits * 100).rounded() / 100) Mbit/s" : "\((rate.bitsPerSecond / 10).rounded() / 100) kbit/s"
}
