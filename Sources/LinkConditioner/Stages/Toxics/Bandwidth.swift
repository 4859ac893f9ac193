/// Toxiproxy's `bandwidth`: at most `rate` KB/s (1 KB = 1000 bytes of payload) per connection and direction.
///
/// Each read is cut into pieces of at most 100 ms of the rate; a piece moves on when the previous one has been
/// paced out: due = max(ready, free), free = due + size / rate. A rate of 0 passes data through, as in Toxiproxy.
final class BandwidthToxic: ToxicEffect {
    let bytesPerSecond: Int64
    /// When the pacing has sent everything before and the next piece may go.
    private var free = Instant.zero

    init(kilobytesPerSecond: Int64) {
        bytesPerSecond =
            kilobytesPerSecond.multipliedReportingOverflow(by: 1000).overflow ? .max : kilobytesPerSecond * 1000
    }

    func shape(_ pieces: inout [StagePiece], at now: Instant, stage: ToxicStage) {
        guard bytesPerSecond > 0 else { return }
        let pieceSize = Int(max(512, min(bytesPerSecond / 10, 1 << 20)))
        var paced: [StagePiece] = []
        for piece in pieces {
            var left = piece.count
            while left > 0 {
                let size = min(left, pieceSize)
                let due = max(piece.due, free)
                paced.append(StagePiece(count: size, due: due))
                free = due + Self.transmission(bytes: size, bytesPerSecond: bytesPerSecond)
                left -= size
            }
        }
        pieces = paced
    }

    /// How long `bytes` take at `bytesPerSecond`, in whole nanoseconds (no overflow for a piece of at most 1 MiB).
    static func transmission(bytes: Int, bytesPerSecond: Int64) -> Duration {
        .nanoseconds(Int64(bytes) * 1_000_000_000 / bytesPerSecond)
    }
}

extension ToxicKind {
    static let bandwidth = ToxicKind("bandwidth", attributes: [("rate", 1_000_000_000)]) { toxic, _ in
        BandwidthToxic(kilobytesPerSecond: toxic.attribute("rate"))
    }
}
