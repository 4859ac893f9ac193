import DequeModule
import Foundation
import Logging

/// A DNS forwarder on one address, over UDP and TCP, that adds the profile's `dns.delay` to every query.
///
/// Lives on the event loop thread. UDP queries from every client share one upstream socket, so each is given a
/// fresh query ID (restored in the answer) and crosses a datagram link: queries take the uplink's loss model and
/// `dns.delay`, answers the downlink's loss model. A waiting query is known by its client's address, port and ID:
/// a retransmission while it waits goes upstream again under the same fresh ID and gets one answer, and its expiry
/// removes only that query, never a later one that reused the fresh ID. A TCP client gets its own upstream TCP connection, whose queries
/// wait `dns.delay` and keep their IDs. Malformed messages are counted and dropped.
final class DNSForwarder: ConditionedListener {
    /// How long a UDP query waits for its answer before its ID is reused.
    static let queryTimeout = Duration.seconds(10)

    /// A UDP query as its client knows it.
    private struct QueryKey: Hashable {
        var client: SocketAddress
        var clientID: UInt16
    }

    /// A UDP query waiting for its answer: the ID it carries upstream, and when it is given up.
    private struct PendingQuery {
        var upstreamID: UInt16
        var expiresAt: Instant
        var askedAt: Instant
    }

    let loop: EventLoop
    let logger: Logger
    let readBuffer: ReadBuffer
    /// Where answered lookups are recorded (`run --record`); nil when not recording.
    private let recorder: TrafficRecorder?
    /// Told every UDP answer as it arrives (exec learns which names its program's destinations have); nil by default.
    var onAnswer: ((DNSSummary) -> Void)?
    let localAddress: SocketAddress
    let upstreamAddress: SocketAddress
    /// Whether the UDP socket queries arrive on was opened in an exec'd program's namespace, not linkcond's.
    private let queriesAdopted: Bool
    private(set) var profile: Profile
    private let udpSocket: Socket
    private let acceptor: TCPAcceptor
    private let upstreamSocket: Socket
    private var registrations: [EventLoop.RegistrationID] = []
    private let queries: UDPLink
    private let answers: UDPLink
    private var queryPump: DatagramPump!
    private var answerPump: DatagramPump!
    private var pending: [QueryKey: PendingQuery] = [:]
    private var keysByUpstreamID: [UInt16: QueryKey] = [:]
    private var expiries = Deque<(key: QueryKey, upstreamID: UInt16, at: Instant)>()
    private var expiryTimer: EventLoop.TimerID?
    private var nextID = UInt16.random(in: 0...UInt16.max)
    private var connections: [UInt64: DNSTCPConnection] = [:]
    private var nextConnectionID: UInt64 = 1
    private var queriesReceived = 0
    private var queriesRefused = 0
    private(set) var malformedMessages = 0
    let options: ProxyOptions
    /// DNS message bytes of TCP queries sent upstream and of TCP answers passed back to their clients. UDP's are
    /// counted by the links they cross; TCP's cross no link, so the status adds these to them.
    private var tcpQueryBytes = 0
    private var tcpAnswerBytes = 0
    /// The wait the last TCP query sent upstream was given: `dns.delay`, once. Tests read it (a wall-clock measure
    /// of the same thing would depend on the machine's speed).
    private(set) var lastTCPQueryWait: Duration?
    /// Bytes the TCP connections hold now, and the most they ever held at once.
    private var tcpBufferedBytes = 0
    private var tcpBufferedPeak = 0

