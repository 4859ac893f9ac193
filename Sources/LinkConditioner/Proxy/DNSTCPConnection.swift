/// One DNS-over-TCP client and its own upstream TCP connection: queries wait `dns.delay`, then go upstream in
/// order; answers come straight back. Several queries may be pipelined; IDs pass through unchanged.
///
/// Lives on the event loop thread. A zero-length or too-short frame is counted and skipped; an oversized length
/// or a stream that ends inside a frame is counted and closes the connection.
final class DNSTCPConnection {
    let id: UInt64
    private unowned let forwarder: DNSForwarder
    private let client: Socket
    private let clientAddress: SocketAddress
    private var upstream: Socket?
    private var clientRegistration: EventLoop.RegistrationID?
    private var upstreamRegistration: EventLoop.RegistrationID?
    private var queries = DNSFrameReader(limit: DNSMessage.maximumQuerySize)
    private var answers = DNSFrameReader(limit: Int(UInt16.max))
    private var toUpstream: [UInt8] = []
    private var toClient: [UInt8] = []
    private var upstreamConnected = false
    private var clientEnded = false
    /// Queries read from the client and not yet answered.
    private var outstanding = 0
    private var timers: Set<EventLoop.TimerID> = []
    private var isClosed = false
    private var loop: EventLoop { forwarder.loop }

    private static let interest = Epoll.readable | Epoll.writable | Epoll.readHangUp | Epoll.edgeTriggered

    init(id: UInt64, forwarder: DNSForwarder, client: Socket, clientAddress: SocketAddress) {
        self.id = id
        self.forwarder = forwarder
        self.client = client
        self.clientAddress = clientAddress
    }

    func start(upstream address: SocketAddress) {
        do {
            clientRegistration = try loop.register(client.descriptor, interest: Self.interest) { [weak self] events in
                self?.clientEvent(events)
            }
            let socket = try Socket.tcp(family: address.family)
            upstream = socket
            upstreamRegistration = try loop.register(socket.descriptor, interest: Self.interest) { [weak self] events in
                self?.upstreamEvent(events)
            }
            if try socket.connect(to: address) { upstreamConnected = true }
        } catch {
            forwarder.logger.warning("dns over tcp from \(clientAddress): upstream \(address): \(error)")
            close()
        }
    }

    private func clientEvent(_ events: UInt32) {
        guard !isClosed else { return }
        if events & (Epoll.writable | Epoll.error | Epoll.hangUp) != 0 { flush(&toClient, to: client) }
        guard !isClosed, events & (Epoll.readable | Epoll.readHangUp | Epoll.hangUp | Epoll.error) != 0 else { return }
        let ended = readAll(from: client, into: &queries)
        while !isClosed, let frame = queries.next() {
            switch frame {
            case .message(let query): delay(query)
            case .malformed: forwarder.countMalformed("a TCP frame shorter than a DNS header", from: clientAddress)
            case .oversized:
                forwarder.countMalformed("a TCP frame longer than \(DNSMessage.maximumQuerySize) bytes", from: clientAddress)
                close()
            }
        }
        if ended && !isClosed {
            if queries.hasPartialFrame { forwarder.countMalformed("a truncated TCP frame", from: clientAddress) }
            clientEnded = true
            closeIfDone()
        }
    }

    /// Sends `query` upstream once `dns.delay` has passed.
    private func delay(_ query: [UInt8]) {
        outstanding += 1
        forwarder.tcpQueryForwarded()
        let framed = DNSFrameReader.framed(query)
        var timer: EventLoop.TimerID?
        timer = loop.schedule(at: loop.clock.now() + forwarder.queryDelay) { [weak self] in
            guard let self, !self.isClosed else { return }
            if let timer { self.timers.remove(timer) }
            self.toUpstream += framed
            if self.upstreamConnected, let upstream = self.upstream { self.flush(&self.toUpstream, to: upstream) }
        }
        if let timer { timers.insert(timer) }
    }

    private func upstreamEvent(_ events: UInt32) {
        guard !isClosed, let upstream else { return }
        if !upstreamConnected {
            guard events & (Epoll.writable | Epoll.error | Epoll.hangUp) != 0 else { return }
            if let error = (try? upstream.pendingError()) ?? nil {
                forwarder.logger.warning("dns over tcp from \(clientAddress): upstream \(forwarder.upstreamAddress): \(error)")
                close()
                return
            }
            upstreamConnected = true
        }
        if events & (Epoll.writable | Epoll.error | Epoll.hangUp) != 0 { flush(&toUpstream, to: upstream) }
        guard !isClosed, events & (Epoll.readable | Epoll.readHangUp | Epoll.hangUp | Epoll.error) != 0 else { return }
        let ended = readAll(from: upstream, into: &answers)
        while !isClosed, let frame = answers.next() {
            switch frame {
            case .message(let answer):
                outstanding = max(0, outstanding - 1)
                toClient += DNSFrameReader.framed(answer)
            case .malformed, .oversized:
                forwarder.countMalformed("a bad answer frame", from: forwarder.upstreamAddress)
            }
        }
        flush(&toClient, to: client)
        if ended { close() } else { closeIfDone() }
    }

    /// Reads until the socket would block; returns true at end of stream or on an error.
    private func readAll(from socket: Socket, into reader: inout DNSFrameReader) -> Bool {
        let buffer = forwarder.readBuffer.bytes
        for _ in 0..<64 {
            guard let result = try? socket.read(into: buffer) else { return true }
            switch result {
            case .wouldBlock: return false
            case .processed(0): return true
            case .processed(let count): reader.append(UnsafeRawBufferPointer(rebasing: buffer[0..<count]))
            }
        }
        return false
    }

    /// Writes as much of `pending` as the socket takes.
    private func flush(_ pending: inout [UInt8], to socket: Socket) {
        while !pending.isEmpty {
            let result = pending.withUnsafeBytes { raw in
                Result { () throws(SystemError) -> IOResult<Int> in try socket.write(raw) }
            }
            guard case .success(let outcome) = result else {
                close()
                return
            }
            guard case .processed(let written) = outcome else { return }
            pending.removeFirst(written)
        }
    }

    /// Closes once the client has finished sending and every query of it has been answered and written.
    private func closeIfDone() {
        if clientEnded && outstanding == 0 && toClient.isEmpty { close() }
    }

    func close() {
        guard !isClosed else { return }
        isClosed = true
        for timer in timers { loop.cancel(timer) }
        timers.removeAll()
        if let clientRegistration { loop.deregister(clientRegistration) }
        if let upstreamRegistration { loop.deregister(upstreamRegistration) }
        client.close()
        upstream?.close()
        forwarder.connectionClosed(self)
    }
}
