/// A connection through an emulated path in virtual time, as the proxy runs it: the handshake is drawn, the
/// upstream connect starts when the first SYN reached the server (one uplink delay after the client's without
/// loss), both directions attach then, the request's first bytes open the server's side as they do through the
/// relay (they carry a lost final ACK's acknowledgement), and the server answers each request as soon as its last
/// byte arrived.
///
/// Pure and single-threaded: tests and the accuracy grid (`linkcond-bench --model-grid`) drive it to measure what
/// the model decides without sockets or a clock.
public final class VirtualConnection {
    public let uplink: StreamLink
    public let downlink: StreamLink
    public let clientFlow: StreamFlow
    public let serverFlow: StreamFlow
    public let handshake: HandshakeAttempts
    public private(set) var now: Instant

    /// The largest write either application makes: the model takes the bytes in chunks this large, as a sender
    /// with autocorking fills whole segments.
    static let writeChunk = 45 * TCPSender.mss

    /// Connects at `start` (the client's connect()) over `uplink` and `downlink`; `handshake` replaces the links'
    /// draw.
    public init(
        uplink uplinkShape: DirectionShape, downlink downlinkShape: DirectionShape, settings: TCPSettings,
        seed: UInt64 = 1, start: Instant = .zero, handshake: HandshakeAttempts? = nil
    ) {
        uplink = StreamLink(
            side: .connector, profile: uplinkShape, reverse: downlinkShape, settings: settings, seed: seed)
        downlink = StreamLink(
            side: .acceptor, profile: downlinkShape, reverse: uplinkShape, settings: settings, seed: seed &+ 1)
        let handshake = handshake ?? uplink.drawHandshake(answeredOver: downlink)
        self.handshake = handshake
        let attach = start + (handshake.serverReached ?? HandshakeAttempts.clientGivesUpAfter)
        clientFlow = uplink.makeFlow(at: attach, handshake: handshake)
        serverFlow = downlink.makeFlow(at: attach, handshake: handshake)
        now = attach
    }

    /// Sends a `request`-byte request at `at` (no earlier than the upstream attach) and a `response`-byte answer
    /// once it arrived; returns when the response's last byte reached the client, or nil if the handshake failed.
    public func fetch(request: Int = 100, response: Int, at: Instant) -> Instant? {
        let exchange = exchange(request: request, response: response, at: at, until: nil)
        return exchange.arrived >= response ? exchange.at : nil
    }

    /// Sends a `request`-byte request at `at` that the server answers with an endless stream; returns the bytes
    /// that reached the client by `until`.
    public func stream(request: Int, at: Instant, until: Instant) -> Int {
        exchange(request: request, response: .max, at: at, until: until).arrived
    }

    /// Runs one request and its answer event by event until the answer's `response` bytes arrived, `until` passed,
    /// or nothing is left to do.
    private func exchange(request: Int, response: Int, at: Instant, until: Instant?) -> (arrived: Int, at: Instant) {
        guard !handshake.isAbandoned else { return (0, now) }
        now = max(now, at)
        var requestWritten = 0
        var requestArrived = 0
        var responseWritten = 0
        var responseArrived = 0
        var answering = false
        for _ in 0..<20_000_000 {
            for flow in uplink.advance(to: now) { requestArrived += flow.takeDeliverable(at: now) }
            if requestArrived > 0 { downlink.open(serverFlow, at: now) }
            for flow in downlink.advance(to: now) { responseArrived += flow.takeDeliverable(at: now) }
            if responseArrived >= response { break }
            if requestArrived >= request { answering = true }
            while requestWritten < request && uplink.canAccept(clientFlow) {
                let chunk = min(Self.writeChunk, request - requestWritten)
                uplink.enqueue(chunk, on: clientFlow, at: now)
                requestWritten += chunk
            }
            while answering && responseWritten < response && downlink.canAccept(serverFlow) {
                let chunk = min(Self.writeChunk, response - responseWritten)
                downlink.enqueue(chunk, on: serverFlow, at: now)
                responseWritten += chunk
            }
            guard let next = nextEvent else { break }
            if let until, next > until {
                now = until
                break
            }
            now = max(now, next)
        }
        return (responseArrived, now)
    }

    /// The earlier of the two directions' next events.
    private var nextEvent: Instant? {
        [uplink.nextServiceTime, downlink.nextServiceTime].compactMap { $0 }.min()
    }

    /// Lets both directions run to `instant` (an idle pause).
    public func idle(until instant: Instant) {
        while let next = nextEvent, next <= instant {
            _ = uplink.advance(to: next)
            _ = downlink.advance(to: next)
        }
        now = max(now, instant)
    }
}
