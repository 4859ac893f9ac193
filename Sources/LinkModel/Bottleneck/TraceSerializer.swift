// A trace-driven serialiser, as mahimahi's LinkQueue replays a trace.
//
// The trace lists delivery opportunities: at origin + (k·P + tᵢ) ms for loop k = 0, 1, 2... and each line tᵢ
// (P is the last timestamp), one opportunity carries B bytes (1500 payload bytes, or a 1514-byte frame when the
// link counts frames). A packet that may start at s takes the unused opportunities at or after s, B bytes each, and leaves at the one that carries its last byte; what that
// opportunity has left over goes to the next packet if it was already waiting (it starts at the same instant),
// and is lost otherwise, as an idle link wastes its opportunities. A trace of n lines therefore carries at most
// n × B bytes per P milliseconds. The trace starts (origin) with the first packet the link ever sends.

/// Serialises by replaying a `DeliveryTrace` in a loop.
///
/// Lives on its bottleneck's thread.
public struct TraceSerializer: Serializer {
    public let trace: DeliveryTrace
    /// Bytes one delivery opportunity carries, as the link charges packets (`RateAccounting.traceOpportunityBytes`).
    public let opportunityBytes: Int
    /// When loop 0 of the trace starts; set by the first packet.
    public private(set) var origin: Instant?
    /// The next unused opportunity: its loop and its line.
    private var loop: Int64 = 0
    private var line = 0
    /// Bytes left in the opportunity that carried the previous packet's last byte, and when that was.
    private var leftover = 0
    private var leftoverAt = Instant(nanoseconds: .min)

    public init(trace: DeliveryTrace, opportunityBytes: Int = DeliveryTrace.opportunityBytes, origin: Instant? = nil) {
        self.trace = trace
        self.opportunityBytes = opportunityBytes
        self.origin = origin
    }

    public mutating func transmissionEnd(bytes: Int, startingAt start: Instant) -> Instant? {
        if origin == nil { origin = start }
        var remaining = max(bytes, 1)
        if leftover > 0 && leftoverAt == start {
            let used = min(leftover, remaining)
            leftover -= used
            remaining -= used
            if remaining == 0 { return start }
        }
        leftover = 0
        skipOpportunities(before: start)
        while true {
            let at = opportunityTime(loop: loop, line: line)
            guard at != .never else { return nil }
            remaining -= opportunityBytes
            moveToNextOpportunity()
            if remaining <= 0 {
                leftover = -remaining
                leftoverAt = at
                return at
            }
        }
    }

    /// The instant of opportunity `line` in loop `loop`, or `never` beyond the representable range.
    private func opportunityTime(loop: Int64, line: Int) -> Instant {
        guard let origin else { return .never }
        let (loopStart, overflow) = loop.multipliedReportingOverflow(by: trace.periodMilliseconds)
        guard !overflow else { return .never }
        let (milliseconds, sumOverflow) = loopStart.addingReportingOverflow(Int64(trace.milliseconds[line]))
        let (nanoseconds, productOverflow) = milliseconds.multipliedReportingOverflow(by: 1_000_000)
        guard !sumOverflow, !productOverflow else { return .never }
        return origin.addingSaturating(nanoseconds: nanoseconds)
    }

    private mutating func moveToNextOpportunity() {
        line += 1
        if line == trace.milliseconds.count {
            line = 0
            loop += 1
        }
    }

    /// Moves past every opportunity before `instant`: they went by unused.
    private mutating func skipOpportunities(before instant: Instant) {
        guard let origin, opportunityTime(loop: loop, line: line) < instant else { return }
        let elapsed = (instant - origin).nanoseconds
        let period = trace.periodMilliseconds * 1_000_000
        let wholeLoops = (elapsed - 1) / period
        if wholeLoops > loop {
            loop = wholeLoops
            line = 0
        }
        let offset = elapsed - loop * period
        var low = line
        var high = trace.milliseconds.count
        while low < high {
            let middle = (low + high) / 2
            if Int64(trace.milliseconds[middle]) * 1_000_000 < offset { low = middle + 1 } else { high = middle }
        }
        line = low
        if line == trace.milliseconds.count {
            line = 0
            loop += 1
            if opportunityTime(loop: loop, line: line) < instant { skipOpportunities(before: instant) }
        }
    }
}
