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
    func makeEffect(random: SeededRandom) -> ToxicEffect { kind.makeEffect(self, random) }
}

/// A toxic type the API takes: its Toxiproxy name, its attributes with the largest value each accepts (the smallest
/// is 0), what makes attributes inconsistent, and how a connection's effect is made.
///
/// Each toxic's file registers its type next to its effect (`ToxicKind.latency` in Latency.swift), and `all` lists
/// them, one line each: a new toxic is its file, that line and its test.
struct ToxicKind: Sendable, Equatable {
    /// Toxiproxy's name of the type, as a request's `"type"` gives it.
    let name: String
    /// Each attribute with the largest value it may take, in the order listings show them.
    let attributeLimits: [(key: String, maximum: Int64)]
    /// Why attributes cannot be used together, or nil when they can.
    private let check: @Sendable ([String: Int64]) -> String?
    /// A fresh effect for one direction of one connection, from the toxic's attributes.
    let makeEffect: @Sendable (ToxicDefinition, SeededRandom) -> ToxicEffect

    init(
        _ name: String, attributes: [(key: String, maximum: Int64)],
        inconsistency: @escaping @Sendable ([String: Int64]) -> String? = { _ in nil },
        makeEffect: @escaping @Sendable (ToxicDefinition, SeededRandom) -> ToxicEffect
    ) {
        self.name = name
        attributeLimits = attributes
        check = inconsistency
        self.makeEffect = makeEffect
    }

    /// Every toxic type linkcond implements, Toxiproxy's seven.
    static let all: [ToxicKind] = [.latency, .bandwidth, .slowClose, .timeout, .resetPeer, .slicer, .limitData]

    /// The type Toxiproxy calls `name`, or nil.
    static func named(_ name: String) -> ToxicKind? { all.first { $0.name == name } }

    /// A week in milliseconds: the longest delay or timeout accepted.
    static let longestMilliseconds: Int64 = 7 * 24 * 3600 * 1000

    /// Why `attributes` cannot be used together, or nil when they can.
    func inconsistency(_ attributes: [String: Int64]) -> String? { check(attributes) }

    static func == (left: ToxicKind, right: ToxicKind) -> Bool { left.name == right.name }
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
