import HeapModule

/// The schedule of a link's emulation (`StreamLink.Emulation`): flows wait in a heap ordered by their next event,
/// found by number with a binary search, and the heap is rebuilt once stale entries outnumber the live flows.
extension StreamLink.Emulation {
    /// The live flow numbered `number`, if any, by binary search over `flows`.
    func flow(numbered number: Int) -> StreamFlow? {
        let index = flowIndex(numbered: number)
        return index < flows.count && flows[index].number == number ? flows[index] : nil
    }

    /// Where the flow numbered `number` is, or would be, in `flows` (sorted by number).
    func flowIndex(numbered number: Int) -> Int {
        var low = 0
        var high = flows.count
        while low < high {
            let middle = (low + high) / 2
            if flows[middle].number < number { low = middle + 1 } else { high = middle }
        }
        return low
    }

    /// The earliest live entry of the schedule, after dropping stale ones from its top.
    mutating func nextScheduledFlow() -> ScheduledFlow? {
        if scheduleTopIsLive { return schedule.min }
        while let top = schedule.min {
            if let flow = flow(numbered: top.number), flow.model.scheduleGeneration == top.generation {
                scheduleTopIsLive = true
                return top
            }
            schedule.removeMin()
        }
        return nil
    }

    /// Enters `flow`'s next event, as it stands after a change at `now`, in the schedule: one of its own
    /// events, or the end of its handshake when it has bytes waiting for it.
    mutating func reschedule(_ flow: StreamFlow, _ model: inout StreamFlow.Model, at now: Instant) {
        guard !model.isRemoved else { return }
        var next = model.nextEventTime
        if model.opensAt > now, model.sender.unsentBytes > 0 { next = min(next ?? model.opensAt, model.opensAt) }
        guard next != model.scheduledAt else { return }
        scheduleTopIsLive = false
        model.scheduledAt = next
        model.scheduleGeneration += 1
        if let next, next != .never {
            schedule.insert(ScheduledFlow(at: next, number: flow.number, generation: model.scheduleGeneration))
        }
    }

    /// Rebuilds the schedule from the live flows once stale entries outnumber them: each closed connection may
    /// leave an entry up to a retransmission timeout ahead, so a churn of short connections would otherwise grow
    /// it. It reads every flow, so it runs after a flow's state was given back, never while one is taken `inout`;
    /// when does not matter to the model, which only ever takes the live entries.
    mutating func compactScheduleIfStale() {
        guard schedule.count > 2 * flows.count + 64 else { return }
        scheduleTopIsLive = false
        schedule = Heap(
            flows.compactMap { flow in
                guard let at = flow.model.scheduledAt, at != .never else { return nil }
                return ScheduledFlow(at: at, number: flow.number, generation: flow.model.scheduleGeneration)
            })
    }
}
