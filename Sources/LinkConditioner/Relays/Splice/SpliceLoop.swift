import Foundation
import Logging

/// Bytes a splice loop moved for one handed-over connection that the main loop has not counted yet.
///
/// Shared by two threads: the splice loop adds to it as it moves bytes, and the main loop takes the sums into the
/// listener's counters when it reads a status, takes the connection back, or settles its close. A lock orders the
/// two; neither ever holds it across anything but the sums.
final class SplicedBytes: @unchecked Sendable {
    private let lock = NSLock()
    private var uplink = 0
    private var downlink = 0

    func add(uplink: Int = 0, downlink: Int = 0) {
        lock.lock()
        self.uplink += uplink
        self.downlink += downlink
        lock.unlock()
    }

    /// The bytes moved since the last call, each way.
    func take() -> (uplink: Int, downlink: Int) {
        lock.lock()
        defer {
            uplink = 0
            downlink = 0
            lock.unlock()
        }
        return (uplink, downlink)
    }
}

/// One direction of a connection as it crosses between the main loop and a splice loop: the pipe still holding
/// bytes read from its source (they go before anything read later) and how far its stream got.
struct SpliceDirectionState {
    var pipe: SplicePipe?
    var pipedBytes = 0
    /// The source's end of stream was read.
    var sourceEnded = false
    /// The end of stream was forwarded to the destination (a half-close).
    var finished = false
}

/// A relayed connection's sockets and stream positions, handed from the main loop to a splice loop or back. Whoever
/// holds it owns the sockets and pipes in it; it crosses threads only through an event loop's queue.
struct HandedOverConnection {
    let ticket: UInt64
    let client: Socket
    let upstream: Socket
    var uplink: SpliceDirectionState
    var downlink: SpliceDirectionState
    let bytes: SplicedBytes
    /// The splice loop could not carry it (no pipe to be had), so it stays on the main loop from now on.
    var needsMainLoop = false
}

/// One of the proxy's event loop threads besides the main loop (`ProxyOptions.threads`). It has two jobs: it owns the
/// `--listen` TCP listeners given to it (round-robin, see `ConditionedProxy`), each with its link and connections,
/// which it shapes and splices itself; and it moves the bytes of the main loop's pass-through TCP connections with
/// splice(2), so unshaped connections of the main loop's listeners use another core too.
///
/// The main loop hands a connection over (`adopt`) when nothing needs to see its bytes, and takes it back (`recall`)
/// before the conditions change. The main loop may wait on a splice loop; a splice loop never waits on the main loop
/// (it only posts to it through `ended`), so the two cannot deadlock. The public calls are made on the main loop
/// thread; everything they reach runs on the splice loop's own thread.
final class SpliceLoop: Sendable {
    let loop: EventLoop
    private let state: LoopBound<SpliceLoopState>

    /// Starts the loop's thread, named `linkcond-splice` (Linux keeps 15 characters of a thread's name); the
    /// listeners it will own hold up to `bufferShare` bytes between them.
    init(logger: Logger, bufferShare: Int) throws {
        let loop = try EventLoop()
        self.loop = loop
        state = LoopBound(
            SpliceLoopState(
                loop: loop, logger: logger,
                listenerResources: LoopListenerResources(bufferShare: bufferShare, loop: loop)))
        loop.start(name: "linkcond-splice")
    }

    /// Makes the listener for `spec` on this loop, which owns it from now on with its link and connections, and
    /// returns how the main loop drives it. `loopIndex` is this loop's place among the proxy's (the main loop is 0).
    /// With `realtimePriority`, the loop enters SCHED_FIFO before its first listener, as the main loop did: it shapes
    /// too. Called on the main loop thread.
    func makeListener(
        _ spec: ListenerSpec, address: SocketAddress, upstream: [SocketAddress], loopIndex: Int,
        template: ListenerContext
    ) throws -> LoopOwnedListener {
        let state = self.state
        let loop = self.loop
        let given = LoopBound((spec, address, upstream, template))
        let made = try loop.submitAndWait {
            let (spec, address, upstream, template) = given.value
            let resources = state.value.listenerResources
            if let priority = template.options.realtimePriority, !state.value.enteredRealtime {
                do throws(SystemError) { try RealtimeScheduling.enterFIFO(priority: priority) } catch {
                    throw RealtimeSchedulingRefused(priority: priority, cause: error)
                }
                state.value.enteredRealtime = true
            }
            var context = template
            context.loop = loop
            context.readBuffer = resources.readBuffer
            context.bufferBudget = resources.bufferBudget
            context.descriptorReserve = resources.descriptorReserve
            context.recorder = nil
            context.spliceLoops = nil
            let listener = try LinkConditioner.makeListener(
                spec, address: address, upstream: upstream, context: context)
            return LoopBound((listener, listener.bound, listener.addresses, listener.status()))
        }
        let (listener, bound, addresses, status) = made.value
        return LoopOwnedListener(
            LoopBound(listener), on: loop, loopIndex: loopIndex, bound: bound, addresses: addresses, status: status)
    }

