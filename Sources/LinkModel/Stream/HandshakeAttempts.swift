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
// when the client's first bytes reach it (`StreamLink.open(_:at:)`), and what the server would have resent after
// that never happened. Once the server dropped its request unanswered, a client segment is answered by a reset.
//
// The timers fire as the kernel's timer wheel fires them (kernel/time/timer.c, HZ = 250): a timer armed in jiffy J
// for T jiffies fires at J + T rounded up to its wheel level's granularity, 8 jiffies (32 ms) for 1 s. The client's
// SYN timer and the server's SYN-ACK timer are armed one uplink delay apart, but both round up to the same 32 ms
// grid, so in most phases of that grid the server's timer fires before the resent SYN arrives: the server then
// sends two SYN-ACKs (its timer's and its answer to the SYN), not one, and after more than one resend its window
// starts at one segment. Measured in the guest: after a lost SYN-ACK at RTT 200 ms, most fetches pay that extra
// slow start. The phase of the grid is drawn per connection (`timerWheelPhase`); without one the timers are exact.
//
// Each side starts from its handshake as tcp_init_transfer leaves it. Its first RTT sample comes from the
// timestamp the other side echoes: the client's from the first SYN that reached the server (a retransmitted SYN
// does not update the request's ts_recent), the server's from the SYN-ACK that established the client (later
// ones it drops before ts_recent). More than one retransmission starts the window at one segment, unless
// tcp_try_undo_spurious_syn undoes it: the echoed timestamp is the first SYN's (or SYN-ACK's) own, so the resends
// were spurious; the server's undo marker is set only when its timer fired.

/// The fate of one connection's handshake: when the server first heard of it, when the client was established,
/// and what that took. Pure: the losses come from the closures given, in the order the segments are sent.
public struct HandshakeAttempts: Hashable, Sendable {
    /// TCP_TIMEOUT_INIT: the wait before the first retransmission of a SYN or SYN-ACK, doubled for each next one.
    public static let initialTimeout = Duration.seconds(1)
    /// tcp_syn_retries: the SYN retransmissions before connect() gives up.
    public static let synRetries = 6
    /// tcp_synack_retries: the SYN-ACK retransmissions of one request by the server's timer.
    public static let synAckRetries = 5

    /// How one side starts sending once its handshake completed.
    public struct SideStart: Hashable, Sendable {
        /// Its SYNs or SYN-ACKs sent after the first.
        public var retransmissions: Int
        /// Its first round-trip sample, from the timestamp the other side echoed.
        public var roundTrip: Duration
        /// Whether its window starts at one segment (tcp_init_transfer after a timeout not undone).
        public var startsAtOneSegment: Bool
    }

    /// One SYN-ACK the server sent: when (after the client's connect()), for which request, and whether its timer
    /// sent it (rather than an answer to a SYN).
    struct SynAckSend: Hashable, Sendable {
        var at: Duration
        var request: Int
        var byTimer: Bool
    }

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
    /// After the client's connect(), when the server dropped its request with the client established and no ACK
    /// arrived: a client segment arriving later is answered by a reset.
    public let serverGaveUp: Duration?
    /// SYNs the client sent after its first, until it was established or gave up.
    public let synRetransmissions: Int
    /// SYN-ACKs the server sent after its first, until an ACK reached it or it gave up (the client's data may
    /// open it sooner: `serverStart(openedAt:)`).
    public let synAckRetransmissions: Int
    /// The client's ACKs of SYN-ACKs lost on the uplink until one reached the server.
    public let handshakeAcksLost: Int
    /// When the SYN whose timestamp every SYN-ACK echoes was sent: the first that reached the server.
    let echoedSynSentAt: Duration?
    /// When the SYN-ACK that established the client was sent, and for which request.
    let establishingSynAck: SynAckSend?
    /// Every SYN-ACK, in order; empty when there was one and it established the client.
    let synAckSends: [SynAckSend]
    /// When each ACK of a SYN-ACK that the uplink lost was sent.
    let lostAckSends: [Duration]
    /// The timer wheel the connection's timers fire on, its grid measured from the client's connect(); nil for
    /// exact timers. Both sides' senders keep it (client and server share one kernel's jiffies in the guest).
    let timerWheel: TimerWheel?

    /// The handshake of a link that loses nothing: one round trip, with no retransmission while the round trip
    /// is at most the first timeout (the SYN-ACK is taken before a SYN resent at the same instant, the ACK before
    /// the server's timer). Only a longer round trip is played out, since the client then resends its SYN before
    /// the answer arrives. `timerWheelPhase` places the connection's timers on the kernel's timer wheel
    /// (`timerWheel`).
    public init(uplinkDelay: Duration, downlinkDelay: Duration, timerWheelPhase: Duration? = nil) {
        guard uplinkDelay >= .zero, downlinkDelay >= .zero, uplinkDelay + downlinkDelay <= Self.initialTimeout else {
            self.init(
                uplinkDelay: uplinkDelay, downlinkDelay: downlinkDelay, synLost: { false }, synAckLost: { false },
                timerWheelPhase: timerWheelPhase)
            return
        }
        var play = HandshakePlay(wheel: timerWheelPhase.map(TimerWheel.init(phase:)))
        play.serverReached = uplinkDelay
        play.established = uplinkDelay + downlinkDelay
        play.serverEstablished = uplinkDelay * 2 + downlinkDelay
        play.synsSent = 1
        play.synAcksSent = 1
        play.echoedSynSentAt = .zero
        play.establishingSynAck = SynAckSend(at: uplinkDelay, request: 0, byTimer: false)
        self.init(uplinkDelay: uplinkDelay, downlinkDelay: downlinkDelay, play: play)
    }

