import DequeModule

/// The bytes a stream pump holds, in the order they were read: the chunks as read, the first possibly partly
/// written. It hands out the next bytes to write as slices of up to `gatherLimit` chunks, so that one gathering
/// write (sendmsg with a vector) takes a release that spans chunk boundaries instead of one write per chunk.
///
/// Lives on the event loop thread, one per `StreamPump`.
struct HeldChunks {
    /// The most chunks one write gathers: a batch of 100 µs at 1 Gbit/s (12.5 KB) crosses at most one boundary of
    /// the loop's 256 KiB reads, and small reads (a slow sender's) make small chunks.
    static let gatherLimit = 8

    private var chunks = Deque<[UInt8]>()
    /// Bytes of the first chunk already written.
    private var headOffset = 0

    /// Holds `bytes` after those held.
    mutating func append(_ bytes: [UInt8]) {
        chunks.append(bytes)
    }

    /// Calls `body` with the slices that hold the next `count` bytes in order: fewer bytes when fewer are held or
    /// they lie in more than `gatherLimit` chunks; none when `count` is 0. The slices are valid only within `body`.
    func withSlices<Result>(upTo count: Int, _ body: (UnsafeBufferPointer<UnsafeRawBufferPointer>) -> Result) -> Result {
        withUnsafeTemporaryAllocation(of: UnsafeRawBufferPointer.self, capacity: Self.gatherLimit) { slices in
            gather(chunk: 0, offset: headOffset, remaining: count, into: slices, filled: 0, body)
        }
    }

    /// Adds chunk `index` from `offset` to `slices` (which hold `filled` already) and gathers the rest inside its
    /// access, so every slice stays valid while `body` runs.
    private func gather<Result>(chunk index: Int, offset: Int, remaining: Int,
                                into slices: UnsafeMutableBufferPointer<UnsafeRawBufferPointer>, filled: Int,
                                _ body: (UnsafeBufferPointer<UnsafeRawBufferPointer>) -> Result) -> Result {
        guard remaining > 0, filled < slices.count, index < chunks.count else {
            return body(UnsafeBufferPointer(rebasing: slices[0..<filled]))
        }
        return chunks[index].withUnsafeBytes { raw in
            let length = min(raw.count - offset, remaining)
            slices[filled] = UnsafeRawBufferPointer(rebasing: raw[offset..<(offset + length)])
            return gather(chunk: index + 1, offset: 0, remaining: remaining - length, into: slices, filled: filled + 1, body)
        }
    }

    /// Drops the first `count` bytes (written), and the chunks they empty.
    mutating func removeFirst(_ count: Int) {
        var left = count
        while left > 0, let first = chunks.first {
            let rest = first.count - headOffset
            if left < rest {
                headOffset += left
                return
            }
            left -= rest
            chunks.removeFirst()
            headOffset = 0
        }
    }

    /// Drops every held byte.
    mutating func removeAll() {
        chunks.removeAll()
        headOffset = 0
    }
}
