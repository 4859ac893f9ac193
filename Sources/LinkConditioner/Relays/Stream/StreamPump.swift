import DequeModule

/// One direction of a relayed TCP connection: reads from a source socket, holds the bytes while the link model
/// delays and paces them, and writes them to the destination in order.
///
/// Lives on the event loop thread. Memory is bounded by `capacity`: reading stops while that many bytes are held,
/// while the link's queue is full, and while the proxy's buffer budget is spent, so a fast sender is pushed back by
/// TCP flow control.
///
/// Its state is a few enums (`StreamPumpStates.swift`). What it does is returned to the relay as an `Outcome`.
/// Work that falls due outside a relay's call (the link's service pass, the budget, the pump's timers, a profile
/// change) is handed to the relay as a `Due` through `due`, the one way into the relay, and the relay asks the
/// pump for it; the pump holds the relay strongly until `close` lets it go, so the relay cannot be freed under
/// such a call.
final class StreamPump {
    enum Outcome {
        /// Keep going.
        case open
        /// The destination has been sent end-of-stream after the last byte.
        case finished
        /// A socket failed; the connection must be reset.
        case failed(SystemError)
        /// A stage cut the stream and every byte before the cut was written: the connection ends as it says.
        case cut(StreamEnd)
        /// The model released this direction's first bytes at `at`, not written yet: the relay lets the other
        /// direction's handshake complete, then asks for the delivery again (`deliverDue`).
        case firstBytesReleased(at: Instant)
        /// Every byte is written and the FIN's wait has passed: the relay says whether the destination is
        /// half-closed or the connection closes (`sendEndOfStream`).
        case endOfStreamDue

        var isOpen: Bool {
            switch self {
            case .open, .firstBytesReleased, .endOfStreamDue: true
            case .finished, .failed, .cut: false
            }
        }
    }

    /// What fell due for a pump outside its relay's calls; the relay asks the pump for it (`TCPRelay.pumpDue`).
    enum Due {
        /// The flow's receiver released bytes or changed its blocking, or a batch or FIN's wait ended: deliver.
        case delivery
        /// Room it stopped reading for (the link's queue, the proxy's budget) has opened: resume reading.
        case room
        /// A busy source's next turn on the loop came: read on.
        case turn
        /// The flow's side of the handshake opened sooner than planned: a FIN waiting for it may go now.
        case flowOpened
        /// What its bytes need changed (a shaping profile, a stage): leave the splice path.
        case leaveSplice
    }

    /// The relay the pump hands what fell due to; nil once closed.
    private(set) var relay: TCPRelay?
    let link: ShapedLink
    /// The emulated handshake's fate, which the flow's side opens after; nil when the link does not emulate it.
    let handshake: HandshakeAttempts?
    /// The direction's flow in the link's model; nil while the link shapes nothing and no byte of this direction
    /// needed the model (`modelledFlow`): such a connection neither builds nor updates a TCP sender it would never
    /// use. The link gives every pump one when a shaping profile takes over.
    private(set) var flow: StreamFlow?
    /// This pump's place in its link's list of pumps without a flow (`ShapedLink.unmodelled`); kept by the link.
    var unmodelledIndex = -1
    let source: Socket
    let destination: Socket
    let capacity: Int

    var chunks = Deque<[UInt8]>()
    var headOffset = 0
    var heldBytes = 0
    /// Released bytes handed over for writing (written as the destination takes them).
    var deliverableBytes = 0
    var firstRelease = FirstRelease.awaited
    /// Whether a read runs now, and how arrivals are stamped.
    private var turn: ReadTurn
    /// While the bytes just read are handed on through an idle stage (one that holds nothing and passes them at
    /// once): when they reached the source socket. Bytes a stage held go to the link when it lets them go.
    private var readArrival: Instant?
    /// Released bytes held back briefly so that a busy direction writes them together.
    var batch = WriteBatch.standard
    /// Bytes written to the destination, by either path.
    var bytesDelivered = 0
    var sourceState = Source.drained
    /// What a short read says about the source (see `ShortRead`); `readAgain` before any event came to this pump,
    /// unless the relay replays those taken before it existed (`startReading(after:)`).
    var shortRead = ShortRead.readAgain
    var destinationState = Destination.connecting
    /// The loop's number (`ReadBuffer.numberAdmission`) of the last bytes this pump handed to the link with no
    /// stage to see them, 0 before any: which direction spoke last, for stages made later.
    private(set) var lastAdmission: UInt64 = 0
    var noDelay = NoDelay.untouched
    /// Rewrites bytes as they are read, before the link sees them; nil passes them through unchanged.
    var filter: StreamFilter?
    /// Decides when read bytes enter the link (Toxiproxy's toxics); nil hands them to the link at once.
    var stage: StreamStage? { didSet { stage?.attach(to: self) } }
    /// The splice path, made when the direction first has nothing to shape; nil while it never had.
    var splice: StreamSplice?
    /// Where this direction's reads, deliveries and stalls are reported; nil when nobody observes the connection.
    let observer: ConnectionObserver?
    /// The direction this pump carries, as its observer names it.
    let direction: RecordedDirection
    /// Made when a delivery first waits, so a connection that never waits allocates none (nor makes one to cancel).
    var deliveryAlarm: DeadlineAlarm?
    /// Fires when the batch's oldest byte has been held as long as it may be; exact, since the hold already spent
    /// the lateness budget the loop's timer spacing would otherwise take. Made at the first hold.
    var batchAlarm: DeadlineAlarm?
    /// The loop turn a busy source continues on (`scheduleResume`); nil when none is scheduled.
    var resumeTimer: EventLoop.TimerID?

