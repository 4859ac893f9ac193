/// One proxy client from accept until its request is complete: detects SOCKS5 or HTTP from the first byte, answers
/// the protocol's local steps, resolves the destination, then hands the socket to a `TCPRelay`.
///
/// Lives on the event loop thread. Replies that a local proxy would give at once (method selection, credentials,
/// errors in the request itself) are written directly, except that answers to steps a pipelining client has
/// already gone past go with the next reply; the reply that depends on the upstream travels through the relay's
/// downlink. A handshake timer bounds the whole exchange, and a request head is bounded in size.
final class ProxyClientSession {
    private enum Phase {
        /// Reading the request.
        case reading
        /// The request is complete; the destination is being looked up.
        case resolving
        /// A final answer is being written; what the client still sends is read and dropped until it closes.
        case finishing
        /// The socket belongs to a relay, or is closed.
        case done
    }

    private enum Dialect {
        case undetermined
        case socks5(SOCKS5Negotiation)
        case http
        /// A tunnel (SOCKS5 or HTTP CONNECT) opened while the captive portal holds traffic back: plain HTTP in it
        /// gets the portal's answer, anything else (a TLS ClientHello) ends it, as a portal's interception does.
        case portal(host: String, style: CaptivePortalSetting.Style)
    }

    /// What the client asked for, once its request is complete.
    private enum Request {
        case socks5(SOCKS5.Destination)
        case httpTunnel(HTTPOrigin)
        /// An absolute-form request, rewritten for the origin as far as it arrived: `rewrite` goes on with the rest.
        case httpForward(HTTPOrigin, rewrite: HTTPRequestRewriter, rewritten: (bytes: [UInt8], ended: Bool))

        var host: String {
            switch self {
            case .socks5(let destination): destination.host
            case .httpTunnel(let origin), .httpForward(let origin, _, _): origin.host
            }
        }

        var port: UInt16 {
            switch self {
            case .socks5(let destination): destination.port
            case .httpTunnel(let origin), .httpForward(let origin, _, _): origin.port
            }
        }
    }

    let id: UInt64
    unowned let frontEnd: ProxyFrontEnd
    let client: Socket
    let clientAddress: SocketAddress
    private var phase = Phase.reading
    /// Whether the destination's name is being looked up (a test sends bytes meanwhile).
    var isResolving: Bool { phase == .resolving }
    /// Whether closing it loses no request in progress: its request has not fully arrived, or its final answer is
    /// out already. The front end displaces the oldest of these to make room for a new client.
    var isDisplaceable: Bool { phase == .reading || phase == .finishing }
    private var dialect = Dialect.undetermined
    private var received: [UInt8] = []
    /// Bytes of `received` already used by the protocol.
    private var consumed = 0
    /// Bytes of `received` already searched for the end of an HTTP head or a bare line feed, so a client that
    /// trickles its head costs linear time.
    private var headScanned = 0
    private var output: [UInt8] = []
    /// SOCKS5 answers (method selection, credentials) to steps the client has already gone past: a client that
    /// pipelined its request needs them only before the request's reply, so they go out with it in one write.
    private var heldAnswers: [UInt8] = []
    private var writable = true
    private var writeClosed = false
    /// Read events the client reported that no read has used up (a read that filled its room, an end of stream
    /// behind the bytes read, events while the destination is looked up): the relay that takes the client over
    /// starts from them, as no `epoll_ctl` reports them to it again.
    private var unreadEvents: UInt32 = 0
    /// Set around the read made at accept, so the tally counts that read and whether it found the request there.
    private var readingAtAccept = false
    private var registration: EventLoop.RegistrationID?
    private var timer: EventLoop.TimerID?
    private var loop: EventLoop { frontEnd.loop }

    /// The most a client may send before its request is complete: the largest HTTP head plus a little slack.
    private static let receiveLimit = HTTPProxy.headLimit + 4096
    /// Reads of a finishing client's bytes per event, so a client flooding after its answer cannot hold the loop.
    private static let discardReadsPerEvent = 16
    /// How long a refused client is given to read the answer before its socket is closed.
    private static let lingerTime = Duration.seconds(2)

    init(id: UInt64, frontEnd: ProxyFrontEnd, client: Socket, clientAddress: SocketAddress) {
        self.id = id
        self.frontEnd = frontEnd
        self.client = client
        self.clientAddress = clientAddress
    }

