import ArgumentParser
import LinkConditioner

/// `--record` and `--record-limit`, shared by `run` and `exec`: where the event log goes and where it is truncated.
struct RecordArguments: ParsableArguments {
    @Option(
        name: .long,
        help: "Record what crosses the link to FILE as JSON lines (linkcond report FILE turns it into a page).")
    var record: String?

    /// `.unconditional`, so that `--record-limit -5` is refused as a size rather than as a missing value.
    @Option(
        name: .customLong("record-limit"), parsing: .unconditional,
        help: "Size at which the recording is truncated (its beginning kept, a last line saying so; at least 4KiB).")
    var recordLimit: String = "100MiB"

    func validate() throws {
        guard let limit = CommandLineByteSize.parse(recordLimit), limit >= 4096 else {
            throw ValidationError(
                "--record-limit \"\(recordLimit)\": expected a size of at least 4KiB, such as 100MiB.")
        }
    }

    /// What the proxy records, or nil without `--record`; call after `validate`.
    var recording: RecordingOptions? {
        record.map { RecordingOptions(path: $0, limit: CommandLineByteSize.parse(recordLimit)!) }
    }
}