    /// Binds UDP and TCP on `address` (the same port for both) and connects to `upstream`, or to the first
    /// `nameserver` of `resolverConfiguration` when none is given. Given `adoptedQueries`, a UDP socket opened elsewhere
    /// (in an exec'd program's namespace), it takes that socket for UDP queries, closing it when it throws, and binds
    /// only TCP on `address`.
    init(
        address: SocketAddress, upstream: [SocketAddress], resolverConfiguration: String = "/etc/resolv.conf",
        context: ListenerContext, adoptingQueries adoptedQueries: Socket? = nil
    ) throws {
        let upstreamAddress: SocketAddress
        let udpSocket: Socket
        let tcpSocket: Socket
        let localAddress: SocketAddress
        do {
            upstreamAddress = try upstream.first ?? Self.systemResolver(configuration: resolverConfiguration)
            if let adoptedQueries {
                tcpSocket = try Socket.listening(on: address)
                do {
                    localAddress = try tcpSocket.localAddress()
                } catch {
                    tcpSocket.close()
                    throw error
                }
                udpSocket = adoptedQueries
            } else {
                (udpSocket, tcpSocket, localAddress) = try Self.bindBoth(address)
            }
        } catch {
            adoptedQueries?.close()
            throw error
        }
        let upstreamSocket: Socket
        do {
            upstreamSocket = try Socket.datagram(connectedTo: upstreamAddress)
        } catch {
            udpSocket.close()
            tcpSocket.close()
            throw error
        }
        do {
            acceptor = try TCPAcceptor(adopting: tcpSocket, loop: context.loop, logger: context.logger)
        } catch {
            udpSocket.close()
            upstreamSocket.close()
            throw error
        }
        udpSocket.enlargeReceiveBuffer(to: UDPListener.receiveBufferBytes)
        self.udpSocket = udpSocket
        self.upstreamSocket = upstreamSocket
        self.localAddress = localAddress
        self.upstreamAddress = upstreamAddress
        self.queriesAdopted = adoptedQueries != nil
        self.loop = context.loop
        self.logger = context.logger
        self.readBuffer = context.readBuffer
        self.recorder = context.recorder
        self.profile = context.profile
        self.options = context.options
        let seed = context.profile.seed ?? UInt64.random(in: 0...UInt64.max)
        queries = UDPLink(loop: loop, profile: Self.queryDirection(context.profile), seed: seed &+ 0x5D)
        answers = UDPLink(loop: loop, profile: Self.answerDirection(context.profile), seed: seed &+ 0xA7)
        queryPump = DatagramPump(link: queries) { [unowned self] bytes, _ in
            self.write(bytes, on: self.upstreamSocket, to: nil)
        }
        answerPump = DatagramPump(link: answers) { [unowned self] bytes, client in
            self.write(bytes, on: self.udpSocket, to: client)
        }
        do {
            let interest = Epoll.readable | Epoll.edgeTriggered
            registrations.append(
                try loop.register(udpSocket.descriptor, interest: interest) { [weak self] _ in self?.receiveQueries() })
            registrations.append(
                try loop.register(upstreamSocket.descriptor, interest: interest) { [weak self] _ in
                    self?.receiveAnswers()
                })
            try acceptor.start(shortage: .turnAway(context.descriptorReserve)) { [weak self] client, address in
                self?.accepted(client, from: address)
            }
        } catch {
            close()
            throw error
        }
    }

    /// The uplink's datagram impairments with `dns.delay` as the only delay: what a UDP query crosses.
    static func queryDirection(_ profile: Profile) -> DirectionProfile {
        var direction = datagramImpairments(of: profile.uplink)
        direction.delay = profile.dnsDelay
        return direction
    }

    /// The downlink's datagram impairments without delay: what a UDP answer crosses.
    static func answerDirection(_ profile: Profile) -> DirectionProfile {
        datagramImpairments(of: profile.downlink)
    }

    /// `direction` without its rate, trace and delay: a DNS datagram crosses every datagram impairment a profile
    /// sets (new ones included) but not the link's capacity, whose queue would hold lookups behind bulk traffic.
    private static func datagramImpairments(of direction: DirectionProfile) -> DirectionProfile {
        var impairments = direction
        impairments.bandwidth = nil
        impairments.trace = nil
        impairments.burst = nil
        impairments.delay = .zero
        impairments.jitter = .zero
        return impairments
    }

    /// The first `nameserver` in /etc/resolv.conf, port 53.
    static func systemResolver(configuration path: String = "/etc/resolv.conf") throws -> SocketAddress {
        let text = (try? String(contentsOfFile: path, encoding: .utf8)) ?? ""
        for line in text.split(whereSeparator: \.isNewline) {
            let words = line.split(whereSeparator: { $0 == " " || $0 == "\t" })
            guard words.count >= 2, words[0] == "nameserver" else { continue }
            let host = words[1].split(separator: "%").first.map(String.init) ?? ""
            if let address = SocketAddress(numericHost: host, port: 53) { return address }
        }
        throw ResolutionError(
            host: "the system resolver", reason: "no nameserver in \(path); give --dns-upstream HOST:PORT")
    }

    /// Binds UDP on `address`, then TCP on the port UDP got; with port 0, retries when TCP finds that port taken.
    private static func bindBoth(_ address: SocketAddress) throws -> (Socket, Socket, SocketAddress) {
        for _ in 0..<16 {
            let udp = try Socket.datagram(boundTo: address)
            do {
                let local = try udp.localAddress()
                let tcp = try Socket.listening(on: local)
                return (udp, tcp, local)
            } catch  where error.errno == .addressInUse && address.port == 0 {
                udp.close()
            } catch {
                udp.close()
                throw error
            }
        }
        throw SystemError("bind \(address) for UDP and TCP", .addressInUse)
    }