    func start() {
        do {
            // Watched as the relay will watch it, writable edges only once a write would block, so the relay takes the
            // registration over without an `epoll_ctl`; an accepted socket is writable, and its edge would cost a turn.
            registration = try loop.register(client.descriptor, interest: TCPRelay.clientInterest, receiver: self)
        } catch {
            frontEnd.logger.warning("connection \(id): cannot watch client \(clientAddress): \(error)")
            close()
            return
        }
        setTimer(after: frontEnd.settings.handshakeTimeout) { [weak self] in self?.handshakeTimedOut() }
        // A client usually sends its request as soon as its connect returns, long before the loop wakes to accept
        // it: read it now rather than after a turn of the loop waiting for its edge.
        readingAtAccept = true
        readAvailable()
        readingAtAccept = false
    }

    private func event(_ events: UInt32) {
        unreadEvents |= events & StreamPump.readEvents
        if events & (Epoll.hangUp | Epoll.error) != 0 && phase != .finishing {
            close()
            return
        }
        if events & Epoll.writable != 0 {
            writable = true
            flush()
        }
        if phase == .reading || phase == .finishing, events & StreamPump.readEvents != 0 {
            readAvailable()
        }
    }

    /// Reads what the client sent (at most `receiveLimit` bytes before the request is complete) and acts on it.
    /// After the final answer, what the client sends is dropped, at most `discardReadsPerEvent` reads per event:
    /// a client that keeps sending gets new events, and the linger timer still gets its turn to close it.
    private func readAvailable() {
        let scratch = frontEnd.readBuffer.bytes
        var discardReads = 0
        while phase == .reading || phase == .finishing {
            let room = phase == .finishing ? scratch.count : min(scratch.count, Self.receiveLimit + 1 - received.count)
            guard room > 0 else { break }
            if phase == .finishing {
                guard discardReads < Self.discardReadsPerEvent else { return }
                discardReads += 1
            }
            let result: IOResult<Int>
            do {
                result = try client.read(into: UnsafeMutableRawBufferPointer(rebasing: scratch[0..<room]))
            } catch {
                close()
                return
            }
            if readingAtAccept {
                readingAtAccept = false
                frontEnd.readBuffer.calls.sessionFirstReads += 1
                if case .wouldBlock = result { frontEnd.readBuffer.calls.sessionFirstReadsEmpty += 1 }
            }
            switch result {
            case .wouldBlock:
                unreadEvents = 0
                return
            case .processed(0):
                if phase == .reading, case .http = dialect, consumed < received.count {
                    return finish(HTTPProxy.response(.badRequest("the client closed before its request was complete")))
                }
                if phase == .finishing && !output.isEmpty { return }
                close()
                return
            case .processed(let count):
                // A short read emptied the socket; an end of stream or urgent data reported may still wait behind it.
                if count < room { unreadEvents &= ~Epoll.readable }
                if phase == .reading {
                    received += UnsafeRawBufferPointer(rebasing: scratch[0..<count])
                    process()
                }
            }
        }
    }

    /// Moves the protocol forward with the bytes received so far.
    private func process() {
        guard phase == .reading, consumed < received.count else { return }
        if case .undetermined = dialect {
            switch received[consumed] {
            case SOCKS5.version: dialect = .socks5(SOCKS5Negotiation(credentials: frontEnd.settings.credentials))
            case 0x04: return finish([0x00, 0x5B, 0, 0, 0, 0, 0, 0])
            default: dialect = .http
            }
        }
        switch dialect {
        case .undetermined:
            return
        case .socks5(var negotiation):
            while phase == .reading {
                let step = negotiation.advance(received[consumed...])
                dialect = .socks5(negotiation)
                switch step {
                case .needMore:
                    if received.count - consumed > 1024 { return finish(SOCKS5.reply(.generalFailure)) }
                    return send([])
                case .answer(let bytes, let used):
                    consumed += used
                    heldAnswers += bytes
                case .refuse(let bytes):
                    return finish(bytes)
                case .connect(let destination, let used):
                    consumed += used
                    if let portal = frontEnd.activePortal {
                        send(SOCKS5.reply(.succeeded))
                        dialect = .portal(host: destination.host, style: portal)
                        return process()
                    }
                    return resolve(.socks5(destination))
                }
            }
        case .http:
            guard mayHoldCompleteHead() else { return }
            switch HTTPProxy.parseHead(received[consumed...]) {
            case .needMore:
                return
            case .tooLarge:
                return finish(HTTPProxy.response(.headersTooLarge))
            case .malformed(let why):
                return finish(HTTPProxy.response(.badRequest(why)))
            case .head(let head, let length):
                switch HTTPProxy.intent(of: head, credentials: frontEnd.settings.credentials) {
                case .reject(let status):
                    return finish(HTTPProxy.response(status))
                case .tunnel(let origin):
                    consumed += length
                    if let portal = frontEnd.activePortal {
                        send(HTTPProxy.connectionEstablished)
                        dialect = .portal(host: origin.host, style: portal)
                        return process()
                    }
                    return resolve(.httpTunnel(origin))
                case .forward(let origin):
                    if let portal = frontEnd.activePortal {
                        return answerAsPortal(head, host: origin.host, style: portal)
                    }
                    // The body that came with the head is checked now: a malformed framing is refused before any
                    // byte of the request reaches the origin.
                    let rewriter = HTTPRequestRewriter(origin: origin)
                    let rewritten = rewriter.filter(Array(received[consumed...]))
                    if let why = rewriter.firstRequestMalformation {
                        return finish(HTTPProxy.response(.badRequest(why)))
                    }
                    return resolve(.httpForward(origin, rewrite: rewriter, rewritten: rewritten))
                }
            }
        case .portal(let host, let style):
            guard CaptivePortal.mayBeginHTTPRequest(received[consumed]) else { return finish([]) }
            guard mayHoldCompleteHead() else { return }
            switch HTTPProxy.parseHead(received[consumed...]) {
            case .needMore: return
            case .tooLarge, .malformed: return finish([])
            case .head(let head, _): return answerAsPortal(head, host: host, style: style)
            }
        }
    }

