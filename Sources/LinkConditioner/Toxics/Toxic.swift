/// Which direction of a Toxiproxy proxy a toxic acts on: `upstream` is client to server, `downstream` server to client.
enum ToxicStream: String, Sendable, CaseIterable {
    case upstream
    case downstream
}

/// A toxic as the Toxiproxy API shows it: `{"name","type","stream","toxicity","attributes"}`.
///
/// Attributes are whole numbers in Toxiproxy's units (milliseconds, KB/s, bytes, microseconds). Every type has a
/// fixed set of attributes; missing ones are 0, as in Toxiproxy.
struct ToxicDefinition: Sendable, Equatable {
    var name: String
    var kind: ToxicKind
    var stream: ToxicStream
    /// The chance, drawn once per connection and direction, that the toxic acts on that connection.
    var toxicity: Double
    var attributes: [String: Int64]

    /// The attribute `key`, 0 when unset.
    func attribute(_ key: String) -> Int64 { attributes[key] ?? 0 }

    /// A fresh per-connection effect for one direction of one connection.
    func makeEffect(random: SeededRandom) -> ToxicEffect {
        switch kind {
        case .latency: LatencyToxic(latency: .milliseconds(attribute("latency")), jitter: .milliseconds(attribute("jitter")), random: random)
        case .bandwidth: BandwidthToxic(kilobytesPerSecond: attribute("rate"))
        case .slowClose: SlowCloseToxic(delay: .milliseconds(attribute("delay")))
        case .timeout: TimeoutToxic(timeout: .milliseconds(attribute("timeout")))
        case .resetPeer: ResetPeerToxic(timeout: .milliseconds(attribute("timeout")))
        case .slicer: SlicerToxic(averageSize: Int(attribute("average_size")), sizeVariation: Int(attribute("size_variation")),
                                  delay: .microseconds(attribute("delay")), random: random)
        case .limitData: LimitDataToxic(bytes: attribute("bytes"))
        }
    }
}

/// The toxic types linkcond implements, with Toxiproxy's names, attributes and the largest value each accepts.
enum ToxicKind: String, Sendable, CaseIterable {
    case latency
    case bandwidth
    case slowClose = "slow_close"
    case timeout
    case resetPeer = "reset_peer"
    case slicer
    case limitData = "limit_data"

    /// A week in milliseconds: the longest delay or timeout accepted.
    static let longestMilliseconds: Int64 = 7 * 24 * 3600 * 1000

    /// Each attribute with the largest value it may take (the smallest is 0).
    var attributeLimits: [(key: String, maximum: Int64)] {
        switch self {
        case .latency: [("latency", Self.longestMilliseconds), ("jitter", Self.longestMilliseconds)]
        case .bandwidth: [("rate", 1_000_000_000)]
        case .slowClose: [("delay", Self.longestMilliseconds)]
        case .timeout, .resetPeer: [("timeout", Self.longestMilliseconds)]
        case .slicer: [("average_size", 1 << 30), ("size_variation", 1 << 30), ("delay", Self.longestMilliseconds * 1000)]
        case .limitData: [("bytes", 1 << 50)]
        }
    }

    /// Why `attributes` cannot be used together, or nil when they can.
    func inconsistency(_ attributes: [String: Int64]) -> String? {
        switch self {
        case .slicer:
            let average = attributes["average_size"] ?? 0
            let variation = attributes["size_variation"] ?? 0
            if average < 1 { return "slicer: average_size must be at least 1 byte" }
            if variation >= average { return "slicer: size_variation (\(variation)) must be less than average_size (\(average))" }
            return nil
        default:
            return nil
        }
    }
}

/// What one toxic does to one direction of one connection, with its own state. Lives on the event loop thread.
///
/// A stage asks each effect in chain order; the defaults do nothing, so each toxic implements only what it changes.
protocol ToxicEffect: AnyObject {
    /// Starts acting at `now` (when the connection starts, or when the toxic is added to a live one).
    func start(at now: Instant, stage: ToxicStage)
    /// Of `count` bytes just read, how many pass and whether the stream ends after them.
    func limit(_ count: Int) -> (kept: Int, ended: Bool)
    /// How the connection ends once the bytes `limit` kept have been delivered.
    var cutEnd: StreamEnd { get }
    /// Reschedules the pieces of one read (bytes with the instant they may move on), in order.
    func shape(_ pieces: inout [StagePiece], at now: Instant, stage: ToxicStage)
    /// Whether nothing may move on while this toxic acts (a timeout, a pending reset).
    var holdsData: Bool { get }
    /// How long the source's end of stream waits (a slow close).
    var endOfStreamDelay: Duration { get }
    /// Whether the toxic cuts what leaves into separate writes (`nextSlice` answers).
    var slices: Bool { get }
    /// The size of the next write out of `available` bytes and the pause after it, when the toxic slices writes.
    func nextSlice(of available: Int) -> (size: Int, pause: Duration)?
    /// Stops timers; the toxic was removed or the connection closed.
    func stop()
}

extension ToxicEffect {
    func start(at now: Instant, stage: ToxicStage) {}
    func limit(_ count: Int) -> (kept: Int, ended: Bool) { (count, false) }
    var cutEnd: StreamEnd { .close }
    func shape(_ pieces: inout [StagePiece], at now: Instant, stage: ToxicStage) {}
    var holdsData: Bool { false }
    var endOfStreamDelay: Duration { .zero }
    var slices: Bool { false }
    func nextSlice(of available: Int) -> (size: Int, pause: Duration)? { nil }
    func stop() {}
}

/// Bytes a stage holds with the instant they may enter the link.
struct StagePiece: Equatable {
    var count: Int
    var due: Instant
}