    /// Plays the handshake out; `synLost` is asked once per SYN sent, `synAckLost` once per SYN-ACK sent and
    /// `ackLost` once per ACK of a SYN-ACK the client sends, in time order. With `timerWheelPhase` (where the
    /// client's connect() falls in the timer wheel's coarsest grid) the timers fire as the wheel rounds them; without,
    /// at their exact timeouts.
    public init(
        uplinkDelay: Duration, downlinkDelay: Duration, synLost: () -> Bool, synAckLost: () -> Bool,
        ackLost: () -> Bool = { false }, timerWheelPhase: Duration? = nil
    ) {
        var play = HandshakePlay(wheel: timerWheelPhase.map(TimerWheel.init(phase:)))
        for _ in 0..<Self.maximumEvents {
            guard
                play.step(
                    uplinkDelay: uplinkDelay, downlinkDelay: downlinkDelay, synLost: synLost,
                    synAckLost: synAckLost, ackLost: ackLost)
            else { break }
        }
        self.init(uplinkDelay: uplinkDelay, downlinkDelay: downlinkDelay, play: play)
    }

    private init(uplinkDelay: Duration, downlinkDelay: Duration, play: HandshakePlay) {
        self.uplinkDelay = uplinkDelay
        self.downlinkDelay = downlinkDelay
        timerWheel = play.wheel
        serverReached = play.serverReached
        clientEstablished = play.established
        serverEstablished = play.serverEstablished
        serverGaveUp = play.serverGaveUp
        synRetransmissions = max(play.synsSent - 1, 0)
        synAckRetransmissions = max(play.synAcksSent - 1, 0)
        handshakeAcksLost = play.lostAckSends.count
        echoedSynSentAt = play.echoedSynSentAt
        establishingSynAck = play.establishingSynAck
        synAckSends =
            play.synAckSends.count == 1 && play.synAckSends.first == play.establishingSynAck ? [] : play.synAckSends
        lostAckSends = play.lostAckSends
    }

    /// Whether every attempt was lost and the client's connect() gave up.
    public var isAbandoned: Bool { clientEstablished == nil }

    /// How the client starts: its SYN resends, its first sample (established minus the echoed SYN's send time),
    /// and a window of one segment after more than one resend unless the first SYN was the echoed one.
    public var clientStart: SideStart {
        let echoed = echoedSynSentAt ?? .zero
        let roundTrip = clientEstablished.map { $0 - echoed } ?? uplinkDelay + downlinkDelay
        return SideStart(
            retransmissions: synRetransmissions, roundTrip: roundTrip,
            startsAtOneSegment: synRetransmissions > 1 && echoed > .zero)
    }

    /// How the server starts when its side opened `offset` after the client's connect() (its ACK's arrival, or
    /// the client's first bytes'): the SYN-ACKs it had resent by then, its first sample (the open minus the send
    /// time of the SYN-ACK that established the client), and a window of one segment after more than one resend,
    /// if its timer fired and the client was not established by the request's first SYN-ACK.
    public func serverStart(openedAt offset: Duration) -> SideStart {
        guard let establishing = establishingSynAck else {
            return SideStart(retransmissions: 0, roundTrip: uplinkDelay + downlinkDelay, startsAtOneSegment: false)
        }
        let roundTrip = max(offset - establishing.at, .zero)
        guard !synAckSends.isEmpty else {
            return SideStart(retransmissions: synAckRetransmissions, roundTrip: roundTrip, startsAtOneSegment: false)
        }
        var sent = 0
        var byTimer = false
        var firstOfRequest: Duration?
        for send in synAckSends where send.at < offset {
            sent += 1
            guard send.request == establishing.request else { continue }
            if firstOfRequest == nil { firstOfRequest = send.at }
            byTimer = byTimer || send.byTimer
        }
        let resent = max(sent - 1, 0)
        return SideStart(
            retransmissions: resent, roundTrip: roundTrip,
            startsAtOneSegment: resent > 1 && byTimer && firstOfRequest != establishing.at)
    }

    /// The client's ACKs of SYN-ACKs the uplink lost before `offset` after the client's connect().
    public func handshakeAcksLost(before offset: Duration) -> Int {
        lostAckSends.reduce(0) { $0 + ($1 < offset ? 1 : 0) }
    }

    /// How long after the client's connect() its connect() gives up: the last SYN's doubled timeout.
    public static var clientGivesUpAfter: Duration { initialTimeout * ((1 << (synRetries + 1)) - 1) }