    /// Answers a plain-HTTP request with the captive portal's page, letting traffic through if it logs in.
    private func answerAsPortal(_ head: HTTPRequestHead, host: String, style: CaptivePortalSetting.Style) {
        let answer = CaptivePortal.answer(to: head, host: host, style: style)
        if answer.releases { frontEnd.releasePortal() }
        finish(answer.bytes)
    }

    /// Whether the bytes since the last look could end the head (a blank line), break it (a bare line feed) or
    /// exceed the limit; only then is the head parsed.
    private func mayHoldCompleteHead() -> Bool {
        let from = max(consumed, headScanned - 3)
        defer { headScanned = received.count }
        if received.count - consumed > HTTPProxy.headLimit { return true }
        if HTTPProxy.firstHeadEnd(in: received[consumed...], from: from) != nil { return true }
        return received[from...].indices.contains { received[$0] == 10 && ($0 == consumed || received[$0 - 1] != 13) }
    }

    /// Looks the destination up off the loop (numeric hosts need none), then relays after the profile's DNS delay.
    private func resolve(_ request: Request) {
        phase = .resolving
        let excludedByName = frontEnd.isExcluded(name: request.host)
        if let numeric = SocketAddress(numericHost: request.host, port: request.port) {
            return connect(
                request, to: [numeric], excluded: excludedByName || frontEnd.isExcluded(addresses: [numeric]))
        }
        let session = LoopBound(WeakSession(self))
        let pending = LoopBound(request)
        let started = frontEnd.resolver.lookup(Endpoint(host: request.host, port: request.port)) { answer in
            session.value.session?.resolved(pending.value, answer, excludedByName: excludedByName)
        }
        guard started else {
            frontEnd.logger.warning("connection \(id): too many name lookups waiting; refusing \(request.host)")
            return fail(
                request, socks: .generalFailure,
                http: HTTPStatus(
                    code: 503, reason: "Service Unavailable",
                    explanation: "too many name lookups are waiting; try again"))
        }
        setTimer(after: frontEnd.settings.lookupTimeout) { [weak self] in
            guard let self, self.phase == .resolving else { return }
            self.fail(
                request, socks: .ttlExpired,
                http: HTTPStatus(
                    code: 504, reason: "Gateway Timeout", explanation: "looking up \(request.host) timed out"))
        }
    }

    /// Applies a lookup's answer once the profile's DNS delay has passed (excluded names pay none).
    private func resolved(_ request: Request, _ answer: HostResolver.Answer, excludedByName: Bool) {
        guard phase == .resolving else { return }
        if let timer { loop.cancel(timer) }
        timer = nil
        let excluded: Bool
        switch answer {
        case .success(let addresses): excluded = excludedByName || frontEnd.isExcluded(addresses: addresses)
        case .failure: excluded = excludedByName
        }
        let apply = { [weak self] in
            guard let self, self.phase == .resolving else { return }
            switch answer {
            case .success(let addresses):
                self.connect(request, to: addresses, excluded: excluded)
            case .failure(let error):
                self.frontEnd.logger.debug("connection \(self.id): \(error)")
                self.fail(
                    request, socks: .hostUnreachable,
                    http: HTTPStatus(code: 502, reason: "Bad Gateway", explanation: "\(error)"))
            }
        }
        let delay = frontEnd.dnsDelay
        if excluded || delay <= .zero { return apply() }
        setTimer(after: delay, apply)
    }

