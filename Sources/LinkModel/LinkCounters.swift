/// Traffic figures of one link direction, summed over its flows.
public struct LinkCounters: Hashable, Sendable {
    /// Payload bytes senders handed the link.
    public var bytesEnqueued = 0
    /// Payload bytes receivers took from the link.
    public var bytesDelivered = 0
    /// Of the bytes delivered, those that passed the link model by while it shaped nothing: moved by `splice(2)`,
    /// or the start of a burst copied straight through.
    public var bytesSpliced = 0
    /// Bytes waiting for the serialiser now: the link's queue.
    public var queuedBytes = 0
    /// Bytes serialised and waiting for their delivery time now.
    public var inFlightBytes = 0
    /// TCP segments the senders sent (retransmissions included, and those lost on their way into the bottleneck),
    /// and datagrams that left the bottleneck (not those lost on their way in).
    public var transmissions = 0
    /// TCP segment transmissions lost (dropped by the queue or by random or burst loss); the sender repairs each.
    public var segmentsLost = 0
    /// ACKs of this direction's TCP flows lost on the reverse direction (its `loss`).
    public var acksLost = 0
    /// Handshake segments resent because the link lost one: SYNs on the uplink, SYN-ACKs on the downlink. Each
    /// connection's are counted when it starts, as its handshake is drawn.
    public var handshakeRetransmissions = 0
    /// Flows attached to the link now.
    public var flows = 0
    /// Datagrams senders handed the link, tail drops included.
    public var datagramsEnqueued = 0
    /// Datagram copies handed to receivers (a duplicated datagram counts twice).
    public var datagramsDelivered = 0
    /// Datagrams refused because the link held `queue` bytes, queued or in flight, or because the queue
    /// discipline had no room (under fq_codel, dropped from the fattest flow).
    public var tailDrops = 0
    /// Datagrams dropped by random loss (`loss`).
    public var randomLosses = 0
    /// Datagrams dropped by the Gilbert-Elliott model.
    public var burstLosses = 0
    /// Extra copies of duplicated datagrams.
    public var duplicates = 0
    /// Datagrams delivered with one payload bit flipped (each copy of a duplicated one carries the flip).
    public var datagramsCorrupted = 0
    /// Datagrams CoDel dropped as they left the queue, for standing in it longer than its target.
    public var codelDrops = 0

    public init() {}
}

/// The counters a direction shares with its flows, so a flow can report deliveries without a reference back.
///
/// Lives on the event loop thread, like the direction that owns it.
final class LinkTally {
    var counters = LinkCounters()
    /// How long after their due instants datagram outcomes were taken for delivery (datagram links only).
    var lateness = LatenessHistogram()
}
