/// Where the relays, pumps and DNS forwarder report what crossed the link, for `run --record`.
///
/// Called on the event loop thread; each call must be cheap (no I/O). `exec` reports through the same calls.
protocol TrafficRecorder: AnyObject {
    /// A client connection was accepted; returns the number later calls name it by.
    func connectionOpened(listener: String, client: String, destination: String, name: String?, at now: Instant)
        -> UInt64
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
    func datagramsDropped(
        _ connection: UInt64, _ direction: RecordedDirection, count: Int, cause: StallCause, at now: Instant)
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

extension RecordedLookup {
    /// The lookup `answer` completes for `client`, after the client waited `delay`.
    init(client: String, answer: [UInt8], delay: Duration) {
        let summary = DNSSummary(answer: answer)
        self.init(
            client: client, name: summary.name, type: summary.type, delay: delay, answers: summary.answers,
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
