/// The pump's splice path: how it decides to bypass user space, moves bytes through the pipe, and leaves.
extension StreamPump {
    enum SpliceDecision {
        /// Move the source's bytes with splice.
        case splice
        /// Nothing needs to see the bytes, but some are still held on the copying path: write them before
        /// reading more, so the direction can move onto the splice path without reordering.
        case drainFirst
        /// Read and copy: the link shapes, a stage or filter sees the bytes, or no pipe is available.
        case copy
    }

    /// How this direction reads now. Splice needs a link that shapes nothing either way, no filter and only idle
    /// stages, nothing held on the copying path or in the model (so order is kept), the handshake crossed and the
    /// source not ended. With bytes already in the pipe, it stays on the path. A recording only needs the counts,
    /// which each splice returns, so it splices too.
    func spliceDecision(at now: Instant) -> SpliceDecision {
        if let splice, splice.pipedBytes > 0 { return .splice }
        guard stage?.isIdle ?? true, filter == nil, link.isPassThrough, !(splice?.isUnavailable ?? false),
            destinationState.isConnected, forwarding, !sourceEnded, flow.map({ now >= $0.opensAt }) ?? true
        else {
            // Copying from here on: an empty pipe goes back to the pool rather than wait with the connection.
            splice?.giveBack()
            return .copy
        }
        guard heldBytes == 0, (flow?.pendingBytes ?? 0) == 0, (flow?.releasedBytes ?? 0) == 0 else {
            return .drainFirst
        }
        // A pipe, and the splice state that holds it, are made only once a burst proves long (`copyBurstStart`),
        // so a connection that never sends, or sends short messages, makes neither.
        return .splice
    }

    /// The direction's splice state with a pipe taken, made on first use; nil when no pipe can be had now.
    private func preparedSplice() -> StreamSplice? {
        let splice = self.splice ?? StreamSplice(pool: pipes)
        self.splice = splice
        return splice.prepare() ? splice : nil
    }

    /// Reads of a burst's start that fill this many bytes mark a bulk transfer, whose rest goes through the pipe.
    static let burstCopyLimit = 16 * 1024

    /// Moves what the source has to the destination, until either side would block: a burst's start by one read
    /// and one write, where the pipe would cost a splice in, a splice out and one more splice to hear the source
    /// is empty; the rest of a long burst through the pipe, never copied into user space.
    func spliceAvailable(at now: Instant, scratch: ReadBuffer) -> Outcome {
        var moves = 0
        var copiedFullRead = false
        while moves < Self.readsPerTurn * 2 {
            moves += 1
            if let splice, splice.pipedBytes > 0 {
                guard case .writable = destinationState else { return .open }
                if let error = drainOnce(splice) { return .failed(error) }
                guard case .writable = destinationState else { return .open }
                continue
            }
            guard sourceReadable, link.isPassThrough, stage?.isIdle ?? true else { return finishIfDrained() }
            let splice: StreamSplice
            if let held = self.splice, held.holdsPipe {
                splice = held
            } else if copiedFullRead, let prepared = preparedSplice() {
                splice = prepared
            } else {
                guard case .writable = destinationState else { return .open }
                switch copyBurstStart(into: scratch, at: now) {
                case .filledRead: copiedFullRead = true
                case .readShort: break
                case .stopped(let outcome): return outcome
                }
                continue
            }
            let result: IOResult<Int>
            do {
                result = try splice.fill(from: source)
            } catch {
                return .failed(error)
            }
            switch result {
            case .wouldBlock:
                // An empty pipe that takes nothing means the source is empty; a part-full one may just lack a
                // free slot, so the source stays marked readable until the pipe drains.
                if splice.pipedBytes == 0 {
                    sourceState.drain()
                    scratch.calls.emptyReads += 1
                    splice.giveBack()
                    return .open
                }
            case .processed(0):
                scratch.calls.endReads += 1
                sourceReachedEnd(at: now)
                if splice.pipedBytes == 0 {
                    splice.giveBack()
                    return finishIfDrained()
                }
            case .processed(let count):
                observer?.read(direction, count, at: now)
            }
        }
        scheduleResume()
        return .open
    }

    enum BurstStep {
        /// The read filled its buffer: more may wait in the source.
        case filledRead
        /// The read was short, but the source's end may wait behind it: read again.
        case readShort
        /// Reading stops here with this outcome.
        case stopped(Outcome)
    }

    /// One read of up to `burstCopyLimit` bytes into the loop's scratch buffer, written straight on. Bytes the
    /// destination does not take go onto the copying path, ahead of anything read later.
    private func copyBurstStart(into scratch: ReadBuffer, at now: Instant) -> BurstStep {
        let target = UnsafeMutableRawBufferPointer(
            rebasing: scratch.bytes[0..<min(Self.burstCopyLimit, scratch.bytes.count)])
        let read: IOResult<Int>
        do {
            read = try source.read(into: target)
        } catch {
            return .stopped(.failed(error))
        }
        let count: Int
        switch read {
        case .wouldBlock:
            sourceState.drain()
            scratch.calls.emptyReads += 1
            return .stopped(.open)
        case .processed(0):
            scratch.calls.endReads += 1
            sourceReachedEnd(at: now)
            return .stopped(finishIfDrained())
        case .processed(let value):
            count = value
        }
        observer?.read(direction, count, at: now)
        let written: Int
        prepareDestinationWrite()
        do {
            switch try destination.write(UnsafeRawBufferPointer(rebasing: target[0..<count])) {
            case .wouldBlock: written = 0
            case .processed(let value): written = value
            }
        } catch {
            return .stopped(.failed(error))
        }
        if written > 0 {
            bytesDelivered += written
            link.countBypassed(written)
            observer?.delivered(direction, written, at: now)
        }
        if written < count {
            destinationState = .blocked
            return .stopped(keep(UnsafeRawBufferPointer(rebasing: target[written..<count]), at: now))
        }
        if count == target.count { return .filledRead }
        switch shortRead {
        case .endsSource:
            sourceReachedEnd(at: now)
            return .stopped(finishIfDrained())
        case .readAgain, .readAgainAfterHangUp:
            return .readShort
        case .emptiesSource:
            break
        }
        sourceState.drain()
        return .stopped(finishIfDrained())
    }

