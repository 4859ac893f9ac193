import DequeModule

/// One direction of a relayed TCP connection: reads from a source socket, holds the bytes while the link model
/// delays and paces them, and writes them to the destination in order.
///
/// Lives on the event loop thread. Memory is bounded by `capacity`: reading stops while that many bytes are held,
/// while the link's queue is full, and while the proxy's buffer budget is spent, so a fast sender is pushed back by
/// TCP flow control.
///
/// The relay may close while the pump is calling it (a write fails, the other direction resets). The relay owns the
/// pump and closes it before letting go, so the pump holds it unowned (a weak reference would give the relay a side
/// table and slow every retain of it); once `close` has run, the pump ignores the link's and its timers' calls.
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

        var isOpen: Bool {
            if case .open = self { return true }
            return false
        }
    }

    unowned let relay: TCPRelay
    let link: ShapedLink
    private(set) var flow: StreamFlow!
    let source: Socket
    let destination: Socket
    let capacity: Int

    private var chunks = Deque<[UInt8]>()
    private var headOffset = 0
    private(set) var heldBytes = 0
    /// Released bytes handed over for writing (written as the destination takes them).
    private var deliverableBytes = 0
    /// Whether the model has released any of this direction's bytes yet.
    private var hasReleased = false
    /// Whether the source socket stamps arrivals (turned on at the first copied read), and since when the pump has
    /// taken bytes as they came: bytes left in the socket while it could not are written to the model when read,
    /// not when they arrived.
    private var stampsArrivals = false
    private var takingSince: Instant
    private var stalled = false
    /// While the bytes just read are handed on through an idle stage (one that holds nothing and passes them at
    /// once): when they reached the source socket. Bytes a stage held go to the link when it lets them go.
    private var readArrival: Instant?
    /// Released bytes held back briefly so that a busy direction writes them together.
    private var batch = WriteBatch.standard
    /// Bytes written to the destination, by either path.
    var bytesDelivered = 0
    private(set) var sourceEnded = false
    private(set) var isFinished = false
    /// Edge-triggered epoll: whether the source may still have data we have not read.
    var sourceReadable = false
    /// Whether a read that returns less than it asked for has emptied the source, so no read is spent to hear
    /// would-block: true once an event for the source came without a hang-up (the kernel reports one in every
    /// event after the peer's FIN, and bytes arriving later make a new edge); false for good after one came with
    /// it, since the end of stream may wait behind the bytes; false before any came to this pump, unless the
    /// relay replays those taken before it existed (`startReading(after:)`).
    private(set) var shortReadEmptiesSource = false
    /// Whether a read that returns less than it asked for has reached the source's end of stream, so no read is
    /// spent to hear it: true while the last event for the source reported the peer's FIN without an error or
    /// urgent data. The kernel reports the FIN only once every byte before it is queued, and a TCP read stops
    /// short only at the FIN or an empty queue, so the next read would return 0.
    private(set) var shortReadEndsSource = false
    private var sourceHungUp = false
    /// Whether the source's end of stream was read from its socket (not decided by a filter or a front end): the
    /// socket then holds nothing unread, and closing it sends a FIN rather than a reset.
    private(set) var sourceReadToEnd = false
    /// Edge-triggered epoll: whether the destination may take more data. The relay is told when it stops, so that
    /// a destination watched only for reading is watched for writing from then on.
    var destinationWritable = false {
        didSet { if oldValue && !destinationWritable { relay.destinationBlocked(self) } }
    }
    /// False until the destination socket is connected (the upstream leg connects asynchronously).
    var destinationReady = false
    /// False while the connection is blackholed: nothing is read.
    var forwarding = true
    /// The loop's number (`ReadBuffer.numberAdmission`) of the last bytes this pump handed to the link with no
    /// stage to see them, 0 before any: which direction spoke last, for stages made later.
    private(set) var lastAdmission: UInt64 = 0
    /// Rewrites bytes as they are read, before the link sees them; nil passes them through unchanged.
    var filter: StreamFilter?
    /// Decides when read bytes enter the link (Toxiproxy's toxics); nil hands them to the link at once.
    var stage: StreamStage? { didSet { stage?.attach(to: self) } }
    /// The splice path, made when the direction first has nothing to shape; nil while it never had.
    var splice: StreamSplice?
    /// Where this direction's reads, deliveries and stalls are reported under `run --record`; nil when not recording.
    var recording: PumpRecording?
    /// Made when a delivery first waits, so a connection that never waits allocates none (nor makes one to cancel).
    private var deliveryAlarm: DeadlineAlarm?
    /// Fires when the batch's oldest byte has been held as long as it may be; exact, since the hold already spent
    /// the lateness budget the loop's timer spacing would otherwise take. Made at the first hold.
    private var batchAlarm: DeadlineAlarm?
    private var resumeScheduled = false
    /// When the source's end of stream may reach the destination.
    /// When the source ended, and what its FIN waits beyond the side's opening: the link's delay and the stage's.
    private var endOfStream: (at: Instant, wait: Duration)?
    /// When the FIN may reach the destination: once the flow's side of the handshake opened (which the peer's
    /// first bytes may bring forward) and the waits have passed.
    var endOfStreamDue: Instant? { endOfStream.map { max($0.at, flow.opensAt) + $0.wait } }
    /// How a stage's cut ends the connection once the bytes before it are written; nil for an ordinary end.
    private var cut: StreamEnd?
    /// True while `readAvailable` runs, so callbacks it triggers do not start a nested read.
    private(set) var isReading = false
    /// True once `close` has run: the sockets belong to nobody and nothing more is read or written.
    private(set) var isClosed = false

    static let readsPerTurn = 16

    /// Where the splice path takes its pipe and gives it back.
    let pipes: SplicePipePool

    /// The loop's shared read buffer, whose tally counts the calls this pump makes.
    let readBuffer: ReadBuffer

    init(relay: TCPRelay, link: ShapedLink, source: Socket, destination: Socket, capacity: Int, readBuffer: ReadBuffer) {
        self.readBuffer = readBuffer
        self.pipes = readBuffer.pipes
        self.relay = relay
        self.link = link
        self.source = source
        self.destination = destination
        self.capacity = capacity
        self.takingSince = link.loop.clock.now()
        self.flow = link.attach(self, emulatingHandshake: relay.emulatesHandshake, handshake: relay.handshakeAttempts)
    }

    /// The source's socket reported readiness (`events`, from epoll). A hang-up or an error means the end of
    /// stream may wait behind the bytes; urgent data makes a read stop short at its mark with bytes behind it, and
    /// no new edge comes for them.
    func sourceEvent(_ events: UInt32) {
        sourceReadable = true
        let urgent = events & Epoll.priority != 0
        if events & Self.hangUpEvents != 0 { sourceHungUp = true }
        shortReadEmptiesSource = !sourceHungUp && !urgent
        shortReadEndsSource = events & Epoll.readHangUp != 0 && events & Epoll.error == 0 && !urgent
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
            sourceReadable = false
        }
    }

    /// Notes that a read reached the source's end of stream: it returned 0, or stopped short after the peer's FIN.
    func sourceReachedEnd(at now: Instant) {
        sourceReadToEnd = true
        endOfStream(at: now)
    }

    /// Reads what the source has, within the buffer and link limits, and hands it to the link.
    func readAvailable(at now: Instant, into scratch: ReadBuffer) -> Outcome {
        guard !isReading, !isClosed else { return .open }
        isReading = true
        defer { isReading = false }
        switch spliceDecision(at: now) {
        case .splice: return spliceAvailable(at: now, scratch: scratch)
        case .drainFirst: return .open
        case .copy: break
        }
        if stalled {
            stalled = false
            takingSince = now
        }
        if !stampsArrivals {
            stampsArrivals = true
            try? source.stampArrivals()
        }
        var reads = 0
        defer { if sourceReadable && !sourceEnded && !isClosed { stalled = true } }
        while sourceReadable && !sourceEnded && forwarding {
            var room = capacity - heldBytes
            guard room >= (reads == 0 ? minimumRead : 1) else { return .open }
            if let budget = link.budget {
                room = min(room, budget.available)
                guard room > 0 else {
                    recording?.stall(.queue, at: now)
                    budget.waitForRoom(self)
                    return .open
                }
            }
            guard link.canAccept(flow) else {
                recording?.stall(.queue, at: now)
                link.waitForQueueSpace(self, flow: flow)
                return .open
            }
            if reads == Self.readsPerTurn {
                scheduleResume()
                return .open
            }
            reads += 1
            let target = UnsafeMutableRawBufferPointer(rebasing: scratch.bytes[0..<min(room, scratch.bytes.count)])
            let result: IOResult<Int>
            let arrival: Instant?
            do {
                (result, arrival) = try source.readStamped(into: target)
            } catch {
                return .failed(error)
            }
            switch result {
            case .wouldBlock:
                sourceReadable = false
                scratch.calls.emptyReads += 1
            case .processed(0):
                scratch.calls.endReads += 1
                sourceReachedEnd(at: now)
                return finishIfDrained()
            case .processed(let count):
                if count < min(target.count, Self.burstCopyLimit) && shortReadEmptiesSource { sourceReadable = false }
                let reachedEnd = count < target.count && shortReadEndsSource
                recording?.read(count, at: now)
                var bytes = Array(UnsafeRawBufferPointer(rebasing: target[0..<count]))
                var ended = false
                if let filter { (bytes, ended) = filter.filter(bytes) }
                if let stage {
                    let (kept, cut) = stage.limit(bytes.count, at: now)
                    if kept < bytes.count { bytes.removeLast(bytes.count - kept) }
                    if let cut {
                        self.cut = cut
                        ended = true
                    }
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
                if ended {
                    endOfStream(at: now)
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

    /// Queues bytes that did not come from the source (a front end's protocol reply) ahead of anything read later;
    /// with `endOfStream`, the destination is half-closed after them and nothing more is read.
    func inject(_ bytes: [UInt8], endOfStream: Bool, at now: Instant) {
        guard !isClosed else { return }
        leaveSplice(at: now)
        if endOfStream { self.endOfStream(at: now) }
        guard !bytes.isEmpty else {
            relay.pumpProgressed(self, outcome: finishIfDrained())
            return
        }
        chunks.append(bytes)
        hold(bytes.count)
        link.enqueue(bytes.count, on: flow, at: now)
    }

    /// Hands `count` bytes a stage held back to the link, in the order they were read. Called by the stage.
    func forward(_ count: Int, at now: Instant) {
        guard !isClosed, count > 0 else { return }
        link.enqueue(count, on: flow, written: readArrival ?? now, at: now)
    }

    /// Counts `count` more bytes held, here and in the proxy's budget.
    private func hold(_ count: Int) {
        heldBytes += count
        link.budget?.take(count)
    }

    /// Called by the link when this flow's delivery schedule changed: deliver what is due, wait for the rest.
    func deliveryScheduleChanged(at now: Instant) {
        guard !isClosed else { return }
        relay.pumpProgressed(self, outcome: deliverDue(at: now))
    }

    /// Records whether the stage now holds bytes back for a fault or toxic. Called by the stage.
    func stageHolds(_ holding: Bool, at now: Instant) {
        recording?.held(.fault, holding, at: now)
    }

    /// Called by the proxy's buffer budget when room this pump waited for has opened.
    func budgetOpened(at now: Instant) {
        guard !isClosed else { return }
        recording?.resume(at: now)
        relay.pumpMayRead(self, at: now)
    }

    /// Called by the link when queue space this pump waited for has opened.
    func queueSpaceOpened(at now: Instant) {
        guard !isClosed else { return }
        recording?.resume(at: now)
        relay.pumpMayRead(self, at: now)
    }

    /// Collects the bytes the model has released by `now` and writes them, or holds them briefly while more are
    /// on their way (`WriteBatch`); the link reports the next release.
    func deliverDue(at now: Instant) -> Outcome {
        for change in flow.takeLossBlockChanges() { recording?.held(.loss, change.blocked, at: change.at) }
        let release = flow.takeRelease(at: now)
        if release.bytes > 0 && !hasReleased {
            hasReleased = true
            relay.firstBytesReleased(by: self, at: now)
            if isClosed { return .open }
        }
        if let oldest = release.oldest { batch.add(release.bytes, releasedAt: oldest) }
        switch batch.decision(at: now, nextRelease: link.nextRelease(of: flow)) {
        case .none:
            break
        case .write:
            batchAlarm?.cancel()
            if let oldest = batch.oldestRelease { link.lateness.record(now - oldest) }
            deliverableBytes += batch.take()
        case .hold(let deadline):
            let alarm = batchAlarm ?? DeadlineAlarm(loop: link.loop, exact: true) { [weak self] now in self?.deliveryScheduleChanged(at: now) }
            batchAlarm = alarm
            alarm.arm(at: deadline)
        }
        return writeDeliverable()
    }

    /// Writes released bytes until the destination would block.
    func writeDeliverable() -> Outcome {
        guard destinationReady, !isClosed else { return .open }
        if let splice, splice.pipedBytes > 0 { return drainPipe() }
        if let error = writeReleased() { return .failed(error) }
        return finishIfDrained()
    }

    /// Writes what the model released, the batch's held bytes included, as far as the destination takes it now: a
    /// connection closing normally does not drop bytes its link already delivered.
    func flushReleased() {
        guard destinationReady, !isClosed, (splice?.pipedBytes ?? 0) == 0 else { return }
        batchAlarm?.cancel()
        deliverableBytes += batch.take()
        _ = writeReleased()
    }

    /// Writes released bytes in order until the destination would block; the error that stopped it, if any.
    private func writeReleased() -> SystemError? {
        while deliverableBytes > 0 && destinationWritable {
            let chunk = chunks[chunks.startIndex]
            let length = min(chunk.count - headOffset, deliverableBytes)
            let offset = headOffset
            let attempt = chunk.withUnsafeBytes { raw in
                Result { () throws(SystemError) -> IOResult<Int> in
                    try destination.write(UnsafeRawBufferPointer(rebasing: raw[offset..<(offset + length)]))
                }
            }
            let result: IOResult<Int>
            switch attempt {
            case .success(let value): result = value
            case .failure(let error): return error
            }
            switch result {
            case .wouldBlock:
                destinationWritable = false
            case .processed(let written):
                headOffset += written
                deliverableBytes -= written
                heldBytes -= written
                link.budget?.release(written)
                bytesDelivered += written
                recording?.delivered(written, at: link.loop.clock.now())
                if headOffset == chunk.count {
                    chunks.removeFirst()
                    headOffset = 0
                }
                if written < length { destinationWritable = false }
            }
        }
        return nil
    }

    /// Notes that the source has ended: its FIN crosses the link like data, one delay after it arrived (and
    /// after the handshake, for a FIN that comes first).
    func endOfStream(at now: Instant) {
        sourceEnded = true
        sourceReadable = false
        endOfStream = (now, link.currentDelay + (stage?.endOfStreamDelay(at: now) ?? .zero))
    }

    /// Sends end-of-stream to the destination once the source has ended, every byte has been written, and the
    /// FIN has crossed the link's delay.
    func finishIfDrained() -> Outcome {
        guard sourceEnded, heldBytes == 0, (splice?.pipedBytes ?? 0) == 0, !isFinished, destinationReady else { return isFinished ? .finished : .open }
        if let due = endOfStreamDue, due > link.loop.clock.now() {
            if due != .never { armDelivery(at: due) }
            return .open
        }
        if let cut {
            isFinished = true
            return .cut(cut)
        }
        // When the relay closes the connection on this finish, the close sends the same FIN after the same bytes.
        if !relay.closesWhenFinished(self) {
            do {
                try destination.shutdownWrite()
                readBuffer.calls.halfCloses += 1
            } catch where error.errno == .notConnected {
                // The peer is already gone; the connection's other direction will notice.
            } catch {
                return .failed(error)
            }
        }
        isFinished = true
        if !hasReleased {
            hasReleased = true
            relay.firstBytesReleased(by: self, at: link.loop.clock.now())
        }
        return .finished
    }

    /// Continues reading on a later loop turn, so one busy connection cannot monopolise the loop.
    func scheduleResume() {
        guard !resumeScheduled else { return }
        resumeScheduled = true
        link.loop.schedule(at: link.loop.clock.now()) { [weak self] in
            guard let self else { return }
            self.resumeScheduled = false
            guard !self.isClosed else { return }
            self.relay.pumpMayRead(self, at: self.link.loop.clock.now())
        }
    }

    private func armDelivery(at due: Instant) {
        let alarm = deliveryAlarm ?? DeadlineAlarm(loop: link.loop, delivery: true) { [weak self] now in self?.deliveryScheduleChanged(at: now) }
        deliveryAlarm = alarm
        alarm.arm(at: due)
    }

    /// The flow's side of the handshake opened sooner than planned: a FIN waiting for it may go now.
    func flowOpened() {
        guard !isClosed, sourceEnded, !isFinished else { return }
        relay.pumpProgressed(self, outcome: finishIfDrained())
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

    /// Whether a splice loop may carry this direction: it has finished, or nothing needs to see its bytes (the
    /// splice path's conditions) and nothing of it is held in user space or in the model.
    func canLeaveMainLoop(at now: Instant) -> Bool {
        guard !isClosed, heldBytes == 0, deliverableBytes == 0 else { return false }
        if isFinished { return true }
        return !sourceEnded && cut == nil && (stage?.isIdle ?? true) && filter == nil && recording == nil
            && link.isPassThrough && !(splice?.isUnavailable ?? false) && now >= flow.opensAt && destinationReady
            && forwarding && flow.pendingBytes == 0 && flow.releasedBytes == 0
    }

    /// Gives the direction's pipe (when it holds bytes) and stream position to a splice loop, which carries the
    /// sockets from now until it hands them back.
    func handOver() -> SpliceDirectionState {
        deliveryAlarm?.cancel()
        batchAlarm?.cancel()
        let (pipe, pipedBytes) = splice?.handOver() ?? (nil, 0)
        return SpliceDirectionState(pipe: pipe, pipedBytes: pipedBytes, sourceEnded: sourceEnded, finished: isFinished)
    }

    /// Carries the direction again from where a splice loop left it: bytes its pipe still holds go first, and an
    /// end of stream it read but could not forward yet crosses the link from now.
    func resume(from state: SpliceDirectionState, at now: Instant) {
        if state.finished && !isFinished {
            sourceEnded = true
            isFinished = true
            endOfStream = (now, .zero)
        } else if state.sourceEnded && !sourceEnded {
            endOfStream(at: now)
        }
        if let pipe = state.pipe {
            let splice = self.splice ?? StreamSplice(pool: pipes)
            self.splice = splice
            splice.adopt(pipe, holding: state.pipedBytes)
        }
        sourceReadable = !sourceEnded
        // The splice loop took the source's events meanwhile, a hang-up among them perhaps.
        shortReadEmptiesSource = false
        destinationWritable = true
    }

    /// Counts `count` bytes a splice loop delivered for this direction, here and in the link's counters.
    func countSpliced(_ count: Int) {
        guard count > 0 else { return }
        bytesDelivered += count
        link.countBypassed(count)
    }

    func close() {
        guard !isClosed else { return }
        isClosed = true
        stage?.close()
        splice?.close()
        deliveryAlarm?.cancel()
        batchAlarm?.cancel()
        link.detach(flow)
        link.budget?.release(heldBytes)
        link.budget?.forget(self)
        chunks.removeAll()
        heldBytes = 0
    }
}

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
