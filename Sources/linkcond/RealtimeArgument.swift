import ArgumentParser
import LinkConditioner

/// `--realtime`, shared by `run` and `exec`: the main loop in SCHED_FIFO, so deliveries keep their times on a
/// loaded machine.
struct RealtimeArgument: ParsableArguments {
    @Flag(
        name: .long,
        help:
            "Run the event loop that shapes and times deliveries at real-time priority 1 (SCHED_FIFO), so a busy machine cannot make them late; needs root, CAP_SYS_NICE or ulimit -r 1. Splice loops and launched programs keep the normal class."
    )
    var realtime = false

    /// The priority to ask for, or nil without `--realtime`.
    var priority: Int32? { realtime ? 1 : nil }

    /// What to print when the proxy could not start: the option named when it was `--realtime` that failed.
    static func explain(_ error: Error) -> String {
        error is RealtimeSchedulingRefused ? "--realtime: \(error)" : "\(error)"
    }
}
