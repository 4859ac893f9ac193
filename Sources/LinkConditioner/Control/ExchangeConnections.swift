import Logging

/// The connections of one HTTP exchange server (the control endpoint or the Toxiproxy API), `limit` at once.
///
/// A client beyond the limit displaces the connection that has waited longest without sending a complete request,
/// so slow or silent clients (slowloris) cannot lock out one that sends its request at once. Only when every other
/// connection is past its request (answering or writing) do new clients wait in the kernel's backlog. Lives on the
/// event loop thread.
final class ExchangeConnections {
    let limit: Int
    private let acceptor: TCPAcceptor
    private let logger: Logger
    private let name: String
    private var connections: [Int32: ControlConnection] = [:]
    private var nextSequence = 0
    /// Whether a displaced client has been logged; once per server, so a slowloris flood logs one line.
    private var loggedDisplacement = false

    init(limit: Int, acceptor: TCPAcceptor, logger: Logger, name: String) {
        self.limit = limit
        self.acceptor = acceptor
        self.logger = logger
        self.name = name
    }

    /// Takes and starts `connection`; beyond the limit, displaces the longest-waiting unfinished request.
    func admit(_ connection: ControlConnection) {
        connection.sequence = nextSequence
        nextSequence += 1
        connections[connection.socket.descriptor] = connection
        connection.start()
        guard connections.count > limit else { return }
        let waiting = connections.values.filter { $0.isWaitingForRequest && $0 !== connection }
        if let oldest = waiting.min(by: { $0.sequence < $1.sequence }) {
            if !loggedDisplacement {
                loggedDisplacement = true
                logger.warning("\(name): \(limit) connections open; closing the one waiting longest for its request to make room (logged once)")
            }
            oldest.close()
        } else {
            logger.warning("\(name): \(limit) connections answering; new ones wait until one closes")
            acceptor.hold(true)
        }
    }

    /// Forgets `connection`, and accepts again once within the limit.
    func closed(_ connection: ControlConnection) {
        connections.removeValue(forKey: connection.socket.descriptor)
        if connections.count <= limit { acceptor.hold(false) }
    }

    func closeAll() {
        for connection in Array(connections.values) { connection.close() }
    }
}