    static let readsPerTurn = 16
    /// The bytes the last read that returned took, which decides where the next lands (`readChunk`).
    private var lastReadSize = 0

    /// Where the splice path takes its pipe and gives it back.
    let pipes: SplicePipePool

    /// The loop's shared read buffer, whose tally counts the calls this pump makes.
    let readBuffer: ReadBuffer

    /// A pump for `relay`'s `direction`; `emulatingHandshake` makes its flow open after its side of `handshake`.
    init(
        relay: TCPRelay, direction: RecordedDirection, link: ShapedLink, source: Socket, destination: Socket,
        capacity: Int, readBuffer: ReadBuffer, emulatingHandshake: Bool, handshake: HandshakeAttempts?,
        observer: ConnectionObserver?
    ) {
        self.readBuffer = readBuffer
        self.pipes = readBuffer.pipes
        self.relay = relay
        self.direction = direction
        self.link = link
        self.handshake = handshake
        self.source = source
        self.destination = destination
        self.capacity = capacity
        self.observer = observer
        self.turn = .idle(.unstamped(since: link.loop.clock.now()))
        if link.isPassThrough {
            link.attach(self)
        } else {
            flow = link.makeFlow(for: self, emulatingHandshake: emulatingHandshake, handshake: handshake)
        }
    }

    /// Hands `due` to the relay unless the pump has closed: the link, the budget and the pump's timers call this
    /// after their own work, never the relay's handlers directly.
    func due(_ due: Due, at now: Instant) {
        guard !isClosed, let relay else { return }
        relay.pumpDue(self, due, at: now)
    }

    /// True once `close` has run: the sockets belong to nobody and nothing more is read or written.
    var isClosed: Bool {
        if case .closed = destinationState { return true }
        return false
    }

    /// Whether the destination has been sent end-of-stream after the last byte.
    var isFinished: Bool {
        if case .finished = destinationState { return true }
        return false
    }

    /// Whether the source's stream has ended (read, decided, or cut): nothing more is read.
    var sourceEnded: Bool {
        if case .ended = sourceState { return true }
        return false
    }

    /// Whether the source may still hold bytes the pump is to read.
    var sourceReadable: Bool {
        if case .readable = sourceState { return true }
        return false
    }

    /// Whether the source's end of stream was read from its socket (not decided by a filter or a front end): the
    /// socket then holds nothing unread, and closing it sends a FIN rather than a reset.
    var sourceReadToEnd: Bool {
        if case .ended(let end) = sourceState, case .readFromSocket = end.cause { return true }
        return false
    }

    /// True while `readAvailable` runs, so calls it makes do not start a nested read.
    var isReading: Bool {
        if case .running = turn { return true }
        return false
    }

    /// Whether the connection still forwards this direction (it is not blackholed, failing or hung).
    var forwarding: Bool {
        if case .stopped = sourceState { return false }
        return true
    }

    /// The flow in the link's model, made now if the direction had none because its link shaped nothing when the
    /// connection was made: its handshake completed then, so the flow opens at once.
    func modelledFlow() -> StreamFlow {
        if let flow { return flow }
        let flow = link.makeFlow(for: self, emulatingHandshake: false, handshake: handshake)
        self.flow = flow
        return flow
    }

    /// The source's socket reported readiness (`events`, from epoll).
    func sourceEvent(_ events: UInt32) {
        sourceState.becameReadable()
        shortRead = shortRead.after(events)
    }

    /// Events after which the source's end of stream may wait behind its bytes.
    static let hangUpEvents = Epoll.readHangUp | Epoll.hangUp | Epoll.error
    /// Events that call for reading the source: bytes, urgent data, its end or its failure.
    static let readEvents = Epoll.readable | Epoll.priority | hangUpEvents