    var bound: BoundListener {
        BoundListener(kind: "dns", address: localAddress, upstream: upstreamAddress.description)
    }

    /// Its TCP listener, and its UDP one unless an exec'd program's namespace holds that; its upstream over both.
    var addresses: ListenerAddresses {
        ListenerAddresses(
            name: "DNS forwarder", role: .commandLine,
            listening: (queriesAdopted ? [] : [TransportAddress(transport: .udp, address: localAddress)])
                + [TransportAddress(transport: .tcp, address: localAddress)],
            upstreams: [.udp, .tcp].map { TransportAddress(transport: $0, address: upstreamAddress) })
    }

    func status() -> ListenerStatus {
        var status = ListenerStatus(
            kind: "dns", address: localAddress, upstream: upstreamAddress.description,
            activeConnections: connections.count + pending.count,
            connectionsAccepted: queriesReceived, connectionsRefused: queriesRefused,
            uplink: Self.adding(tcpQueryBytes, to: queries.counters),
            downlink: Self.adding(tcpAnswerBytes, to: answers.counters))
        status.malformedMessages = malformedMessages
        status.connectionsTurnedAway = acceptor.turnedAway
        status.streamBufferedBytes = tcpBufferedBytes
        status.streamBufferedPeak = tcpBufferedPeak
        status.uplinkLateness = queries.model.lateness
        status.downlinkLateness = answers.model.lateness
        return status
    }

    func countMalformed(_ what: String, from client: SocketAddress) {
        malformedMessages += 1
        logger.debug("dns \(localAddress): dropped \(what) from \(client)")
    }

    private func write(_ bytes: [UInt8], on socket: Socket, to destination: SocketAddress?) -> Bool {
        let result = bytes.withUnsafeBytes { raw in
            Result { () throws(SystemError) -> IOResult<Int> in
                if let destination { return try socket.sendDatagram(raw, to: destination) }
                return try socket.write(raw)
            }
        }
        if case .success(.processed) = result { return true }
        return false
    }

    private func receiveQueries() {
        let now = loop.clock.now()
        for _ in 0..<64 {
            guard let received = try? udpSocket.receiveDatagram(into: readBuffer.bytes) else { continue }
            guard case .processed(let (count, client)) = received else { return }
            let query = Array(UnsafeRawBufferPointer(rebasing: readBuffer.bytes[0..<count]))
            if let problem = DNSMessage.problem(withQuery: query) {
                countMalformed(
                    problem == .oversized ? "an oversized query" : "a query shorter than a DNS header", from: client)
                continue
            }
            forward(query, from: client, at: now)
        }
        loop.schedule(at: now) { [weak self] in self?.receiveQueries() }
    }

    /// Gives `query` an unused ID and sends it across the query link.
    private func forward(_ query: [UInt8], from client: SocketAddress, at now: Instant) {
        queriesReceived += 1
        expire(at: now)
        guard profile.fault != .blackhole, profile.fault != .refuse, pending.count < Int(UInt16.max) else {
            queriesRefused += 1
            return
        }
        let key = QueryKey(client: client, clientID: DNSMessage.id(of: query))
        if let waiting = pending[key] {
            queryPump.offer(DNSMessage.replacingID(of: query, with: waiting.upstreamID), at: now)
            return
        }
        while keysByUpstreamID[nextID] != nil { nextID &+= 1 }
        let id = nextID
        nextID &+= 1
        let expiresAt = now + Self.queryTimeout
        pending[key] = PendingQuery(upstreamID: id, expiresAt: expiresAt, askedAt: now)
        keysByUpstreamID[id] = key
        expiries.append((key, id, expiresAt))
        armExpiryTimer()
        queryPump.offer(DNSMessage.replacingID(of: query, with: id), at: now)
    }

    /// Records a lookup answered now for `client`, asked at `askedAt`, under `run --record`.
    func recordLookup(client: SocketAddress, answer: [UInt8], askedAt: Instant, overTCP: Bool) {
        guard let recorder else { return }
        let now = loop.clock.now()
        var lookup = RecordedLookup(client: client.description, answer: answer, delay: now - askedAt)
        if overTCP { lookup.transport = "tcp" }
        recorder.dnsLookup(lookup, at: now)
    }