    /// Hands the client to a relay towards `addresses`, with the pipelined bytes and the protocol's replies.
    private func connect(_ request: Request, to addresses: [SocketAddress], excluded: Bool) {
        if addresses.contains(where: frontEnd.isForbidden) {
            return fail(
                request, socks: .notAllowed,
                http: HTTPStatus(
                    code: 403, reason: "Forbidden",
                    explanation:
                        "\(request.host):\(request.port) is linkcond's own proxy, control endpoint or Toxiproxy API"))
        }
        guard output.isEmpty else {
            return fail(request, socks: .generalFailure, http: HTTPStatus.badRequest("the client is not reading"))
        }
        let name = Endpoint(host: request.host, port: request.port).description
        let rest = Array(received[consumed...])
        var preloaded = rest
        var endsStream = false
        var filter: StreamFilter?
        let style: ProxyReplies.Style
        switch request {
        case .socks5: style = .socks5
        case .httpTunnel: style = .httpTunnel
        case .httpForward(_, let rewriter, let rewritten):
            style = .httpForward
            (preloaded, endsStream) = rewritten
            filter = rewriter
        }
        phase = .done
        if let timer { loop.cancel(timer) }
        timer = nil
        let handedOver = registration
        registration = nil
        let answers = heldAnswers
        heldAnswers = []
        frontEnd.relay(
            self, to: addresses, upstreamName: name, excluded: excluded,
            handshake: ProxyReplies(style: style, upstreamName: name, answersFirst: answers),
            preloaded: preloaded, preloadEndsStream: endsStream, filter: filter, clientRegistration: handedOver,
            unreadClientEvents: unreadEvents)
    }

    private func fail(_ request: Request, socks: SOCKS5.Reply, http: HTTPStatus) {
        switch request {
        case .socks5: finish(SOCKS5.reply(socks))
        case .httpTunnel, .httpForward: finish(HTTPProxy.response(http))
        }
    }

    private func handshakeTimedOut() {
        guard phase == .reading else { return }
        if case .http = dialect, consumed < received.count { return finish(HTTPProxy.response(.timeout)) }
        close()
    }

    /// Sends a final answer, then half-closes and drops what the client still sends until it closes or time is up.
    private func finish(_ bytes: [UInt8]) {
        phase = .finishing
        setTimer(after: Self.lingerTime) { [weak self] in self?.close() }
        send(bytes)
        readAvailable()
    }

    /// Writes `bytes` after any held answers.
    private func send(_ bytes: [UInt8]) {
        output += heldAnswers + bytes
        heldAnswers = []
        flush()
    }

    private func flush() {
        while writable && !output.isEmpty && phase != .done {
            let result = output.withUnsafeBytes { raw in
                Result { () throws(SystemError) -> IOResult<Int> in try client.write(raw) }
            }
            frontEnd.readBuffer.calls.sessionWrites += 1
            switch result {
            case .failure:
                close()
                return
            case .success(.wouldBlock):
                writable = false
                // The change of interest reports the socket already writable again, so no edge is missed.
                if let registration { loop.setInterest(registration, TCPRelay.clientInterest | Epoll.writable) }
            case .success(.processed(let count)):
                output.removeFirst(count)
            }
        }
        if phase == .finishing && output.isEmpty && !writeClosed {
            writeClosed = true
            try? client.shutdownWrite()
        }
    }

    private func setTimer(after delay: Duration, _ action: @escaping () -> Void) {
        if let timer { loop.cancel(timer) }
        timer = loop.schedule(at: loop.clock.now() + delay) { [weak self] in
            self?.timer = nil
            action()
        }
    }

    /// Closes the client (unless a relay owns it) and tells the front end.
    /// Resets the client (no TIME_WAIT left behind for a flood) and closes, to make room for a newer client.
    func displace() {
        guard phase != .done else { return }
        try? client.setResetOnClose()
        close()
    }

    func close() {
        guard phase != .done else { return }
        phase = .done
        if let timer { loop.cancel(timer) }
        timer = nil
        if let registration { loop.deregister(registration) }
        registration = nil
        client.close()
        frontEnd.sessionClosed(self)
    }
}

extension ProxyClientSession: EventReceiver {
    /// The client's events; the loop holds the session until `close` deregisters the client or a relay takes its
    /// registration over.
    func receive(_ events: UInt32, on descriptor: Int32) { event(events) }
}

/// A session reference that does not keep the session alive while its name lookup runs.
private struct WeakSession {
    weak var session: ProxyClientSession?

    init(_ session: ProxyClientSession) { self.session = session }
}
