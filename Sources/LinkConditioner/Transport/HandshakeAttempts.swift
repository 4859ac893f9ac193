// A connection's three-way handshake over a lossy link, with the timers Linux repairs it by (net/ipv4/tcp_output.c
// tcp_connect, tcp_timer.c tcp_retransmit_timer, inet_connection_sock.c reqsk_timer_handler, tcp_minisocks.c
// tcp_check_req).
//
//     client: SYN at 0, and while no SYN-ACK came back again at 1, 3, 7, 15, 31, 63 s (TCP_TIMEOUT_INIT = 1 s,
//             doubled per retry, tcp_syn_retries = 6); connect() fails at 127 s
//     server: the first SYN that crosses the uplink makes a request and is answered by a SYN-ACK; every later SYN
//             is answered by another at once and restarts the request's timer; the timer resends the SYN-ACK after
//             1, 2, 4, 8 and 16 s (TCP_TIMEOUT_INIT << timeouts, tcp_synack_retries = 5), and drops the request at
//             the timeout after its fifth resend, so a later SYN makes a new one
//     client: established when the first SYN-ACK that crosses the downlink arrives, and answers it (and any later
//             SYN-ACK) with an ACK over the uplink
//     server: established when the first such ACK arrives; its timer keeps resending SYN-ACKs until then
//
// When the first SYN got through, the server's timer and the client's retransmitted SYN come due at the same
// instant (both wait 1 s, then 2 s, …, from the same SYN), so a lost SYN-ACK costs 1 s like a lost SYN does. The
// SYN is taken first there: its answer restarts the timer, so one SYN-ACK answers both (Linux sends one or two,
// as the jiffies fall). Lost in either direction, the first request/response is late by 1 s, by 3 s after two
// losses of the SYN, and so on.
//
// The final ACK is lost with the uplink's loss like the SYN. A server that speaks first then waits for its SYN-ACK
// timer (1 s, then 2 s …) and the client's answer to the resent SYN-ACK; in a client-first protocol the request's
// first segment carries the same acknowledgement (tcp_check_req accepts it), so the proxy opens the server's side
// when the client's first bytes reach it (`StreamLink.open(_:at:)`), and a lost final ACK costs nothing. Linux takes the first RTT sample from the
// timestamps the SYN-ACK echoes, so a retransmitted SYN leaves the first retransmission timeout at about 200 ms
// (the 3 s TCP_TIMEOUT_FALLBACK applies only without a sample); but more than one retransmission of a side's SYN
// or SYN-ACK starts that side's window at one segment (tcp_init_transfer).

/// The fate of one connection's handshake: when the server first heard of it, when the client was established,
/// and what that took. Pure: the losses come from the closures given, in the order the segments are sent.
public struct HandshakeAttempts: Hashable, Sendable {
    /// TCP_TIMEOUT_INIT: the wait before the first retransmission of a SYN or SYN-ACK, doubled for each next one.
    public static let initialTimeout = Duration.seconds(1)
    /// tcp_syn_retries: the SYN retransmissions before connect() gives up.
    public static let synRetries = 6
    /// tcp_synack_retries: the SYN-ACK retransmissions of one request by the server's timer.
    public static let synAckRetries = 5

    /// The one-way delays the handshake crossed: the SYNs and final ACK the uplink's, the SYN-ACKs the downlink's.
    public let uplinkDelay: Duration
    public let downlinkDelay: Duration
    /// After the client's connect(), when the first SYN reached the server; nil if none did.
    public let serverReached: Duration?
    /// After the client's connect(), when the first SYN-ACK reached the client; nil if connect() gave up.
    public let clientEstablished: Duration?
    /// After the client's connect(), when an ACK of a SYN-ACK first reached the server; nil if none did before the
    /// server dropped its request (only the client's data can then open the server's side).
    public let serverEstablished: Duration?
    /// SYNs the client sent after its first, until it was established or gave up.
    public let synRetransmissions: Int
    /// SYN-ACKs the server sent after its first, until it was established or gave up.
    public let synAckRetransmissions: Int
    /// The client's ACKs of SYN-ACKs lost on the uplink before one reached the server.
    public let handshakeAcksLost: Int

    /// The handshake of a link that loses nothing: one round trip, with no retransmission while the round trip
    /// is at most the first timeout (the SYN-ACK is taken before a SYN resent at the same instant, the ACK before
    /// the server's timer). Only a longer round trip is played out, since the client then resends its SYN before
    /// the answer arrives.
    public init(uplinkDelay: Duration, downlinkDelay: Duration) {
        guard uplinkDelay >= .zero, downlinkDelay >= .zero, uplinkDelay + downlinkDelay <= Self.initialTimeout else {
            self.init(uplinkDelay: uplinkDelay, downlinkDelay: downlinkDelay, synLost: { false }, synAckLost: { false })
            return
        }
        self.init(uplinkDelay: uplinkDelay, downlinkDelay: downlinkDelay, serverReached: uplinkDelay,
                  clientEstablished: uplinkDelay + downlinkDelay, serverEstablished: uplinkDelay * 2 + downlinkDelay,
                  synRetransmissions: 0, synAckRetransmissions: 0, handshakeAcksLost: 0)
    }

