import DequeModule

/// One DNS-over-TCP client and its own upstream TCP connection: queries wait `dns.delay`, then go upstream in
/// order; answers come straight back. Several queries may be pipelined; IDs pass through unchanged.
///
/// Lives on the event loop thread. A zero-length or too-short frame is counted and skipped; an oversized length
/// or a stream that ends inside a frame is counted and closes the connection. Memory is bounded whatever the client
/// does: reading stops while `maximumOutstanding` queries (or `maximumOutstandingBytes`) wait for answers or while
/// `maximumUnsentAnswers` bytes of answers wait for the client to read, and upstream is read only while the client
/// keeps up. A connection across which neither a complete query nor an answer passed for the idle timeout (plus
/// `dns.delay`) is closed, so a client trickling a frame cannot hold it forever.
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
    /// Edge-triggered epoll: whether the client or upstream may have bytes not read yet.
    private var clientReadable = false
    private var upstreamReadable = false
    /// The framed size of each query read and not yet answered, oldest first.
    private var outstanding = Deque<Int>()
    private var outstandingBytes = 0
    /// When each outstanding query was read, oldest first, for the recording.
    private var askedAt = Deque<Instant>()
    private var timers: Set<EventLoop.TimerID> = []
    private var idleTimer: EventLoop.TimerID?
    private var lastProgress: Instant
    private var resumeScheduled = false
    private var reportedBytes = 0
    private var isClosed = false
    private var loop: EventLoop { forwarder.loop }

    static let maximumOutstanding = 256
    static let maximumOutstandingBytes = 64 * 1024
    static let maximumUnsentAnswers = 64 * 1024
    private static let readSize = 16 * 1024
    private static let readsPerTurn = 16
    private static let interest = Epoll.readable | Epoll.writable | Epoll.readHangUp | Epoll.edgeTriggered

    init(id: UInt64, forwarder: DNSForwarder, client: Socket, clientAddress: SocketAddress) {
        self.id = id
        self.forwarder = forwarder
        self.client = client
        self.clientAddress = clientAddress
        self.lastProgress = forwarder.loop.clock.now()
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
            return
        }
        armIdleTimer()
    }

    private func clientEvent(_ events: UInt32) {
        guard !isClosed else { return }
        defer { account() }
        if events & (Epoll.writable | Epoll.error | Epoll.hangUp) != 0 { flushToClient() }
        guard !isClosed, events & (Epoll.readable | Epoll.readHangUp | Epoll.hangUp | Epoll.error) != 0 else { return }
        clientReadable = true
        readClient()
    }

    /// Whether the client may be read: it has not ended and the answers it is owed stay within bounds.
    private var mayReadClient: Bool {
        !clientEnded && outstanding.count < Self.maximumOutstanding && outstandingBytes < Self.maximumOutstandingBytes
            && toClient.count < Self.maximumUnsentAnswers
    }

    /// Reads and frames queries while the limits allow, a bounded number of reads per loop turn.
    private func readClient() {
        var reads = 0
        while !isClosed && clientReadable && mayReadClient {
            if reads == Self.readsPerTurn {
                scheduleResume()
                return
            }
            reads += 1
            switch read(from: client, into: &queries) {
            case .wouldBlock:
                clientReadable = false
            case .ended:
                clientReadable = false
                if queries.hasPartialFrame { forwarder.countMalformed("a truncated TCP frame", from: clientAddress) }
                clientEnded = true
            case .read:
                break
            }
            while !isClosed, let frame = queries.next() {
                switch frame {
                case .message(let query): delay(query)
                case .malformed: forwarder.countMalformed("a TCP frame shorter than a DNS header", from: clientAddress)
                case .oversized:
                    forwarder.countMalformed(
                        "a TCP frame longer than \(DNSMessage.maximumQuerySize) bytes", from: clientAddress)
                    close()
                }
            }
        }
        closeIfDone()
    }

    /// Continues reading the client on a later loop turn, so one client cannot hold the loop.
    private func scheduleResume() {
        guard !resumeScheduled else { return }
        resumeScheduled = true
        loop.schedule(at: loop.clock.now()) { [weak self] in
            guard let self, !self.isClosed else { return }
            self.resumeScheduled = false
            self.readClient()
            self.account()
        }
    }

    /// Sends `query` upstream once `dns.delay` has passed.
    private func delay(_ query: [UInt8]) {
        let framed = DNSFrameReader.framed(query)
        outstanding.append(framed.count)
        outstandingBytes += framed.count
        let readAt = loop.clock.now()
        lastProgress = readAt
        askedAt.append(readAt)
        forwarder.tcpQueryForwarded()
        let sendAt = readAt + forwarder.queryDelay
        var timer: EventLoop.TimerID?
        timer = loop.schedule(at: sendAt) { [weak self] in
            guard let self, !self.isClosed else { return }
            if let timer { self.timers.remove(timer) }
            self.toUpstream += framed
            self.forwarder.tcpQuerySent(bytes: query.count, waited: sendAt - readAt)
            if self.upstreamConnected, let upstream = self.upstream { self.flush(&self.toUpstream, to: upstream) }
        }
        if let timer { timers.insert(timer) }
    }

    private func upstreamEvent(_ events: UInt32) {
        guard !isClosed, let upstream else { return }
        defer { account() }
        if !upstreamConnected {
            guard events & (Epoll.writable | Epoll.error | Epoll.hangUp) != 0 else { return }
            if let error = (try? upstream.pendingError()) ?? nil {
                forwarder.logger.warning(
                    "dns over tcp from \(clientAddress): upstream \(forwarder.upstreamAddress): \(error)")
                close()
                return
            }
            upstreamConnected = true
        }
        if events & (Epoll.writable | Epoll.error | Epoll.hangUp) != 0 { flush(&toUpstream, to: upstream) }
        guard !isClosed, events & (Epoll.readable | Epoll.readHangUp | Epoll.hangUp | Epoll.error) != 0 else { return }
        upstreamReadable = true
        readUpstream()
    }

    /// Reads answers while the client keeps up with them; an answer nobody asked for is dropped.
    private func readUpstream() {
        guard let upstream else { return }
        var reads = 0
        var ended = false
        while !isClosed && upstreamReadable && toClient.count < Self.maximumUnsentAnswers && reads < Self.readsPerTurn {
            reads += 1
            switch read(from: upstream, into: &answers) {
            case .wouldBlock: upstreamReadable = false
            case .ended:
                upstreamReadable = false
                ended = true
            case .read: break
            }
            while !isClosed, let frame = answers.next() {
                switch frame {
                case .message(let answer) where !outstanding.isEmpty:
                    outstandingBytes -= outstanding.removeFirst()
                    lastProgress = loop.clock.now()
                    forwarder.recordLookup(
                        client: clientAddress, answer: answer, askedAt: askedAt.removeFirst(), overTCP: true)
                    toClient += DNSFrameReader.framed(answer)
                    forwarder.tcpAnswerReturned(bytes: answer.count)
                case .message, .malformed, .oversized:
                    forwarder.countMalformed("a bad or unasked-for answer frame", from: forwarder.upstreamAddress)
                }
            }
        }
        if upstreamReadable && toClient.count < Self.maximumUnsentAnswers && !isClosed {
            loop.schedule(at: loop.clock.now()) { [weak self] in
                guard let self, !self.isClosed else { return }
                self.readUpstream()
                self.account()
            }
        }
        flush(&toClient, to: client)
        if ended {
            close()
        } else if !isClosed && clientReadable && mayReadClient {
            readClient()
        } else if !isClosed {
            closeIfDone()
        }
    }

    /// Writes owed answers; once they drain, reading resumes on whichever side was held back. Only the client's
    /// writable event calls it, so it never recurses through `readUpstream`.
    private func flushToClient() {
        flush(&toClient, to: client)
        guard !isClosed, toClient.count < Self.maximumUnsentAnswers else { return }
        if upstreamReadable { readUpstream() }
        if clientReadable && mayReadClient { readClient() } else { closeIfDone() }
    }

    private enum ReadOutcome {
        case read
        case wouldBlock
        /// End of stream, or an error.
        case ended
    }

    /// One read of at most `readSize` bytes into `reader`.
    private func read(from socket: Socket, into reader: inout DNSFrameReader) -> ReadOutcome {
        let buffer = forwarder.readBuffer.bytes
        let target = UnsafeMutableRawBufferPointer(rebasing: buffer[0..<min(buffer.count, Self.readSize)])
        guard let result = try? socket.read(into: target) else { return .ended }
        switch result {
        case .wouldBlock: return .wouldBlock
        case .processed(0): return .ended
        case .processed(let count):
            reader.append(UnsafeRawBufferPointer(rebasing: target[0..<count]))
            return .read
        }
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

    /// Closes the connection once no complete query nor answer crossed it for the idle timeout plus `dns.delay`.
    private func armIdleTimer() {
        let deadline = lastProgress + forwarder.options.dnsTCPIdleTimeout + forwarder.queryDelay
        idleTimer = loop.schedule(at: deadline) { [weak self] in
            guard let self, !self.isClosed else { return }
            self.idleTimer = nil
            if self.lastProgress + self.forwarder.options.dnsTCPIdleTimeout + self.forwarder.queryDelay
                > self.loop.clock.now()
            {
                self.armIdleTimer()
                return
            }
            self.forwarder.logger.debug("dns over tcp from \(self.clientAddress): idle, closing")
            self.close()
        }
    }

    /// Closes once the client has finished sending and every query of it has been answered and written.
    private func closeIfDone() {
        if clientEnded && outstanding.isEmpty && toClient.isEmpty { close() }
    }

    /// Tells the forwarder how many bytes this connection holds now.
    private func account() {
        let held = isClosed ? 0 : queries.bufferedBytes + outstandingBytes + toClient.count + answers.bufferedBytes
        forwarder.tcpBufferedChanged(by: held - reportedBytes)
        reportedBytes = held
    }

    func close() {
        guard !isClosed else { return }
        isClosed = true
        for timer in timers { loop.cancel(timer) }
        timers.removeAll()
        if let idleTimer { loop.cancel(idleTimer) }
        idleTimer = nil
        if let clientRegistration { loop.deregister(clientRegistration) }
        if let upstreamRegistration { loop.deregister(upstreamRegistration) }
        client.close()
        upstream?.close()
        account()
        forwarder.connectionClosed(self)
    }
}
