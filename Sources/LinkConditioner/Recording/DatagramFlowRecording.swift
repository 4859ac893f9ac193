/// One UDP flow as `run --record` reports it: opened like a connection (marked `udp`), each datagram read and
/// delivered each way (the log coalesces them as it does a stream's reads), each datagram dropped and why, and its end.
///
/// Lives on the event loop thread of its listener.
final class DatagramFlowRecording {
    let recorder: TrafficRecorder
    let flow: UInt64
    private let loop: EventLoop

    /// Records the flow's opening at `now`: the relay's address, the client's and the upstream's.
    init(
        recorder: TrafficRecorder, loop: EventLoop, listener: String, client: String, destination: String,
        at now: Instant
    ) {
        self.recorder = recorder
        self.loop = loop
        flow = recorder.flowOpened(listener: listener, client: client, destination: destination, at: now)
    }

    private static func direction(_ up: Bool) -> RecordedDirection { up ? .up : .down }

    /// A datagram of `count` bytes arrived from the client (`up`) or the upstream.
    func read(_ count: Int, up: Bool, at now: Instant) {
        recorder.bytesRead(flow, Self.direction(up), count: count, at: now)
    }

    /// A datagram of `count` bytes was sent on to the other side.
    func delivered(_ count: Int, up: Bool) {
        recorder.bytesDelivered(flow, Self.direction(up), count: count, at: loop.clock.now())
    }

    /// A datagram was dropped: at the link's full queue, by the link (loss or its queue discipline), or by a fault.
    func dropped(up: Bool, cause: StallCause) {
        recorder.datagramsDropped(flow, Self.direction(up), count: 1, cause: cause, at: loop.clock.now())
    }

    /// The flow was forgotten (idle, reset or shutdown).
    func closed() {
        recorder.connectionClosed(flow, by: .linkcond, reset: false, at: loop.clock.now())
    }
}