    /// Bytes the connections of this loop's listeners hold now, and the most they held at once.
    func bufferedBytes() -> (now: Int, peak: Int) {
        let state = self.state
        let budget = try? loop.submitAndWait {
            let budget = state.value.listenerResources.bufferBudget
            return (budget.held, budget.peak)
        }
        return budget ?? (0, 0)
    }

    /// Carries `connection` on this loop from now on. `ended` runs on this loop's thread once the connection has
    /// ended here (both ways finished, or a socket failed) and the loop has let go of its sockets; it must only post.
    func adopt(_ connection: HandedOverConnection, ended: @escaping @Sendable (SpliceEnd) -> Void) {
        let state = self.state
        let carried = LoopBound(connection)
        let adopted = loop.execute { state.value.adopt(carried.value, ended: ended) }
        if !adopted { ended(.needsMainLoop) }
    }

    /// Takes every connection on this loop back, with its sockets and any pipe still holding bytes, and waits for
    /// them. Connections that already ended are not among them: their `ended` is posted or on its way.
    func recallAll() -> [HandedOverConnection] {
        let state = self.state
        let recalled = try? loop.submitAndWait { LoopBound(state.value.recallAll()) }
        return recalled?.value ?? []
    }

    /// Takes one connection back, or nil when it already ended here.
    func recall(_ ticket: UInt64) -> HandedOverConnection? {
        let state = self.state
        let recalled = try? loop.submitAndWait { LoopBound(state.value.recall(ticket)) }
        return recalled?.value
    }

    /// The pool every pipe this loop splices the main loop's connections through comes from; it belongs to the
    /// loop's thread.
    var pipes: SplicePipePool { state.value.pipes }

    /// The pool the relays of this loop's own listeners splice through; it belongs to the loop's thread.
    var listenerPipes: SplicePipePool { state.value.listenerResources.readBuffer.pipes }

    /// Ends the thread after closing the pipes it kept. Connections must have been recalled first.
    func stop() {
        let state = self.state
        loop.execute { state.value.close() }
        loop.stopAndWait()
    }
}

/// How a connection carried by a splice loop ended there.
enum SpliceEnd: Sendable {
    /// Both ways finished (each end of stream forwarded as a half-close): the sockets are to be closed.
    case closed
    /// A socket failed or was reset: both sides are to be reset, as the relay does.
    case reset
    /// The splice loop could not carry it (no pipe to be had): the main loop takes it back and copies.
    case needsMainLoop
}

/// What a splice loop holds: its connections, the pipes it keeps, and what its own listeners share. Lives on the
/// splice loop's thread.
final class SpliceLoopState {
    let loop: EventLoop
    let logger: Logger
    /// Few pipes kept: its connections are long ones, and the main loop's descriptor shortage cannot empty this pool.
    let pipes = SplicePipePool(keepingAtMost: 4)
    private var connections: [UInt64: SplicedConnection] = [:]
    /// What the listeners this loop owns share (their relays splice through its own pool, not `pipes`).
    let listenerResources: LoopListenerResources
    /// Whether the loop entered SCHED_FIFO for its listeners (`ProxyOptions.realtimePriority`).
    var enteredRealtime = false

    init(loop: EventLoop, logger: Logger, listenerResources: LoopListenerResources) {
        self.loop = loop
        self.logger = logger
        self.listenerResources = listenerResources
    }

    func adopt(_ handed: HandedOverConnection, ended: @escaping @Sendable (SpliceEnd) -> Void) {
        let connection = SplicedConnection(handed, on: self, ended: ended)
        connections[handed.ticket] = connection
        connection.start()
    }

    func recallAll() -> [HandedOverConnection] {
        connections.keys.sorted().compactMap { recall($0) }
    }

    func recall(_ ticket: UInt64) -> HandedOverConnection? {
        connections.removeValue(forKey: ticket)?.handBack()
    }

