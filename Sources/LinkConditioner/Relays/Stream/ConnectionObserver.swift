/// What watches one relayed TCP connection: told when it is held, established and closed, and of each direction's
/// reads, deliveries and stalls. A relay is given its observer once, when it starts, and hands it to its pumps; none
/// of them looks further (`run --record` observes through `RecordedConnection`).
///
/// Called on the event loop thread; each call must be cheap (no I/O).
protocol ConnectionObserver: AnyObject {
    /// The upstream accepted the connection (linkcond's connect finished).
    func established(at now: Instant)
    /// The client's bytes are held, or (with `ended`) no longer, for `cause`, before the pumps exist: a blackhole,
    /// a lost handshake, a connect stall or a blackholed port.
    func connectionHeld(_ cause: StallCause, ended: Bool, at now: Instant)
    /// One read of `count` bytes from the side that sends in `direction`.
    func read(_ direction: RecordedDirection, _ count: Int, at now: Instant)
    /// `count` bytes the link released were written to the receiving side.
    func delivered(_ direction: RecordedDirection, _ count: Int, at now: Instant)
    /// Reading `direction` stopped for `cause` (a full queue or buffer); said again while stalled, it is one stall.
    func stall(_ direction: RecordedDirection, _ cause: StallCause, at now: Instant)
    /// Reading `direction` started again after a stall.
    func resume(_ direction: RecordedDirection, at now: Instant)
    /// A fault stage or a lost segment (`cause` is `fault` or `loss`) now holds, or no longer holds, the bytes of
    /// `direction`; kept apart from `stall`, so the two may overlap.
    func held(_ direction: RecordedDirection, _ cause: StallCause, _ holding: Bool, at now: Instant)
    /// The connection closed: with a FIN each way, or reset, first by `party`.
    func closed(by party: ClosingParty, reset: Bool, at now: Instant)
}

/// One connection as `run --record` writes it: its number in the recording, and the stalls each direction has
/// reported, so a pump that asks again while still stalled writes one line, not one per attempt. Event loop thread.
final class RecordedConnection: ConnectionObserver {
    private let recorder: TrafficRecorder
    private let connection: UInt64
    /// Per direction (up, then down): the queue stall reported and not yet ended.
    private var stalledFor: (up: StallCause?, down: StallCause?) = (nil, nil)
    /// Per direction: the `held` causes now in force, 1 for loss, 2 for a fault.
    private var heldBy: (up: UInt8, down: UInt8) = (0, 0)

    /// Opens the connection in `recorder`'s recording.
    init(
        recorder: TrafficRecorder, listener: String, client: String, destination: String, name: String?,
        at now: Instant
    ) {
        self.recorder = recorder
        connection = recorder.connectionOpened(
            listener: listener, client: client, destination: destination,
            name: name, at: now)
    }

    func established(at now: Instant) { recorder.connectionEstablished(connection, at: now) }

    func connectionHeld(_ cause: StallCause, ended: Bool, at now: Instant) {
        recorder.stall(connection, .up, cause: cause, ended: ended, at: now)
    }

    func read(_ direction: RecordedDirection, _ count: Int, at now: Instant) {
        recorder.bytesRead(connection, direction, count: count, at: now)
    }

    func delivered(_ direction: RecordedDirection, _ count: Int, at now: Instant) {
        recorder.bytesDelivered(connection, direction, count: count, at: now)
    }

    func stall(_ direction: RecordedDirection, _ cause: StallCause, at now: Instant) {
        let stalled = direction == .up ? stalledFor.up : stalledFor.down
        guard stalled == nil else { return }
        if direction == .up { stalledFor.up = cause } else { stalledFor.down = cause }
        recorder.stall(connection, direction, cause: cause, ended: false, at: now)
    }

    func resume(_ direction: RecordedDirection, at now: Instant) {
        guard let cause = direction == .up ? stalledFor.up : stalledFor.down else { return }
        if direction == .up { stalledFor.up = nil } else { stalledFor.down = nil }
        recorder.stall(connection, direction, cause: cause, ended: true, at: now)
    }

    func held(_ direction: RecordedDirection, _ cause: StallCause, _ holding: Bool, at now: Instant) {
        let flag: UInt8 = cause == .loss ? 1 : 2
        let causes = direction == .up ? heldBy.up : heldBy.down
        guard (causes & flag != 0) != holding else { return }
        if direction == .up { heldBy.up ^= flag } else { heldBy.down ^= flag }
        recorder.stall(connection, direction, cause: cause, ended: !holding, at: now)
    }

    func closed(by party: ClosingParty, reset: Bool, at now: Instant) {
        recorder.connectionClosed(connection, by: party, reset: reset, at: now)
    }
}
