/// A rewriter of one direction of a stream, fed bytes in the order they were read. Lives on the event loop thread.
protocol StreamFilter: AnyObject {
    /// Returns the bytes to forward for `bytes` (possibly held back or rewritten), and whether the stream should end
    /// after them, leaving anything later unforwarded.
    func filter(_ bytes: [UInt8]) -> (bytes: [UInt8], ended: Bool)
}

/// How a connection ends when a stage cuts one of its streams.
enum StreamEnd: Sendable {
    /// Both sockets close normally (FIN): Toxiproxy's limit_data and timeout.
    case close
    /// Both sockets are reset (RST).
    case reset
    /// Nothing more crosses either way and nothing tells either side: a cable unplugged.
    case hang
}

/// A per-connection stage between reading a direction and its link: Toxiproxy's toxics and the profile's faults.
/// Lives on the event loop thread.
protocol StreamStage: AnyObject {
    /// How many of `count` bytes just read the connection carries, and how it ends after them (nil: it goes on).
    func limit(_ count: Int, at now: Instant) -> (kept: Int, ended: StreamEnd?)
    /// Takes `count` bytes the pump now holds; the stage calls `pump.forward` when they may enter the link.
    func admit(_ count: Int, from pump: StreamPump, at now: Instant)
    /// How much longer the source's end of stream is held back (a slow close).
    func endOfStreamDelay(at now: Instant) -> Duration
    /// The connection closed: cancel timers.
    func close()
    /// True while the stage would pass every byte on at once and needs to see none: the pump may splice.
    var isIdle: Bool { get }
    /// The pump this stage holds bytes for; called when the stage is attached.
    func attach(to pump: StreamPump)
}
