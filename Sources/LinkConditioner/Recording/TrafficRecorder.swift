/// Where the relays, pumps and DNS forwarder report what crossed the link, for `run --record`.
///
/// Called on the event loop thread; each call must be cheap (no I/O). `exec` reports through the same calls.
protocol TrafficRecorder: AnyObject {
    /// A client connection was accepted; returns the number later calls name it by.
    func connectionOpened(listener: String, client: String, destination: String, name: String?, at now: Instant) -> UInt64
    /// The upstream accepted the connection (linkcond's connect finished).
    func connectionEstablished(_ connection: UInt64, at now: Instant)
    /// The app's bytes arrived: one read of `count` bytes from the side that sends in `direction`.
    func bytesRead(_ connection: UInt64, _ direction: RecordedDirection, count: Int, at now: Instant)
    /// The link released `count` bytes and linkcond wrote them to the receiving side.
    func bytesDelivered(_ connection: UInt64, _ direction: RecordedDirection, count: Int, at now: Instant)
    /// Reading `direction` stopped for `cause`, or (with `ended`) started again.
    func stall(_ connection: UInt64, _ direction: RecordedDirection, cause: StallCause, ended: Bool, at now: Instant)
    /// The connection closed: with a FIN each way, or reset, first by `party`.
    func connectionClosed(_ connection: UInt64, by party: ClosingParty, reset: Bool, at now: Instant)
    /// A DNS query was answered (or given up): its name, type, the time the client waited, and the addresses.
    func dnsLookup(_ lookup: RecordedLookup, at now: Instant)
    /// The conditions changed: a new profile, settings, offline or online.
    func conditionsChanged(_ conditions: LiveConditions, at now: Instant)
    /// A scenario started a step (`line` of its file) or stopped.
    func scenarioStep(_ description: String, line: Int?, at now: Instant)
    /// A UDP flow opened (a client's first datagram to the relay); returns its number, shared with connections.
    func flowOpened(listener: String, client: String, destination: String, at now: Instant) -> UInt64
    /// `count` datagrams going `direction` were dropped for `cause` (`queue`: the link's full queue; `loss`: the
    /// link's loss or queue discipline; `fault`: a blocked port or a cut).
    func datagramsDropped(_ connection: UInt64, _ direction: RecordedDirection, count: Int, cause: StallCause, at now: Instant)
}

/// The direction bytes cross: up from the client to its upstream, down back to the client.
enum RecordedDirection: String {
    case up
    case down
}

/// Why a direction stopped reading.
enum StallCause: String {
    /// The link's queue or linkcond's buffers were full: the sender was pushed back.
    case queue
    /// Loss: datagrams the link lost; or a TCP segment lost on the emulated link, holding the bytes behind it until
    /// its retransmission arrives (head-of-line blocking).
    case loss
    /// linkcond was offline: connections are held without an answer.
    case offline
    /// A connection fault (connect stall, blackholed port, first-byte delay, slicing, a cut that hangs) or a
    /// Toxiproxy toxic held the bytes.
    case fault
}

/// Who ended a connection first.
enum ClosingParty: String {
    case client
    case upstream
    /// linkcond itself: a reset the user asked for, a failed upstream connect, or shutdown.
    case linkcond
}

/// One DNS lookup as the forwarder saw it.
struct RecordedLookup {
    var client: String
    var name: String
    var type: String
    var delay: Duration
    var answers: [String]
    /// The DNS response code (0 = no error); nil when no answer came.
    var responseCode: Int?
    /// `udp`, or `tcp` for DNS over TCP.
    var transport = "udp"
}

/// One direction of one recorded connection, as its pump reports it. Remembers the stall it reported, so a pump
/// that asks again while still stalled writes one line, not one per attempt. Event loop thread.
struct PumpRecording {
    let recorder: TrafficRecorder
    let connection: UInt64
    let direction: RecordedDirection
    private var stalledFor: StallCause?
    /// The `held` causes now in force: 1 for loss, 2 for a fault.
    private var heldBy: UInt8 = 0

    init(recorder: TrafficRecorder, connection: UInt64, direction: RecordedDirection) {
        self.recorder = recorder
        self.connection = connection
        self.direction = direction
    }

    func read(_ count: Int, at now: Instant) { recorder.bytesRead(connection, direction, count: count, at: now) }

    func delivered(_ count: Int, at now: Instant) { recorder.bytesDelivered(connection, direction, count: count, at: now) }

    mutating func stall(_ cause: StallCause, at now: Instant) {
        guard stalledFor == nil else { return }
        stalledFor = cause
        recorder.stall(connection, direction, cause: cause, ended: false, at: now)
    }

    mutating func resume(at now: Instant) {
        guard let cause = stalledFor else { return }
        stalledFor = nil
        recorder.stall(connection, direction, cause: cause, ended: true, at: now)
    }

    /// Notes that a fault stage or a lost segment now holds this direction's bytes (`cause` is `fault` or `loss`),
    /// kept apart from the queue stall above so the two may overlap; one line per change, not per attempt.
    mutating func held(_ cause: StallCause, _ holding: Bool, at now: Instant) {
        let flag: UInt8 = cause == .loss ? 1 : 2
        guard (heldBy & flag != 0) != holding else { return }
        heldBy ^= flag
        recorder.stall(connection, direction, cause: cause, ended: !holding, at: now)
    }
}

extension RecordedLookup {
    /// The lookup `answer` completes for `client`, after the client waited `delay`.
    init(client: String, answer: [UInt8], delay: Duration) {
        let summary = DNSSummary(answer: answer)
        self.init(client: client, name: summary.name, type: summary.type, delay: delay, answers: summary.answers,
                  responseCode: summary.responseCode)
    }
}

extension Scenario.Action {
    /// The step in a few words, for the recording.
    var recordedText: String {
        switch self {
        case .profile(let profile): "profile \(profile.name.isEmpty ? "(inline)" : profile.name)"
        case .settings(let settings): "set " + settings.map { "\($0.key) = \($0.value)" }.joined(separator: ", ")
        case .offline(let mode): "offline \(mode.rawValue)"
        case .online: "online"
        case .ramp: "ramp"
        }
    }
}