    private func receiveAnswers() {
        let now = loop.clock.now()
        for _ in 0..<64 {
            guard let received = try? upstreamSocket.read(into: readBuffer.bytes) else { continue }
            guard case .processed(let count) = received else { return }
            let answer = Array(UnsafeRawBufferPointer(rebasing: readBuffer.bytes[0..<count]))
            guard DNSMessage.problem(withAnswer: answer) == nil else {
                countMalformed("an answer shorter than a DNS header", from: upstreamAddress)
                continue
            }
            guard let key = keysByUpstreamID.removeValue(forKey: DNSMessage.id(of: answer)) else { continue }
            let query = pending.removeValue(forKey: key)
            if let query { recordLookup(client: key.client, answer: answer, askedAt: query.askedAt, overTCP: false) }
            if let onAnswer { onAnswer(DNSSummary(answer: answer)) }
            answerPump.offer(DNSMessage.replacingID(of: answer, with: key.clientID), to: key.client, at: now)
        }
        loop.schedule(at: now) { [weak self] in self?.receiveAnswers() }
    }

    /// Forgets queries whose answer is overdue, so their IDs can be reused.
    private func expire(at now: Instant) {
        while let first = expiries.first, first.at <= now {
            expiries.removeFirst()
            guard let query = pending[first.key], query.upstreamID == first.upstreamID, query.expiresAt == first.at
            else { continue }
            pending.removeValue(forKey: first.key)
            keysByUpstreamID.removeValue(forKey: query.upstreamID)
        }
    }

    private func armExpiryTimer() {
        guard expiryTimer == nil, let first = expiries.first else { return }
        expiryTimer = loop.schedule(at: first.at) { [weak self] in
            guard let self else { return }
            self.expiryTimer = nil
            self.expire(at: self.loop.clock.now())
            self.armExpiryTimer()
        }
    }

    /// Serves a DNS-over-TCP client, or resets it while the profile refuses connections.
    private func accepted(_ client: Socket, from address: SocketAddress) {
        if profile.fault == .refuse {
            try? client.setResetOnClose()
            client.close()
            queriesRefused += 1
            return
        }
        let connection = DNSTCPConnection(id: nextConnectionID, forwarder: self, client: client, clientAddress: address)
        nextConnectionID += 1
        connections[connection.id] = connection
        connection.start(upstream: upstreamAddress)
    }

    /// Notes that a TCP connection now holds `delta` bytes more (or fewer).
    func tcpBufferedChanged(by delta: Int) {
        tcpBufferedBytes += delta
        tcpBufferedPeak = max(tcpBufferedPeak, tcpBufferedBytes)
    }

    /// Counts a query a TCP connection forwards.
    func tcpQueryForwarded() { queriesReceived += 1 }

    /// A TCP client's query of `bytes` (the DNS message) went upstream, `waited` after it was read: the wait its
    /// connection scheduled, not a clock reading.
    func tcpQuerySent(bytes: Int, waited: Duration) {
        tcpQueryBytes += bytes
        lastTCPQueryWait = waited
    }

    /// An answer of `bytes` (the DNS message) was queued for its TCP client.
    func tcpAnswerReturned(bytes: Int) { tcpAnswerBytes += bytes }

    /// `counters` with `bytes` that crossed no link counted as handed over and delivered.
    private static func adding(_ bytes: Int, to counters: LinkCounters) -> LinkCounters {
        var counters = counters
        counters.bytesEnqueued += bytes
        counters.bytesDelivered += bytes
        return counters
    }

    /// The delay a TCP query waits before it is sent upstream.
    var queryDelay: Duration { profile.dnsDelay }

    func connectionClosed(_ connection: DNSTCPConnection) {
        connections.removeValue(forKey: connection.id)
    }

    func apply(_ profile: Profile) {
        self.profile = profile
        queries.update(profile: Self.queryDirection(profile))
        answers.update(profile: Self.answerDirection(profile))
    }

    /// Closes every TCP connection and forgets every UDP query still waiting for its answer.
    func resetConnections() {
        for connection in Array(connections.values) { connection.close() }
        pending.removeAll()
        keysByUpstreamID.removeAll()
        expiries.removeAll()
    }

    func close() {
        for registration in registrations { loop.deregister(registration) }
        registrations.removeAll()
        if let expiryTimer { loop.cancel(expiryTimer) }
        expiryTimer = nil
        resetConnections()
        queryPump?.close()
        answerPump?.close()
        queries.close()
        answers.close()
        udpSocket.close()
        acceptor.close()
        upstreamSocket.close()
    }
}

/// What the DNS forwarder exposes for tests and diagnostics.
public enum DNSForwarderSupport {
    /// The resolver the forwarder asks when none is given: the first `nameserver` in `configuration`, port 53.
    public static func systemResolver(configuration path: String = "/etc/resolv.conf") throws -> String {
        try DNSForwarder.systemResolver(configuration: path).description
    }
}
