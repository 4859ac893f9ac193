/// The pump's writing side: bytes the model released go to the destination in order, then its end of stream.
extension StreamPump {
    /// Queues bytes that did not come from the source (a front end's protocol reply) ahead of anything read later;
    /// with `endOfStream`, the destination is half-closed after them and nothing more is read. Returns what the
    /// bytes written at once, or the end, did; nil when the bytes went to the link, which reports their delivery.
    func inject(_ bytes: [UInt8], endOfStream: Bool, at now: Instant) -> Outcome? {
        guard !isClosed else { return nil }
        // Bytes a pipe held go first; what writing them did reaches the relay before these bytes are queued.
        if let left = leavingSplice(at: now) { relay?.pumpProgressed(self, outcome: left) }
        guard !isClosed else { return nil }
        if endOfStream { self.endOfStream(at: now, cause: .decided) }
        guard !bytes.isEmpty else { return finishIfDrained() }
        chunks.append(bytes)
        hold(bytes.count)
        if flow == nil && link.isPassThrough {
            // Nothing of this direction is in the model, which would release the bytes at once: they are written
            // now, as the model's release would have them written.
            deliverableBytes += bytes.count
            link.countReleasedAtOnce(bytes.count)
            return writeDeliverable()
        }
        link.enqueue(bytes.count, on: modelledFlow(), at: now)
        return nil
    }

    /// Collects the bytes the model has released by `now` and writes them, or holds them briefly while more are
    /// on their way (`WriteBatch`); the link reports the next release. The first bytes released are returned
    /// before they are written (`firstBytesReleased`), and written when the relay asks again.
    func deliverDue(at now: Instant) -> Outcome {
        guard let flow else { return writeDeliverable() }
        for change in flow.takeLossBlockChanges() { observer?.held(direction, .loss, change.blocked, at: change.at) }
        let release = flow.takeRelease(at: now)
        if let oldest = release.oldest { batch.add(release.bytes, releasedAt: oldest) }
        if release.bytes > 0, case .awaited = firstRelease {
            firstRelease = .happened
            return .firstBytesReleased(at: now)
        }
        switch batch.decision(at: now, nextRelease: link.nextRelease(of: flow)) {
        case .none:
            break
        case .write:
            batchAlarm?.cancel()
            if let oldest = batch.oldestRelease { link.lateness.record(now - oldest) }
            deliverableBytes += batch.take()
        case .hold(let deadline):
            let alarm =
                batchAlarm
                ?? DeadlineAlarm(loop: link.loop, exact: true) { [weak self] now in self?.due(.delivery, at: now) }
            batchAlarm = alarm
            alarm.arm(at: deadline)
        }
        return writeDeliverable()
    }

    /// Writes released bytes until the destination would block.
    func writeDeliverable() -> Outcome {
        guard destinationState.isConnected else { return .open }
        if let splice, splice.pipedBytes > 0 { return drainPipe() }
        if let error = writeReleased() { return .failed(error) }
        return finishIfDrained()
    }

    /// Writes what the model released, the batch's held bytes included, as far as the destination takes it now: a
    /// connection closing normally does not drop bytes its link already delivered.
    func flushReleased() {
        guard destinationState.isConnected, (splice?.pipedBytes ?? 0) == 0 else { return }
        batchAlarm?.cancel()
        deliverableBytes += batch.take()
        _ = writeReleased()
    }

    /// Asks for TCP_NODELAY on the destination before its second write.
    func setNoDelayBeforeSecondWrite() {
        noDelay = .beforeFirstWrite
    }

    /// Sets TCP_NODELAY on the destination before its second write, when the relay asked for it.
    func prepareDestinationWrite() {
        switch noDelay {
        case .untouched:
            break
        case .beforeFirstWrite:
            noDelay = .beforeSecondWrite
        case .beforeSecondWrite:
            try? destination.setNoDelay()
            noDelay = .untouched
        }
    }