    /// Keeps bytes the destination did not take for its next writable edge: in the pipe, or on the copying path
    /// when no pipe can be had.
    private func keep(_ bytes: UnsafeRawBufferPointer, at now: Instant) -> Outcome {
        var stashed = 0
        if let splice = preparedSplice() {
            do {
                stashed = try splice.stash(bytes)
            } catch {
                return .failed(error)
            }
        }
        guard stashed < bytes.count else { return .open }
        return inject(Array(bytes[stashed...]), endOfStream: false, at: now) ?? .open
    }

    /// Writes what the pipe holds to the destination (the destination became writable), then finishes if the
    /// source has ended.
    func drainPipe() -> Outcome {
        guard let splice else { return .open }
        while splice.pipedBytes > 0, case .writable = destinationState {
            if let error = drainOnce(splice) { return .failed(error) }
        }
        return finishIfDrained()
    }

    /// One splice from the pipe to the destination, counted as delivered; the error that stopped it, if any.
    private func drainOnce(_ splice: StreamSplice) -> SystemError? {
        let before = splice.pipedBytes
        prepareDestinationWrite()
        let result: IOResult<Int>
        do {
            result = try splice.drain(to: destination)
        } catch {
            return error
        }
        switch result {
        case .wouldBlock:
            destinationState = .blocked
        case .processed(let written):
            bytesDelivered += written
            link.countBypassed(written)
            observer?.delivered(direction, written, at: link.loop.clock.now())
            if written < before { destinationState = .blocked }
        }
        return nil
    }

    /// Leaves the splice path: the bytes still in the pipe are copied out and queued on the link ahead of
    /// anything read later, so the profile now in force sees them and none is lost or reordered. Called by the
    /// stages when what the bytes need changes; the relay hears what it did.
    func leaveSplice(at now: Instant) {
        due(.leaveSplice, at: now)
    }

    /// `leaveSplice`, returning what the copied-out bytes did; nil when there were none, or the link took them.
    func leavingSplice(at now: Instant) -> Outcome? {
        guard let splice, splice.pipedBytes > 0, !isClosed else { return nil }
        let bytes: [UInt8]
        do {
            bytes = try splice.takeBack()
        } catch {
            return .failed(error)
        }
        splice.giveBack()
        return inject(bytes, endOfStream: false, at: now)
    }

    /// Whether a splice loop may carry this direction: it has finished, or nothing needs to see its bytes (the
    /// splice path's conditions) and nothing of it is held in user space or in the model.
    func canLeaveMainLoop(at now: Instant) -> Bool {
        guard !isClosed, heldBytes == 0, deliverableBytes == 0 else { return false }
        if isFinished { return true }
        return !sourceEnded && (stage?.isIdle ?? true) && filter == nil && observer == nil
            && link.isPassThrough && !(splice?.isUnavailable ?? false) && now >= opensAt && destinationState.isConnected
            && forwarding && (flow?.pendingBytes ?? 0) == 0 && (flow?.releasedBytes ?? 0) == 0
    }

    /// Gives the direction's pipe (when it holds bytes) and stream position to a splice loop, which carries the
    /// sockets from now until it hands them back.
    func handOver() -> SpliceDirectionState {
        // The splice loop writes without asking: the option Nagle would need later is set now.
        if noDelay != .untouched {
            try? destination.setNoDelay()
            noDelay = .untouched
        }
        deliveryAlarm?.cancel()
        batchAlarm?.cancel()
        let (pipe, pipedBytes) = splice?.handOver() ?? (nil, 0)
        return SpliceDirectionState(pipe: pipe, pipedBytes: pipedBytes, sourceEnded: sourceEnded, finished: isFinished)
    }

    /// Carries the direction again from where a splice loop left it: bytes its pipe still holds go first, and an
    /// end of stream it read but could not forward yet crosses the link from now.
    func resume(from state: SpliceDirectionState, at now: Instant) {
        if state.finished && !isFinished {
            let cause = if case .ended(let earlier) = sourceState { earlier.cause } else { EndCause.decided }
            sourceState = .ended(EndOfStream(at: now, wait: .zero, cause: cause))
            destinationState = .finished
        } else if state.sourceEnded && !sourceEnded {
            endOfStream(at: now, cause: .decided)
        }
        if let pipe = state.pipe {
            let splice = self.splice ?? StreamSplice(pool: pipes)
            self.splice = splice
            splice.adopt(pipe, holding: state.pipedBytes)
        }
        sourceState.becameReadable()
        shortRead = shortRead.afterSpliceLoop
        if case .blocked = destinationState { destinationState = .writable }
    }

    /// Counts `count` bytes a splice loop delivered for this direction, here and in the link's counters.
    func countSpliced(_ count: Int) {
        guard count > 0 else { return }
        bytesDelivered += count
        link.countBypassed(count)
    }
}
