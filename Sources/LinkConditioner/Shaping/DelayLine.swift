import DequeModule

/// A run of a flow's bytes that share one timestamp: when they arrived, or when they may be delivered.
struct ByteBatch {
    var bytes: Int
    var at: Instant
}

/// A flow's serialised bytes waiting for their delivery time, in stream order.
///
/// Delivery times never decrease along the line: a batch stamped earlier than the one before it is held back to
/// that one's time, because a TCP stream must not be reordered.
struct DelayLine {
    private var batches = Deque<ByteBatch>()
    private(set) var bytes = 0
    /// The delivery time of the newest batch, which later batches may not precede.
    private(set) var lastDeliverAt = Instant(nanoseconds: .min)

    /// Appends `count` bytes due at `deliverAt`, or at the previous batch's time if that is later.
    mutating func append(_ count: Int, deliverAt: Instant) {
        let due = max(deliverAt, lastDeliverAt)
        lastDeliverAt = due
        bytes += count
        if let last = batches.last, last.at == due {
            batches[batches.index(before: batches.endIndex)].bytes += count
        } else {
            batches.append(ByteBatch(bytes: count, at: due))
        }
    }

    /// Removes and returns how many bytes are due by `now`.
    mutating func takeDue(at now: Instant) -> Int {
        var taken = 0
        while let first = batches.first, first.at <= now, first.at != .never {
            taken += first.bytes
            batches.removeFirst()
        }
        bytes -= taken
        return taken
    }

    /// When the oldest batch is due, or nil if the line is empty or its head will never be delivered.
    var nextDeliverAt: Instant? {
        guard let first = batches.first, first.at != .never else { return nil }
        return first.at
    }

    /// Gives batches that were never to be delivered the delivery time `deliverAt`, in order.
    mutating func revive(at deliverAt: Instant) {
        var previous = Instant(nanoseconds: .min)
        for index in batches.indices {
            if batches[index].at == .never { batches[index].at = max(deliverAt, previous) }
            previous = batches[index].at
        }
        lastDeliverAt = batches.last?.at ?? lastDeliverAt
    }

    mutating func removeAll() {
        batches.removeAll()
        bytes = 0
    }
}
