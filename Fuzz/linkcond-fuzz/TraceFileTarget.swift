@testable import LinkConditioner
@testable import LinkModel

/// Capacity trace files (mahimahi's format): `DeliveryTrace(parsing:)`, which `trace = PATH` in a profile calls on
/// the file's bytes. A trace that parses is replayed by a `TraceSerializer`, as a bottleneck does, for packets at
/// instants the input's first bytes choose, up to the end of the clock, where its loop arithmetic would overflow.
enum TraceFileTarget {
    static func run(_ input: FuzzInput) {
        guard let trace = try? DeliveryTrace(parsing: input.bytes, name: "fuzz.trace") else { return }
        precondition(!trace.milliseconds.isEmpty && trace.periodMilliseconds > 0, "a trace of no time parsed")
        precondition(
            zip(trace.milliseconds, trace.milliseconds.dropFirst()).allSatisfy { $0 <= $1 }, "a trace went back in time"
        )
        let rate = trace.averageRate.bitsPerSecond
        precondition(rate.isFinite && rate > 0, "a trace's average rate is \(rate)")

        var serializer = TraceSerializer(trace: trace, origin: .zero)
        var start = Instant.zero
        for (index, byte) in input.bytes.prefix(8).enumerated() {
            let step = Int64(byte) << (index * 7)
            start =
                byte == 0xFF
                ? Instant(nanoseconds: .max - 1)
                : start.addingSaturating(nanoseconds: step.multipliedSaturating(by: 1_000_000))
            guard let end = serializer.transmissionEnd(bytes: Int(byte) * 100, startingAt: start) else { continue }
            precondition(end >= start, "a packet starting at \(start) left at \(end)")
            start = end
        }
    }
}
