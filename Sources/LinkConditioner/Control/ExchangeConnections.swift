import Logging

/// The connections of one HTTP exchange server (the control endpoint or the Toxiproxy API), `limit` at once.
///
/// A client beyond the limit displaces the connection that has waited longest without sending a complete request,
/// so slow or silent clients (slowloris) cannot lock out one that sends its request at once. Only when every other
/// connection is past its request (answering or writing) do new clients wait in the kernel's backlog.
///
/// The answers its connections hold unsent are bounded too, by `answerBytesLimit` together: a new answer that does
/// not fit closes the connections whose answers have waited longest, so clients that ask and never read cannot
/// make linkcond hold 64 copies of a listing of megabytes. A client reading its answer empties it within moments.
/// Lives on the event loop thread.
final class ExchangeConnections {
    /// The most answer bytes its connections hold at once: about one listing of every Toxiproxy proxy at the API's
    /// limits, which is sent even alone over it.
    static let answerBytesLimit = 16 << 20

    let limit: Int
    private let acceptor: TCPAcceptor
    private let logger: Logger
    private let name: String
    /// The descriptors the acceptor may serve a client on when the process has none left; refilled as
    /// connections close.
    private let reserve: DescriptorReserve?
    private var connections: [Int32: ControlConnection] = [:]
    private var nextSequence = 0
    /// The order in which answers began, for closing the longest-waiting one first.
    private var nextAnswer = 0
    /// Whether a displaced client has been logged; once per server, so a slowloris flood logs one line.
    private var loggedDisplacement = false
    /// Whether an unread answer closed to make room has been logged; once per server.
    private var loggedUnreadAnswer = false
    /// Why connections ended so far, for the cases a client cannot tell apart by what it reads.
    private(set) var endings = ExchangeEndings()

    init(limit: Int, acceptor: TCPAcceptor, logger: Logger, name: String, reserve: DescriptorReserve? = nil) {
        self.limit = limit
        self.reserve = reserve
        self.acceptor = acceptor
        self.logger = logger
        self.name = name
    }

    /// Takes and starts `connection`; beyond the limit, displaces the longest-waiting unfinished request.
    func admit(_ connection: ControlConnection) {
        connection.sequence = nextSequence
        nextSequence += 1
        connection.peers = self
        connections[connection.socket.descriptor] = connection
        connection.start()
        guard connections.count > limit else { return }
        let waiting = connections.values.filter { $0.isWaitingForRequest && $0 !== connection }
        if let oldest = waiting.min(by: { $0.sequence < $1.sequence }) {
            if !loggedDisplacement {
                loggedDisplacement = true
                logger.warning(
                    "\(name): \(limit) connections open; closing the one waiting longest for its request to make room (logged once)"
                )
            }
            endings.displaced += 1
            oldest.close()
        } else {
            logger.warning("\(name): \(limit) connections answering; new ones wait until one closes")
            acceptor.hold(true)
        }
    }

    /// Takes note that `connection` holds an answer it could not send at once, and makes room for it: closes the
    /// connections holding answers longest until every answer held fits in `answerBytesLimit`, or none is left
    /// but this one.
    func holdsAnswer(_ connection: ControlConnection) {
        connection.answerOrder = nextAnswer
        nextAnswer += 1
        var held = connections.values.reduce(0) { $0 + $1.heldAnswerBytes }
        while held > Self.answerBytesLimit {
            let others = connections.values.filter { $0 !== connection && $0.heldAnswerBytes > 0 }
            guard let oldest = others.min(by: { $0.answerOrder < $1.answerOrder }) else { return }
            if !loggedUnreadAnswer {
                loggedUnreadAnswer = true
                logger.warning(
                    "\(name): answers unread by their clients hold \(Self.answerBytesLimit >> 20) MiB; closing the one waiting longest to make room (logged once)"
                )
            }
            held -= oldest.heldAnswerBytes
            endings.unreadAnswers += 1
            oldest.close()
        }
    }

    /// Forgets `connection` (its socket already closed), and accepts again once within the limit.
    func closed(_ connection: ControlConnection) {
        if connection.timedOut { endings.timedOut += 1 }
        connections.removeValue(forKey: connection.socket.descriptor)
        if connections.count <= limit { acceptor.hold(false) }
        // The connection's socket is closed already: a descriptor it was served on goes back to the reserve.
        if reserve?.isShort == true { reserve?.refill() }
    }

    func closeAll() {
        for connection in Array(connections.values) { connection.close() }
    }
}

/// How many of an exchange server's connections ended for a reason a client sees only as a close.
struct ExchangeEndings: Sendable, Equatable {
    /// Closed because their exchange timeout passed (no complete request, or an answer left unread).
    var timedOut = 0
    /// Closed to make room for a newer client while waiting for their request.
    var displaced = 0
    /// Closed with their answer partly unread, to make room for a newer answer (`answerBytesLimit`).
    var unreadAnswers = 0
}