    /// Writes released bytes in order until the destination would block; the error that stopped it, if any.
    private func writeReleased() -> SystemError? {
        while deliverableBytes > 0, case .writable = destinationState {
            prepareDestinationWrite()
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
                destinationState = .blocked
            case .processed(let written):
                headOffset += written
                deliverableBytes -= written
                heldBytes -= written
                link.budget?.release(written)
                bytesDelivered += written
                observer?.delivered(direction, written, at: link.loop.clock.now())
                if headOffset == chunk.count {
                    chunks.removeFirst()
                    headOffset = 0
                }
                if written < length { destinationState = .blocked }
            }
        }
        return nil
    }

    /// Notes that the source has ended (`cause` says how): its FIN crosses the link like data, one delay after it
    /// arrived (and after the handshake, for a FIN that comes first).
    func endOfStream(at now: Instant, cause: EndCause) {
        let wait = link.currentDelay + (stage?.endOfStreamDelay(at: now) ?? .zero)
        if case .ended(let earlier) = sourceState {
            sourceState = .ended(EndOfStream(at: now, wait: wait, cause: earlier.cause.merged(with: cause)))
        } else {
            sourceState = .ended(EndOfStream(at: now, wait: wait, cause: cause))
        }
    }

    /// When the FIN may reach the destination: once the flow's side of the handshake opened (which the peer's
    /// first bytes may bring forward) and the waits have passed; nil before the source ended.
    var endOfStreamDue: Instant? {
        guard case .ended(let end) = sourceState else { return nil }
        return max(end.at, opensAt) + end.wait
    }

    /// When the flow's side of the handshake opens; a direction without a flow is open.
    var opensAt: Instant { flow?.opensAt ?? Instant(nanoseconds: .min) }

    /// Says `endOfStreamDue` once the source has ended, every byte has been written, and the FIN has crossed the
    /// link's delay; a stage's cut ends the stream there.
    func finishIfDrained() -> Outcome {
        guard case .ended(let end) = sourceState, heldBytes == 0, (splice?.pipedBytes ?? 0) == 0 else {
            return isFinished ? .finished : .open
        }
        switch destinationState {
        case .finished: return .finished
        case .connecting, .closed: return .open
        case .writable, .blocked: break
        }
        if let due = endOfStreamDue, due > link.loop.clock.now() {
            if due != .never { armDelivery(at: due) }
            return .open
        }
        if case .cut(let how) = end.cause {
            destinationState = .finished
            return .cut(how)
        }
        return .endOfStreamDue
    }

    /// Sends end-of-stream to the destination, after `endOfStreamDue`: a half-close, or nothing when the relay
    /// closes the connection now (`closingConnection`), which sends the same FIN after the same bytes.
    func sendEndOfStream(closingConnection: Bool) -> Outcome {
        if !closingConnection {
            do {
                try destination.shutdownWrite()
                readBuffer.calls.halfCloses += 1
            } catch  where error.errno == .notConnected {
                // The peer is already gone; the connection's other direction will notice.
            } catch {
                return .failed(error)
            }
        }
        destinationState = .finished
        return .finished
    }

    /// Notes a FIN sent before any byte was released, which counts as the first release; true when it was.
    func noteFinishReleased() -> Bool {
        guard case .awaited = firstRelease else { return false }
        firstRelease = .happened
        return true
    }

    /// Continues reading on a later loop turn, so one busy connection cannot monopolise the loop.
    func scheduleResume() {
        guard resumeTimer == nil else { return }
        resumeTimer = link.loop.schedule(at: link.loop.clock.now()) { [weak self] in
            guard let self else { return }
            self.resumeTimer = nil
            self.due(.turn, at: self.link.loop.clock.now())
        }
    }

    private func armDelivery(at due: Instant) {
        let alarm =
            deliveryAlarm
            ?? DeadlineAlarm(loop: link.loop, delivery: true) { [weak self] now in self?.due(.delivery, at: now) }
        deliveryAlarm = alarm
        alarm.arm(at: due)
    }
}
