/// A queue discipline in front of a bottleneck's serialiser: takes packets, hands out the next one, and reports
/// every packet it drops (never silently).
///
/// Time is an argument, as in the kernel's qdiscs and mahimahi's queues; a discipline never reads a clock.
/// Lives on its bottleneck's thread.
public protocol QueueDiscipline {
    /// Takes `packet` at `now`; returns the packets dropped to make room, which may be `packet` itself (tail drop).
    mutating func enqueue(_ packet: LinkPacket, now: Instant) -> [LinkPacket]
    /// The next packet for the serialiser at `now`, and the packets dropped on the way (CoDel drops at dequeue).
    mutating func dequeue(now: Instant) -> (packet: LinkPacket?, dropped: [LinkPacket])
    /// Bytes queued now, as the packets are charged (`LinkPacket.chargedBytes`).
    var byteCount: Int { get }
    /// Packets queued now.
    var packetCount: Int { get }
    /// Removes and returns every packet of `flow`, for an owner whose flow closed.
    mutating func removeAll(ofFlow flow: Int) -> [LinkPacket]
}

/// A queue discipline a profile can name in `queue.discipline`: it declares its name and builds itself from the
/// profile's queue settings, so a new discipline is its own file plus one entry in `QueueManagement.disciplines`.
public protocol NamedQueueDiscipline: QueueDiscipline, Sendable {
    /// The name `queue.discipline` takes, such as `codel`.
    static var name: String { get }
    /// A fresh, empty discipline holding at most `limit`, with its parameters from `management`.
    init(limit: QueueLimit, management: QueueManagement)
}

/// How much a queue may hold: bytes (today's `queue = 256 KiB`) or packets (`queue = 100 packets`).
public enum QueueLimit: Hashable, Sendable, CustomStringConvertible {
    case bytes(Int)
    case packets(Int)

    /// Whether a queue holding `bytes` in `packets` packets would exceed this limit.
    public func isExceeded(bytes: Int, packets: Int) -> Bool {
        switch self {
        case .bytes(let limit): bytes > limit
        case .packets(let limit): packets > limit
        }
    }

    public var description: String {
        switch self {
        case .bytes(let count): "\(count) bytes"
        case .packets(let count): "\(count) packets"
        }
    }
}
