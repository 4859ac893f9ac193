/// The bytes a stream direction's link model released and its pump has not yet written, held back briefly so that
/// a busy direction reaches its destination in fewer, larger writes.
///
/// A real receiver on a fast link does not see segments one by one either: interrupt moderation and GRO hand its
/// socket batches within tens of microseconds. Each write through loopback costs about 10 µs of kernel time
/// whatever its size (the receive path and the reader's wake-up), and a 1 Gbit/s link releases a segment every
/// 12 µs, so writing each release as it came cost 220 000–300 000 writes per GB. The rules:
/// - a byte is written at most `longestHold` after the model released it, never before;
/// - bytes are held only while the direction keeps releasing: when no further release is due within the hold (a
///   ping, a request, the last bytes of a burst), everything held is written at once;
/// - bytes are held only when the pump is sure to be called again before their deadline: at the next release, but
///   no sooner than `loopSpacing` (the event loop's `TimerWakeSpacing`) from now. Otherwise they are written now
///   rather than by a timer of their own, so holding costs no wake-up and no timerfd arm of its own;
/// - once `largestWrite` bytes are held they are written at once.
///
/// Pure: time is an argument. Lives on the event loop thread, one per `StreamPump`.
struct WriteBatch {
    /// 100 µs: the delay-precision target, which no byte's lateness may exceed.
    static let standard = WriteBatch(
        longestHold: .microseconds(100), largestWrite: 64 * 1024,
        loopSpacing: TimerWakeSpacing.standard.spacing)

    /// How long after its release a held byte must be written.
    let longestHold: Duration
    /// Held bytes that are written at once, however recent.
    let largestWrite: Int
    /// The longest the event loop may take to run a timer due sooner: its wake-ups' spacing.
    let loopSpacing: Duration

    /// Bytes held.
    private(set) var bytes = 0
    /// When the oldest held byte was released; nil while none is held.
    private(set) var oldestRelease: Instant?

    /// What the pump does with the held bytes.
    enum Decision: Equatable {
        /// Nothing is held.
        case none
        /// Write every held byte now.
        case write
        /// Keep them, and write them at this instant unless a later decision writes them sooner.
        case hold(until: Instant)
    }

    /// Holds `count` more bytes, the oldest of them released by the model at `releasedAt`.
    mutating func add(_ count: Int, releasedAt: Instant) {
        guard count > 0 else { return }
        if bytes == 0 { oldestRelease = releasedAt }
        bytes += count
    }

    /// What to do at `now`, when the direction's next release may come at `nextRelease` (nil: none is on its way).
    /// A hold's deadline is for a release that does not come (an arrival after a hole releases nothing).
    func decision(at now: Instant, nextRelease: Instant?) -> Decision {
        guard bytes > 0, let oldest = oldestRelease else { return .none }
        let deadline = oldest + longestHold
        guard bytes < largestWrite, let next = nextRelease, max(next, now + loopSpacing) <= deadline else {
            return .write
        }
        return .hold(until: deadline)
    }

    /// Hands every held byte over for writing.
    mutating func take() -> Int {
        defer {
            bytes = 0
            oldestRelease = nil
        }
        return bytes
    }
}