    /// Starts the direction from what its source reported before the pump could act on it (`events`, every event
    /// taken since the socket was registered, or'ed): a source that reported nothing to read (no event at all
    /// included) is not read until a new edge says it has something. The registration, an epoll ADD or MOD, reports
    /// whatever the socket held then, so an event not taken yet is still to come.
    func startReading(after events: UInt32) {
        if events & Self.readEvents != 0 {
            sourceEvent(events)
        } else {
            sourceState.drain()
        }
    }

    /// The destination connected: bytes may be written to it from now.
    func destinationConnected() {
        if case .connecting = destinationState { destinationState = .writable }
    }

    /// The destination reported it may take more bytes.
    func destinationMayTakeMore() {
        destinationState.becameWritable()
    }

    /// Stops reading the source for good: the connection is blackholed, failing or hung.
    func stopForwarding() {
        if case .ended = sourceState { return }
        sourceState = .stopped
    }

    /// Notes that a read reached the source's end of stream: it returned 0, or stopped short after the peer's FIN.
    func sourceReachedEnd(at now: Instant) {
        endOfStream(at: now, cause: .readFromSocket)
    }

    /// Reads what the source has, within the buffer and link limits, and hands it to the link.
    func readAvailable(at now: Instant, into scratch: ReadBuffer) -> Outcome {
        guard case .idle(let arrivals) = turn, !isClosed else { return .open }
        turn = .running(arrivals)
        switch spliceDecision(at: now) {
        case .splice:
            defer { turn = .idle(arrivals) }
            return spliceAvailable(at: now, scratch: scratch)
        case .drainFirst:
            turn = .idle(arrivals)
            return .open
        case .copy:
            break
        }
        let takingSince = arrivals.since(startingAt: now)
        if !arrivals.stamps { try? source.stampArrivals() }
        defer { turn = .idle(sourceReadable && !isClosed ? .stalled : .taking(since: takingSince)) }
        return copyAvailable(at: now, into: scratch, takingSince: takingSince)
    }

    /// The copying path of `readAvailable`: reads into the loop's buffer, filters, stages and queues on the link.
    private func copyAvailable(at now: Instant, into scratch: ReadBuffer, takingSince: Instant) -> Outcome {
        var reads = 0
        /// Whether the last read in this turn filled what it asked for, so the source likely holds more.
        var lastFilled = true
        while sourceReadable {
            var room = capacity - heldBytes
            guard room >= (reads == 0 ? minimumRead : 1) else { return .open }
            if let budget = link.budget {
                room = min(room, budget.available)
                guard room > 0 else {
                    observer?.stall(direction, .queue, at: now)
                    budget.waitForRoom(self)
                    return .open
                }
            }
            let flow = modelledFlow()
            guard link.canAccept(flow) else {
                observer?.stall(direction, .queue, at: now)
                link.waitForQueueSpace(self, flow: flow)
                return .open
            }
            if reads == Self.readsPerTurn {
                scheduleResume()
                return .open
            }
            reads += 1
            let result: IOResult<Int>
            let arrival: Instant?
            let read: [UInt8]
            let size: Int
            do {
                (result, arrival, read, size) = try readChunk(
                    of: min(room, scratch.bytes.count), into: scratch, likelyFull: lastFilled)
            } catch {
                return .failed(error)
            }
            switch result {
            case .wouldBlock:
                sourceState.drain()
                scratch.calls.emptyReads += 1
            case .processed(0):
                scratch.calls.endReads += 1
                sourceReachedEnd(at: now)
                return finishIfDrained()
            case .processed(let count):
                lastFilled = count == size
                if count < min(size, Self.burstCopyLimit) && shortRead == .emptiesSource { sourceState.drain() }
                let reachedEnd = count < size && shortRead == .endsSource
                observer?.read(direction, count, at: now)
                var bytes = read
                var ended: EndCause?
                if let filter {
                    let filtered = filter.filter(bytes)
                    bytes = filtered.bytes
                    if filtered.ended { ended = .decided }
                }
                if let stage {
                    let (kept, cut) = stage.limit(bytes.count, at: now)
                    if kept < bytes.count { bytes.removeLast(bytes.count - kept) }
                    if let cut { ended = .cut(cut) }
                }
                if !bytes.isEmpty {
                    chunks.append(bytes)
                    hold(bytes.count)
                    if stage?.isIdle ?? true { readArrival = min(max(arrival ?? now, takingSince), now) }
                    if let stage {
                        stage.admit(bytes.count, from: self, at: now)
                    } else {
                        lastAdmission = scratch.numberAdmission()
                        forward(bytes.count, at: now)
                    }
                    readArrival = nil
                    if isClosed { return .open }
                }
                if let ended {
                    endOfStream(at: now, cause: ended)
                    return finishIfDrained()
                }
                if reachedEnd {
                    sourceReachedEnd(at: now)
                    return finishIfDrained()
                }
            }
        }
        return .open
    }

