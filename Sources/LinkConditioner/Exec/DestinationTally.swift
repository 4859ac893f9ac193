/// An exec'd program's traffic by destination, for `status`: TCP connections and UDP flows opened, payload bytes
/// each way, and the name the program looked up for the address.
///
/// Bounded whatever the program does: the first `limit` destinations get a row each, later ones share the row
/// `other`; the first `nameLimit` addresses answered keep their name. Rows are never removed, so a destination
/// keeps the row it was first counted under. Lives on the event loop thread of its listener.
struct DestinationTally {
    static let limit = 64
    static let nameLimit = 4096
    static let other = "other"

    private var rows: [String: StatusReport.Destination] = [:]
    /// Names by address (in `AddressBytes.format`'s spelling), from the DNS answers the program received.
    private var names: [String: String] = [:]

    /// A DNS answer reached the program: its addresses are known by its question's name from now on.
    mutating func learned(_ answer: DNSSummary) {
        for text in answer.answers where names.count < Self.nameLimit {
            guard let bytes = AddressBytes.parse(text) else { continue }
            names[AddressBytes.format(bytes)] = answer.name
        }
    }

    /// The name the program looked up for `address`, if it did.
    func name(of address: SocketAddress) -> String? {
        AddressBytes.parse(address.host).flatMap { names[AddressBytes.format($0)] }
    }

    /// A connection or flow to `destination` opened.
    mutating func opened(_ destination: SocketAddress) {
        let key = row(for: destination.description)
        rows[key, default: StatusReport.Destination(destination: key)].connections += 1
        if key != Self.other, let name = name(of: destination) { rows[key]?.host = name }
    }

    /// How a relay names the connection to `destination` (in logs, the connection list and the recording): by the
    /// name the program looked up and the port when it looked one up, else by the address.
    func upstreamName(for destination: SocketAddress) -> String {
        name(of: destination).map { Endpoint(host: $0, port: destination.port).description } ?? destination.description
    }

    /// A connection or flow to `destination` ended after carrying these bytes.
    mutating func closed(_ destination: String, bytesUp: Int, bytesDown: Int) {
        let key = row(for: destination)
        rows[key, default: StatusReport.Destination(destination: key)].bytesUp += bytesUp
        rows[key, default: StatusReport.Destination(destination: key)].bytesDown += bytesDown
    }

    /// Every row, with the bytes of the `live` connections so far added, busiest first (then by name).
    func report(live: [(destination: String, bytesUp: Int, bytesDown: Int)]) -> [StatusReport.Destination] {
        var current = rows
        for connection in live {
            let key = row(for: connection.destination)
            current[key, default: StatusReport.Destination(destination: key)].bytesUp += connection.bytesUp
            current[key, default: StatusReport.Destination(destination: key)].bytesDown += connection.bytesDown
        }
        return current.values.sorted {
            ($0.bytesUp + $0.bytesDown, $1.destination) > ($1.bytesUp + $1.bytesDown, $0.destination)
        }
    }

    /// The row `destination` is counted under: its own while the table has room, else `other`.
    private func row(for destination: String) -> String {
        rows[destination] != nil || rows.count < Self.limit ? destination : Self.other
    }
}
