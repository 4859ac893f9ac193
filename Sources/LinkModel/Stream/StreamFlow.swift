import DequeModule

/// One TCP connection's direction on a `StreamLink`: its emulated sender and receiver, the segments on their way
/// to the receiver and the ACKs on their way back.
///
/// Only counts and times live here; the proxy keeps the bytes themselves, in order. Lives on the event loop
/// thread of its link.
public final class StreamFlow {
    /// The flow's state as its link's emulation changes it, in one value: the link's per-segment work takes it
    /// `inout` once per event, where one stored property of the class per field would each be checked for
    /// exclusive access at run time.
    struct Model {
        var sender: TCPSender
        var receiver = TCPReceiver()
        /// The sender may send nothing before this: the end of its side of the handshake, or the peer's first bytes.
        var opensAt: Instant
        /// Segments past the bottleneck, with their arrival at the receiver (never decreasing) and their timestamp
        /// echo.
        var arrivals = Deque<(segment: TCPSegment, at: Instant, echo: Instant?)>()
        /// ACKs on the reverse path, with their arrival at the sender (never decreasing).
        var acks = Deque<(ack: TCPAck, at: Instant)>()
        /// Bytes the receiver released in order and the proxy has not taken yet.
        var releasedBytes = 0
        /// When the oldest of `releasedBytes` was released; nil while there are none. An observation for the
        /// proxy's write batching, never read by the model.
        var oldestReleaseAt: Instant?
        /// Segments of this flow in its link's bottleneck (queued or on the wire), so the link can tell whether
        /// more of its bytes are on their way. Counted by the link; the model's decisions never read it.
        var segmentsInBottleneck = 0
        /// Bytes written to the flow and not yet released to the receiver (sender's buffer and the network).
        var pendingBytes = 0
        var isMarkedChanged = false
        var isRemoved = false
        /// The instant of this flow's entry in its link's schedule, and that entry's generation (older ones are
        /// stale).
        var scheduledAt: Instant?
        var scheduleGeneration = 0
        /// Whether the receiver was head-of-line blocked after the last arrival, and the instants that changed it
        /// (a segment after a hole blocks it, the retransmission that fills the hole unblocks it), for the
        /// recording.
        var isLossBlocked = false
        var lossBlockChanges: [(at: Instant, blocked: Bool)] = []

        /// Counts `count` bytes released to the application at `at`.
        mutating func release(_ count: Int, at: Instant) {
            if releasedBytes == 0 { oldestReleaseAt = at }
            releasedBytes += count
        }

        /// Removes and returns the released bytes, and when the oldest of them was released (nil when none).
        mutating func takeRelease() -> (bytes: Int, oldest: Instant?) {
            let count = releasedBytes
            let oldest = count > 0 ? oldestReleaseAt : nil
            releasedBytes = 0
            oldestReleaseAt = nil
            return (count, oldest)
        }

        /// The flow's next own event: a segment arriving, an ACK arriving, a delayed ACK or a sender timer.
        var nextEventTime: Instant? {
            var next = arrivals.first?.at
            if let at = acks.first?.at { next = min(next ?? at, at) }
            if let at = receiver.delayedAckDeadline { next = min(next ?? at, at) }
            if let at = sender.nextTimer { next = min(next ?? at, at) }
            return next
        }
    }

    /// The flow's number on its link's bottleneck.
    let number: Int
    var model: Model
    /// For the server's side of an emulated handshake: the handshake, the instant of the client's connect(), and
    /// the SYN-ACK resends and lost ACKs counted for it, until the side opened.
    var serverHandshake: (attempts: HandshakeAttempts, connectedAt: Instant, resent: Int, acksLost: Int)?
    private let tally: LinkTally

    init(number: Int, settings: TCPSettings, opensAt: Instant, tally: LinkTally) {
        self.number = number
        self.model = Model(sender: TCPSender(settings: settings), opensAt: opensAt)
        self.tally = tally
    }

    /// The sender may send nothing before this: the end of its side of the handshake, or the peer's first bytes.
    public var opensAt: Instant { model.opensAt }
    var sender: TCPSender { model.sender }
    /// Bytes the receiver released in order and the proxy has not taken yet.
    package var releasedBytes: Int { model.releasedBytes }
    /// Bytes written to the flow and not yet released to the receiver (sender's buffer and the network).
    package var pendingBytes: Int { model.pendingBytes }

    /// Removes and returns how many bytes the receiver has released to the application by `now`.
    public func takeDeliverable(at now: Instant) -> Int {
        takeRelease(at: now).bytes
    }

    /// Removes and returns the bytes the receiver has released to the application by `now`, and when the oldest
    /// of them was released (nil when there are none).
    public func takeRelease(at now: Instant) -> (bytes: Int, oldest: Instant?) {
        let taken = model.takeRelease()
        tally.counters.bytesDelivered += taken.bytes
        return taken
    }

    /// Removes and returns when the receiver became blocked behind a lost segment, or was unblocked, in order.
    public func takeLossBlockChanges() -> [(at: Instant, blocked: Bool)] {
        guard !model.lossBlockChanges.isEmpty else { return [] }
        defer { model.lossBlockChanges.removeAll() }
        return model.lossBlockChanges
    }

    /// Segments on their way to the receiver, in bytes.
    var inFlightBytes: Int { model.arrivals.reduce(0) { $0 + $1.segment.length } }

    /// Congestion figures for status and tests: the sender's window and loss repairs.
    public var transport: TransportState {
        let sender = model.sender
        return TransportState(
            cwnd: sender.cwnd, ssthresh: sender.ssthresh, srtt: sender.timer.srtt,
            rto: sender.timer.timeout, retransmissions: sender.retransmissions,
            recoveries: sender.recoveries, timeouts: sender.timeouts, probes: sender.probes,
            slowStartExit: sender.slowStartExit)
    }
}

/// A snapshot of one emulated sender's state, in the kernel's names.
public struct TransportState: Hashable, Sendable {
    public var cwnd: Int
    public var ssthresh: Int
    public var srtt: Duration?
    public var rto: Duration
    public var retransmissions: Int
    public var recoveries: Int
    public var timeouts: Int
    /// Tail loss probes sent (`TCPLossProbes`).
    public var probes: Int
    /// How HyStart ended slow start, if it did (`TCPHystartTrainDetect`, `TCPHystartDelayDetect`).
    public var slowStartExit: HyStartExit?
}
