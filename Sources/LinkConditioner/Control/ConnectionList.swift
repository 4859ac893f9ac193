/// One live connection (TCP) or flow (UDP) as `GET /connections` lists it for the dashboard.
public struct ConnectionEntry: Codable, Sendable, Equatable {
    /// The listener's number for the connection, unique within the listener; 0 for a UDP flow.
    public var id: UInt64
    /// The listener's address, as in the status report.
    public var listener: String
    /// The client's address.
    public var client: String
    /// Where the connection goes, as the user or the client named it; empty while a proxy client is still asking.
    public var upstream: String
    /// `connecting`, `relaying`, `blackholed`, `failing`, `handshake` (a proxy client still sending its request) or
    /// `flow` (UDP).
    public var state: String
    /// Bytes delivered to the upstream and to the client so far; absent while connecting
    /// and for the flows of a `udp` listener.
    public var bytesUp: Int?
    public var bytesDown: Int?

    public init(
        id: UInt64, listener: String, client: String, upstream: String, state: String, bytesUp: Int? = nil,
        bytesDown: Int? = nil
    ) {
        self.id = id
        self.listener = listener
        self.client = client
        self.upstream = upstream
        self.state = state
        self.bytesUp = bytesUp
        self.bytesDown = bytesDown
    }
}

/// `GET /connections`: the live connections of every listener, at most `limit` of them, and how many there are.
public struct ConnectionList: Codable, Sendable {
    /// The most entries one answer carries; `total` still counts every connection.
    public static let limit = 500

    public var total: Int
    public var connections: [ConnectionEntry]
}

extension ConditionedListener {
    /// A listener that keeps no list of its connections (the DNS forwarder) shows none.
    func connectionEntries() -> [ConnectionEntry] { [] }
}

extension TCPRelay {
    /// The connection as listed, with what its pumps delivered (a splice loop's bytes counted first); no bytes
    /// before the pumps exist (connecting).
    func entry(listener: SocketAddress) -> ConnectionEntry {
        settleSplicedBytes()
        return ConnectionEntry(
            id: id, listener: listener.description, client: clientAddress.description, upstream: upstreamName,
            state: "\(state)", bytesUp: uplink?.bytesDelivered, bytesDown: downlink?.bytesDelivered)
    }
}

extension TCPListener {
    func connectionEntries() -> [ConnectionEntry] { relays.values.map { $0.entry(listener: localAddress) } }
}