    /// Plays the handshake out; `synLost` is asked once per SYN sent, `synAckLost` once per SYN-ACK sent and
    /// `ackLost` once per ACK of a SYN-ACK the client sends, in time order.
    public init(uplinkDelay: Duration, downlinkDelay: Duration, synLost: () -> Bool, synAckLost: () -> Bool,
                ackLost: () -> Bool = { false }) {
        var play = HandshakePlay()
        for _ in 0..<Self.maximumEvents {
            guard play.step(uplinkDelay: uplinkDelay, downlinkDelay: downlinkDelay, synLost: synLost,
                            synAckLost: synAckLost, ackLost: ackLost) else { break }
        }
        self.init(uplinkDelay: uplinkDelay, downlinkDelay: downlinkDelay, serverReached: play.serverReached,
                  clientEstablished: play.established, serverEstablished: play.serverEstablished,
                  synRetransmissions: max(play.synsSent - 1, 0), synAckRetransmissions: max(play.synAcksSent - 1, 0),
                  handshakeAcksLost: play.acksLost)
    }

    private init(uplinkDelay: Duration, downlinkDelay: Duration, serverReached: Duration?, clientEstablished: Duration?,
                 serverEstablished: Duration?, synRetransmissions: Int, synAckRetransmissions: Int, handshakeAcksLost: Int) {
        self.uplinkDelay = uplinkDelay
        self.downlinkDelay = downlinkDelay
        self.serverReached = serverReached
        self.clientEstablished = clientEstablished
        self.serverEstablished = serverEstablished
        self.synRetransmissions = synRetransmissions
        self.synAckRetransmissions = synAckRetransmissions
        self.handshakeAcksLost = handshakeAcksLost
    }

    /// Whether every attempt was lost and the client's connect() gave up.
    public var isAbandoned: Bool { clientEstablished == nil }

    /// How long after the client's connect() its connect() gives up: the last SYN's doubled timeout.
    public static var clientGivesUpAfter: Duration { initialTimeout * ((1 << (synRetries + 1)) - 1) }

    /// Bound on the events of one handshake: 7 SYNs, their arrivals, and the server's timers and answers.
    private static let maximumEvents = 1_000
}

/// The handshake's state while it is played out, one event at a time in time order.
private struct HandshakePlay {
    /// The server's pending request: when its timer fires, and how often it fired.
    struct Request {
        var timerAt: Duration
        var timeouts: Int
    }

    var synsSent = 0
    var synAcksSent = 0
    var acksLost = 0
    var synArrivals: [Duration] = []
    var synAckArrivals: [Duration] = []
    var ackArrivals: [Duration] = []
    var request: Request?
    var serverReached: Duration?
    var established: Duration?
    var serverEstablished: Duration?

    private enum Event { case ackArrives, synAckArrives, synArrives, timer, synSent, clientGivesUp }

    /// When the client sends its SYN number `index` (0 is the first), while it has neither been established nor
    /// given up.
    private func synSendTime(_ index: Int) -> Duration? {
        guard established == nil, index <= HandshakeAttempts.synRetries else { return nil }
        return HandshakeAttempts.initialTimeout * ((1 << index) - 1)
    }

    /// Handles the earliest pending event (ties in the order of `Event`); false once the handshake is decided.
    mutating func step(uplinkDelay: Duration, downlinkDelay: Duration, synLost: () -> Bool, synAckLost: () -> Bool,
                       ackLost: () -> Bool) -> Bool {
        var candidates: [(Duration, Event)] = []
        if established == nil { candidates.append((HandshakeAttempts.clientGivesUpAfter, .clientGivesUp)) }
        if let at = ackArrivals.first { candidates.append((at, .ackArrives)) }
        if let at = synAckArrivals.first { candidates.append((at, .synAckArrives)) }
        if let at = request?.timerAt { candidates.append((at, .timer)) }
        if let at = synArrivals.first { candidates.append((at, .synArrives)) }
        if let at = synSendTime(synsSent) { candidates.append((at, .synSent)) }
        guard let (now, event) = candidates.min(by: { lhs, rhs in
            lhs.0 == rhs.0 ? Self.order(lhs.1) < Self.order(rhs.1) : lhs.0 < rhs.0
        }) else { return false }
        switch event {
        case .clientGivesUp:
            return false
        case .ackArrives:
            serverEstablished = now
            return false
        case .synAckArrives:
            synAckArrivals.removeFirst()
            if established == nil { established = now }
            if ackLost() { acksLost += 1 } else { ackArrivals.append(now + uplinkDelay) }
        case .synSent:
            synsSent += 1
            if !synLost() { synArrivals.append(now + uplinkDelay) }
        case .synArrives:
            synArrivals.removeFirst()
            if serverReached == nil { serverReached = now }
            if var pending = request {
                pending.timerAt = now + HandshakeAttempts.initialTimeout * (1 << pending.timeouts)
                request = pending
            } else {
                request = Request(timerAt: now + HandshakeAttempts.initialTimeout, timeouts: 0)
            }
            sendSynAck(at: now, downlinkDelay: downlinkDelay, lost: synAckLost)
        case .timer:
            guard var pending = request, pending.timeouts < HandshakeAttempts.synAckRetries else {
                request = nil
                return established == nil
            }
            sendSynAck(at: now, downlinkDelay: downlinkDelay, lost: synAckLost)
            pending.timeouts += 1
            pending.timerAt = now + HandshakeAttempts.initialTimeout * (1 << pending.timeouts)
            request = pending
        }
        return true
    }

    private mutating func sendSynAck(at now: Duration, downlinkDelay: Duration, lost: () -> Bool) {
        synAcksSent += 1
        if !lost() { synAckArrivals.append(now + downlinkDelay) }
    }

    private static func order(_ event: Event) -> Int {
        switch event {
        case .ackArrives: 0
        case .synAckArrives: 1
        case .synArrives: 2
        case .timer: 3
        case .synSent: 4
        case .clientGivesUp: 5
        }
    }
}
