/// The sending end of a bottleneck: how long a packet takes to leave it (constant rate, unlimited, or a trace of
/// delivery opportunities).
///
/// Time is an argument; a serialiser never reads a clock. Lives on its bottleneck's thread.
public protocol Serializer {
    /// When the last of `bytes` has left, for a packet whose transmission may start at `start`; nil when the link
    /// sends nothing from `start` on (a zero rate). Calls come in order of `start`, each no earlier than the end
    /// the previous call returned.
    mutating func transmissionEnd(bytes: Int, startingAt start: Instant) -> Instant?
}

/// A link without a bandwidth cap: a packet leaves as soon as it may start.
public struct UnlimitedSerializer: Serializer {
    public init() {}

    public mutating func transmissionEnd(bytes: Int, startingAt start: Instant) -> Instant? { start }
}