    func forget(_ ticket: UInt64) {
        connections.removeValue(forKey: ticket)
    }

    func close() {
        assert(connections.isEmpty, "a splice loop stops only once its connections were recalled")
        pipes.release()
        listenerResources.close()
    }
}

/// A handed-over connection on a splice loop: both directions move by splice(2), a FIN is forwarded as a
/// half-close once the bytes before it are written, and a failed socket resets both sides through the main loop.
///
/// Lives on the splice loop's thread. Its sockets are registered edge-triggered, like the relay's.
final class SplicedConnection {
    private unowned let owner: SpliceLoopState
    private let ticket: UInt64
    private let client: Socket
    private let upstream: Socket
    private let uplink: SplicedDirection
    private let downlink: SplicedDirection
    private let bytes: SplicedBytes
    private let ended: @Sendable (SpliceEnd) -> Void
    private var clientRegistration: EventLoop.RegistrationID?
    private var upstreamRegistration: EventLoop.RegistrationID?
    private var resumeScheduled = false
    private var isDone = false
    /// Ended with `.needsMainLoop`: said again in what `handBack` returns, which may reach the main loop first.
    private var needsMainLoop = false

    private static let edgeInterest = Epoll.readable | Epoll.writable | Epoll.readHangUp | Epoll.edgeTriggered

    init(_ handed: HandedOverConnection, on owner: SpliceLoopState, ended: @escaping @Sendable (SpliceEnd) -> Void) {
        self.owner = owner
        ticket = handed.ticket
        client = handed.client
        upstream = handed.upstream
        uplink = SplicedDirection(
            source: handed.client, destination: handed.upstream, state: handed.uplink, pipes: owner.pipes)
        downlink = SplicedDirection(
            source: handed.upstream, destination: handed.client, state: handed.downlink, pipes: owner.pipes)
        bytes = handed.bytes
        self.ended = ended
    }

    /// Watches both sockets and moves what they already have.
    func start() {
        do {
            clientRegistration = try owner.loop.register(client.descriptor, interest: Self.edgeInterest) {
                [weak self] events in
                self?.clientEvent(events)
            }
            upstreamRegistration = try owner.loop.register(upstream.descriptor, interest: Self.edgeInterest) {
                [weak self] events in
                self?.upstreamEvent(events)
            }
        } catch {
            owner.logger.warning("splice loop: cannot watch a handed-over connection: \(error); handing it back")
            end(.needsMainLoop)
            return
        }
        move()
    }

    private func clientEvent(_ events: UInt32) {
        if events & (Epoll.readable | Epoll.readHangUp | Epoll.hangUp | Epoll.error) != 0 {
            uplink.sourceReadable = true
        }
        if events & (Epoll.writable | Epoll.hangUp | Epoll.error) != 0 { downlink.destinationWritable = true }
        move()
    }

    private func upstreamEvent(_ events: UInt32) {
        if events & (Epoll.readable | Epoll.readHangUp | Epoll.hangUp | Epoll.error) != 0 {
            downlink.sourceReadable = true
        }
        if events & (Epoll.writable | Epoll.hangUp | Epoll.error) != 0 { uplink.destinationWritable = true }
        move()
    }

    /// Moves both directions as far as their sockets allow, a bounded number of splices per turn.
    private func move() {
        guard !isDone else { return }
        let up = uplink.move { self.bytes.add(uplink: $0) }
        let down = downlink.move { self.bytes.add(downlink: $0) }
        for progress in [up, down] {
            switch progress {
            case .failed(let error):
                owner.logger.debug("splice loop: connection \(ticket): \(error); resetting both sides")
                end(.reset)
                return
            case .noPipe:
                end(.needsMainLoop)
                return
            case .idle, .busy:
                break
            }
        }
        if uplink.finished && downlink.finished {
            end(.closed)
            return
        }
        if case .busy = up { scheduleResume() } else if case .busy = down { scheduleResume() }
    }

    /// Continues on a later turn, so one busy connection cannot monopolise the loop.
    private func scheduleResume() {
        guard !resumeScheduled else { return }
        resumeScheduled = true
        owner.loop.schedule(at: owner.loop.clock.now()) { [weak self] in
            self?.resumeScheduled = false
            self?.move()
        }
    }