    /// Bound on the events of one handshake: 7 SYNs, their arrivals, the server's timers and answers, and the
    /// client's ACKs of them.
    private static let maximumEvents = 1_000
}

/// The handshake's state while it is played out, one event at a time in time order.
private struct HandshakePlay {
    /// The timer wheel's rounding, or nil for exact timers.
    let wheel: TimerWheel?
    /// When the client's next SYN goes out, while it is neither established nor out of retries.
    var nextSynAt: Duration? = .zero

    init(wheel: TimerWheel? = nil) { self.wheel = wheel }

    /// When a timer armed at `armed` for `timeout` fires.
    func fires(armedAt armed: Duration, after timeout: Duration) -> Duration {
        wheel?.fires(armedAt: armed, after: timeout) ?? armed + timeout
    }

    /// The server's pending request: its number, when its timer fires, and how often it fired.
    struct Request {
        var number: Int
        var timerAt: Duration
        var timeouts: Int
    }

    var synsSent = 0
    var synAcksSent = 0
    var requests = 0
    var synArrivals: [(at: Duration, sentAt: Duration)] = []
    var synAckArrivals: [(at: Duration, send: HandshakeAttempts.SynAckSend)] = []
    var ackArrivals: [Duration] = []
    var request: Request?
    var serverReached: Duration?
    var established: Duration?
    var serverEstablished: Duration?
    var serverGaveUp: Duration?
    var echoedSynSentAt: Duration?
    var establishingSynAck: HandshakeAttempts.SynAckSend?
    var synAckSends: [HandshakeAttempts.SynAckSend] = []
    var lostAckSends: [Duration] = []

    private enum Event { case ackArrives, synAckArrives, synArrives, timer, synSent, clientGivesUp }

    /// When the client sends its next SYN, while it has neither been established nor given up.
    private var synSendTime: Duration? { established == nil ? nextSynAt : nil }

    /// Handles the earliest pending event (ties in the order of `Event`); false once the handshake is decided.
    mutating func step(
        uplinkDelay: Duration, downlinkDelay: Duration, synLost: () -> Bool, synAckLost: () -> Bool,
        ackLost: () -> Bool
    ) -> Bool {
        var candidates: [(Duration, Event)] = []
        if established == nil { candidates.append((HandshakeAttempts.clientGivesUpAfter, .clientGivesUp)) }
        if let at = ackArrivals.first { candidates.append((at, .ackArrives)) }
        if let at = synAckArrivals.first?.at { candidates.append((at, .synAckArrives)) }
        if let at = request?.timerAt { candidates.append((at, .timer)) }
        if let at = synArrivals.first?.at { candidates.append((at, .synArrives)) }
        if let at = synSendTime { candidates.append((at, .synSent)) }
        guard
            let (now, event) = candidates.min(by: { lhs, rhs in
                lhs.0 == rhs.0 ? Self.order(lhs.1) < Self.order(rhs.1) : lhs.0 < rhs.0
            })
        else { return false }
        switch event {
        case .clientGivesUp:
            return false
        case .ackArrives:
            serverEstablished = now
            return false
        case .synAckArrives:
            let arrival = synAckArrivals.removeFirst()
            if established == nil {
                established = now
                establishingSynAck = arrival.send
            }
            if ackLost() { lostAckSends.append(now) } else { ackArrivals.append(now + uplinkDelay) }
        case .synSent:
            synsSent += 1
            nextSynAt =
                synsSent <= HandshakeAttempts.synRetries
                ? fires(armedAt: now, after: HandshakeAttempts.initialTimeout * (1 << (synsSent - 1))) : nil
            if !synLost() { synArrivals.append((now + uplinkDelay, now)) }
        case .synArrives:
            let arrival = synArrivals.removeFirst()
            if serverReached == nil { serverReached = now }
            if var pending = request {
                pending.timerAt = fires(armedAt: now, after: HandshakeAttempts.initialTimeout * (1 << pending.timeouts))
                request = pending
            } else {
                request = Request(
                    number: requests, timerAt: fires(armedAt: now, after: HandshakeAttempts.initialTimeout), timeouts: 0
                )
                requests += 1
                echoedSynSentAt = arrival.sentAt
            }
            sendSynAck(at: now, byTimer: false, downlinkDelay: downlinkDelay, lost: synAckLost)
        case .timer:
            guard var pending = request, pending.timeouts < HandshakeAttempts.synAckRetries else {
                request = nil
                if established != nil { serverGaveUp = now }
                return established == nil
            }
            sendSynAck(at: now, byTimer: true, downlinkDelay: downlinkDelay, lost: synAckLost)
            pending.timeouts += 1
            pending.timerAt = fires(armedAt: now, after: HandshakeAttempts.initialTimeout * (1 << pending.timeouts))
            request = pending
        }
        return true
    }

    private mutating func sendSynAck(at now: Duration, byTimer: Bool, downlinkDelay: Duration, lost: () -> Bool) {
        synAcksSent += 1
        let send = HandshakeAttempts.SynAckSend(at: now, request: request?.number ?? 0, byTimer: byTimer)
        synAckSends.append(send)
        if !lost() { synAckArrivals.append((now + downlinkDelay, send)) }
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
