import HeapModule

/// What the link decided about one datagram, handed to the receiver's side in delivery order.
public struct DatagramDelivery: Hashable, Sendable {
    /// The datagram's number on its flow, from `DatagramAdmission.accepted`.
    public var index: UInt64
    /// Payload bytes.
    public var size: Int
    /// How many times to deliver it: 1 normally, 2 when duplicated, 0 when the link lost it (free its bytes).
    public var copies: Int
    /// The payload bit to flip before sending, counted from the first byte's most significant bit; nil for none.
    public var flippedBit: Int?

    public init(index: UInt64, size: Int, copies: Int, flippedBit: Int? = nil) {
        self.index = index
        self.size = size
        self.copies = copies
        self.flippedBit = flippedBit
    }
}

/// Whether the link took a datagram.
public enum DatagramAdmission: Hashable, Sendable {
    /// Taken as the flow's datagram number `index`: queued, or lost on its way in; its `DatagramDelivery` will
    /// carry the same number.
    case accepted(index: UInt64)
    /// The link's queue was full: the datagram is dropped at the tail, as a full router buffer drops it.
    case tailDropped

    public var isAccepted: Bool {
        if case .accepted = self { return true }
        return false
    }
}

/// A flow's datagram outcomes, ordered by their time; equal times keep sending order.
///
/// Unlike a TCP stream's arrivals, datagrams may overtake each other (jitter, reordering).
struct DatagramLine {
    private struct Entry: Comparable {
        var at: Instant
        var delivery: DatagramDelivery

        static func < (lhs: Entry, rhs: Entry) -> Bool {
            lhs.at == rhs.at ? lhs.delivery.index < rhs.delivery.index : lhs.at < rhs.at
        }
    }

    private var entries = Heap<Entry>()
    /// Bytes of datagrams that will still be delivered (lost ones excluded).
    private(set) var bytes = 0

    mutating func append(_ delivery: DatagramDelivery, at: Instant) {
        entries.insert(Entry(at: at, delivery: delivery))
        if delivery.copies > 0 { bytes += delivery.size }
    }

    /// Removes and returns every outcome due by `now`, in delivery order; `earliestDelivery` is set to the due
    /// instant of the first of them that is delivered (not lost), if any.
    mutating func takeDue(at now: Instant, earliestDelivery: inout Instant?) -> [DatagramDelivery] {
        var due: [DatagramDelivery] = []
        while let first = entries.min, first.at <= now {
            entries.removeMin()
            if first.delivery.copies > 0 {
                bytes -= first.delivery.size
                if earliestDelivery == nil { earliestDelivery = first.at }
            }
            due.append(first.delivery)
        }
        return due
    }

    var nextAt: Instant? { entries.min?.at }

    var isEmpty: Bool { entries.isEmpty }

    mutating func removeAll() {
        entries = Heap()
        bytes = 0
    }
}
