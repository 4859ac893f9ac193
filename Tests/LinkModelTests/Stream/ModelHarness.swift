import LinkProfiles

@testable import LinkModel

/// One direction of a path: `oneWay` delay each way, optional rate and loss.
func pathProfiles(
    oneWay: Duration, reverse: Duration? = nil, bandwidth: BitRate? = nil, loss: Double = 0,
    queue: ByteCount = DirectionProfile.defaultQueue
) -> (forward: DirectionProfile, reverse: DirectionProfile) {
    let forward = DirectionProfile(bandwidth: bandwidth, delay: oneWay, loss: Percentage(loss * 100), queue: queue)
    return (forward, DirectionProfile(delay: reverse ?? oneWay))
}

/// A model-only link carrying the acceptor's (server's) data, with `settings` and `seed`.
func modelLink(
    oneWay: Duration, reverse: Duration? = nil, bandwidth: BitRate? = nil, loss: Double = 0,
    queue: ByteCount = DirectionProfile.defaultQueue, settings: TCPSettings = TCPSettings(), seed: UInt64 = 1
) -> StreamLink {
    let (forward, back) = pathProfiles(oneWay: oneWay, reverse: reverse, bandwidth: bandwidth, loss: loss, queue: queue)
    return StreamLink(side: .acceptor, profile: forward, reverse: back, settings: settings, seed: seed)
}

/// What a transfer through the model released to the receiving application, and when.
struct ModelTransfer {
    var releases: [(at: Instant, bytes: Int)] = []
    var lastByteAt: Instant?

    /// Bytes released at exactly `instant`.
    func released(at instant: Instant) -> Int {
        releases.filter { $0.at == instant }.reduce(0) { $0 + $1.bytes }
    }
}

/// Writes `size` bytes into `flow` from `start` as fast as its send buffer takes them (in whole segments, as a
/// Linux sender with autocorking would send them) and runs the model event by
/// event (virtual time, no clock) until the receiver released them all, or `limit` has passed.
func transfer(
    _ size: Int, over link: StreamLink, flow: StreamFlow, from start: Instant,
    limit: Duration = .seconds(600)
) -> ModelTransfer {
    var result = ModelTransfer()
    var written = 0
    var delivered = 0
    var now = start
    for _ in 0..<5_000_000 {
        for changed in link.advance(to: now) where changed === flow {
            let count = changed.takeDeliverable(at: now)
            if count > 0 {
                delivered += count
                result.releases.append((now, count))
            }
        }
        while written < size && link.canAccept(flow) {
            let chunk = min(45 * TCPSender.mss, size - written)
            link.enqueue(chunk, on: flow, at: now)
            written += chunk
        }
        if delivered >= size || (written == size && link.nextServiceTime == nil) {
            result.lastByteAt = now
            break
        }
        guard let next = link.nextServiceTime, next - start <= limit else { break }
        now = max(now, next)
    }
    return result
}

/// The bytes of `count` full segments.
func segments(_ count: Int) -> Int { count * TCPSender.mss }

/// A loss decision that drops the first `times` transmissions of the segment starting at byte `seq`.
func dropping(segmentAt seq: Int, times: Int) -> (LinkPacket) -> Bool {
    var drops = 0
    return { packet in
        guard packet.tag == UInt64(seq), drops < times else { return false }
        drops += 1
        return true
    }
}