    /// One read of at most `size` bytes and the chunk that holds them. After a read of at least
    /// `directReadSize`, the next lands straight in a chunk of its own, half as large again as that read (a
    /// sender's writes tend to come alike, and a fuller socket grows the next), kept when the read filled at least
    /// two thirds of it, so a chunk's storage stays within half as much again as its bytes. Otherwise, and for
    /// small reads, the bytes land in the loop's scratch buffer and are copied into a chunk of their size. At
    /// 1 Gbit/s the copy was about a twentieth of the relay's CPU. A read after one that came back short is likely
    /// to find nothing (`likelyFull` false), so it takes the scratch buffer rather than allocate for nothing.
    private func readChunk(of size: Int, into scratch: ReadBuffer, likelyFull: Bool) throws(SystemError) -> (
        IOResult<Int>, arrival: Instant?, bytes: [UInt8], asked: Int
    ) {
        if likelyFull && lastReadSize >= Self.directReadSize {
            let capacity = min(size, (lastReadSize * 3 / 2 + 4095) & ~4095)
            var outcome: Result<(IOResult<Int>, arrival: Instant?), SystemError> = .success((.wouldBlock, nil))
            let chunk = [UInt8](unsafeUninitializedCapacity: capacity) { buffer, initialized in
                outcome = Result { () throws(SystemError) in
                    try source.readStamped(into: UnsafeMutableRawBufferPointer(buffer))
                }
                if case .success((.processed(let count), _)) = outcome { initialized = count } else { initialized = 0 }
            }
            let (result, arrival) = try outcome.get()
            if case .processed(let count) = result { lastReadSize = count }
            let kept = 3 * chunk.count >= 2 * capacity ? chunk : chunk.withUnsafeBytes { Array($0) }
            return (result, arrival, kept, capacity)
        }
        let target = UnsafeMutableRawBufferPointer(rebasing: scratch.bytes[0..<size])
        let (result, arrival) = try source.readStamped(into: target)
        guard case .processed(let count) = result else { return (result, arrival, [], size) }
        lastReadSize = count
        return (result, arrival, Array(UnsafeRawBufferPointer(rebasing: target[0..<count])), size)
    }

    /// Reads after one at least this large go straight into a chunk (see `readChunk`).
    static let directReadSize = 16 * 1024

    /// Hands `count` bytes a stage held back to the link, in the order they were read. Called by the stage.
    func forward(_ count: Int, at now: Instant) {
        guard !isClosed, count > 0 else { return }
        link.enqueue(count, on: modelledFlow(), written: readArrival ?? now, at: now)
    }

    /// Counts `count` more bytes held, here and in the proxy's budget.
    func hold(_ count: Int) {
        heldBytes += count
        link.budget?.take(count)
    }

    /// Records whether the stage now holds bytes back for a fault or toxic. Called by the stage.
    func stageHolds(_ holding: Bool, at now: Instant) {
        observer?.held(direction, .fault, holding, at: now)
    }

    /// Whether this pump holds room to read more from its source: at least `minimumRead` bytes.
    var hasRoom: Bool { capacity - heldBytes >= minimumRead }

    /// The least room a read waits for once the pump is full (see `minimumRead(capacity:readSize:)`).
    private var minimumRead: Int { Self.minimumRead(capacity: capacity, readSize: readBuffer.bytes.count) }

    /// The least room a pump of `capacity` bytes waits for once full, when one read takes at most `readSize`
    /// bytes: room for one whole read. A delivery frees a segment or two at a time, and reading each as it opened
    /// cost a read and a small write per segment (310 000 reads per GB at 1 Gbit/s with 10 ms of delay); waiting
    /// for 64 KiB still made 13 000 reads of 64–75 KB per GB there, against 3 800 of 256 KiB when the link's send
    /// buffer gates the reads instead. 256 KiB is 2 ms at 1 Gbit/s, far less than what a full pump of 4 MiB still
    /// holds. A small buffer waits for a quarter of itself instead, so it refills while still three-quarters full
    /// rather than in bursts once empty; and at least one byte, so a zero-byte read is never mistaken for the end.
    static func minimumRead(capacity: Int, readSize: Int) -> Int { max(1, min(readSize, capacity / 4)) }

    func close() {
        guard !isClosed else { return }
        destinationState = .closed
        stage?.close()
        splice?.close()
        deliveryAlarm?.cancel()
        batchAlarm?.cancel()
        link.detach(self)
        link.budget?.release(heldBytes)
        link.budget?.forget(self)
        chunks.removeAll()
        heldBytes = 0
        relay = nil
    }
}