    /// Stops watching both sockets; they stay open for the main loop.
    private func letGo() {
        isDone = true
        if let clientRegistration { owner.loop.deregister(clientRegistration) }
        if let upstreamRegistration { owner.loop.deregister(upstreamRegistration) }
        clientRegistration = nil
        upstreamRegistration = nil
    }

    /// Lets go of the connection here and tells the main loop how it ended; the main loop closes the sockets.
    private func end(_ how: SpliceEnd) {
        letGo()
        if how == .needsMainLoop {
            // Kept until the main loop recalls it, which takes the pipes back with it.
            needsMainLoop = true
            ended(how)
            return
        }
        owner.forget(ticket)
        uplink.releasePipe()
        downlink.releasePipe()
        ended(how)
    }

    /// Stops carrying the connection and returns it with its pipes and stream positions to the main loop.
    func handBack() -> HandedOverConnection {
        letGo()
        return HandedOverConnection(
            ticket: ticket, client: client, upstream: upstream,
            uplink: uplink.handBack(), downlink: downlink.handBack(),
            bytes: bytes, needsMainLoop: needsMainLoop)
    }
}

/// One direction of a connection on a splice loop: from its source socket through a pipe to its destination.
///
/// Lives on the splice loop's thread. Its `StreamSplice` takes a pipe from the loop's pool when the source has bytes
/// and gives it back once it is empty and the source has no more, as on the main loop.
final class SplicedDirection {
    enum Progress {
        /// Nothing more to do until a socket is ready.
        case idle
        /// More may be moved on a later turn.
        case busy
        case failed(SystemError)
        /// No pipe could be had: the main loop must carry the direction by copying.
        case noPipe
    }

    let source: Socket
    let destination: Socket
    private let splice: StreamSplice
    private(set) var sourceEnded: Bool
    private(set) var finished: Bool
    /// Edge-triggered epoll: whether the source may still have bytes; the main loop's last word was unknown, so yes.
    var sourceReadable = true
    /// Edge-triggered epoll: whether the destination may take more.
    var destinationWritable = true

    /// Splices one `move` makes before leaving the rest to a later turn.
    private static let splicesPerTurn = 32

    init(source: Socket, destination: Socket, state: SpliceDirectionState, pipes: SplicePipePool) {
        self.source = source
        self.destination = destination
        splice = StreamSplice(pool: pipes)
        if let pipe = state.pipe { splice.adopt(pipe, holding: state.pipedBytes) }
        sourceEnded = state.sourceEnded
        finished = state.finished
    }

    /// Moves bytes from the source through the pipe to the destination until either would block, and forwards the
    /// source's end of stream once the pipe is empty. `delivered` counts the bytes written.
    func move(delivered: (Int) -> Void) -> Progress {
        do {
            for _ in 0..<Self.splicesPerTurn {
                if finished { return .idle }
                if splice.pipedBytes > 0 {
                    guard destinationWritable else { return .idle }
                    let waiting = splice.pipedBytes
                    switch try splice.drain(to: destination) {
                    case .wouldBlock:
                        destinationWritable = false
                        return .idle
                    case .processed(let written):
                        if written < waiting { destinationWritable = false }
                        delivered(written)
                    }
                    continue
                }
                if sourceEnded {
                    splice.giveBack()
                    do {
                        try destination.shutdownWrite()
                    } catch  where error.errno == .notConnected {
                        // The peer is already gone; the other direction will notice.
                    }
                    finished = true
                    return .idle
                }
                guard sourceReadable else {
                    splice.giveBack()
                    return .idle
                }
                guard splice.prepare() else { return .noPipe }
                switch try splice.fill(from: source) {
                case .wouldBlock:
                    // An empty pipe that takes nothing means the source is empty; a part-full one may lack a slot.
                    if splice.pipedBytes == 0 {
                        sourceReadable = false
                        splice.giveBack()
                        return .idle
                    }
                    if !destinationWritable { return .idle }
                case .processed(0):
                    sourceEnded = true
                case .processed:
                    break
                }
            }
        } catch {
            return .failed(error)
        }
        return .busy
    }

    /// Gives an empty pipe back to the pool, and closes one that still holds bytes (the connection is ending).
    func releasePipe() {
        splice.close()
    }

    /// The direction's state for the main loop: a pipe only when it holds bytes (an empty one stays in the pool).
    func handBack() -> SpliceDirectionState {
        let (pipe, pipedBytes) = splice.handOver()
        return SpliceDirectionState(pipe: pipe, pipedBytes: pipedBytes, sourceEnded: sourceEnded, finished: finished)
    }
}
