import LinkConditioner
import Logging

/// linkcond's log on standard error: StreamLogHandler's lines, with every control character of the message and its
/// metadata shown escaped (`TerminalText`), so a name in a message (a Toxiproxy proxy's, a looked-up host's)
/// cannot forge a log line or drive the terminal. Used from any thread, as StreamLogHandler is.
struct TerminalLogHandler: LogHandler {
    private var stream: StreamLogHandler

    init(label: String, level: Logger.Level) {
        stream = StreamLogHandler.standardError(label: label)
        stream.logLevel = level
    }

    var logLevel: Logger.Level {
        get { stream.logLevel }
        set { stream.logLevel = newValue }
    }

    var metadataProvider: Logger.MetadataProvider? {
        get { stream.metadataProvider }
        set { stream.metadataProvider = newValue }
    }

    var metadata: Logger.Metadata {
        get { stream.metadata }
        set { stream.metadata = newValue.mapValues(Self.escaped) }
    }

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { stream[metadataKey: key] }
        set { stream[metadataKey: key] = newValue.map(Self.escaped) }
    }

    func log(event: LogEvent) {
        var event = event
        event.message = "\(TerminalText.escaped(event.message.description))"
        event.metadata = event.metadata?.mapValues(Self.escaped)
        stream.log(event: event)
    }

    private static func escaped(_ value: Logger.Metadata.Value) -> Logger.Metadata.Value {
        .string(TerminalText.escaped(value.description))
    }
}
