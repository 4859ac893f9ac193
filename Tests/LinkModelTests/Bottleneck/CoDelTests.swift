import LinkModel
import LinkProfiles
import Testing

/// RFC 8289's section 5 pseudocode, transcribed literally over milliseconds as Doubles: the reference CoDel's
/// schedule is checked against.
private struct RFC8289Reference {
    let target = 5.0, interval = 100.0, maxPacket = 1514
    var queue: [(tag: UInt64, bytes: Int, tstamp: Double)] = []
    var firstAboveTime = 0.0, dropNext = 0.0
    var count = 0, lastCount = 0
    var dropping = false
    var drops: [(tag: UInt64, at: Double)] = []

    var bytes: Int { queue.reduce(0) { $0 + $1.bytes } }

    func controlLaw(_ t: Double, _ count: Int) -> Double { t + interval / Double(count).squareRoot() }

    mutating func doDequeue(_ now: Double) -> (p: UInt64?, okToDrop: Bool) {
        guard !queue.isEmpty else {
            firstAboveTime = 0
            return (nil, false)
        }
        let p = queue.removeFirst()
        var okToDrop = false
        let sojournTime = now - p.tstamp
        if sojournTime < target || bytes <= maxPacket {
            firstAboveTime = 0
        } else if firstAboveTime == 0 {
            firstAboveTime = now + interval
        } else if now >= firstAboveTime {
            okToDrop = true
        }
        return (p.tag, okToDrop)
    }

    mutating func dequeue(_ now: Double) -> UInt64? {
        var r = doDequeue(now)
        guard let first = r.p else {
            dropping = false
            return nil
        }
        if dropping {
            if !r.okToDrop {
                dropping = false
            }
            var p = first
            while now >= dropNext && dropping {
                drops.append((p, now))
                count += 1
                r = doDequeue(now)
                if !r.okToDrop {
                    dropping = false
                } else {
                    dropNext = controlLaw(dropNext, count)
                }
                guard let next = r.p else { return nil }
                p = next
            }
            return r.p
        } else if r.okToDrop {
            drops.append((first, now))
            r = doDequeue(now)
            dropping = true
            let delta = count - lastCount
            count = 1
            if delta > 1 && now - dropNext < 16 * interval {
                count = delta
            }
            dropNext = controlLaw(now, count)
            lastCount = count
        }
        return r.p
    }
}

struct CoDelTests {
    /// A queue fed two 1500-byte packets per millisecond and drained one per millisecond, from `start` for
    /// `milliseconds`: the overload that keeps a standing queue.
    private func overload(
        _ queue: inout CoDelQueue, milliseconds: Int
    ) -> (sent: [UInt64], drops: [(tag: UInt64, at: Instant)]) {
        var sent: [UInt64] = []
        var drops: [(tag: UInt64, at: Instant)] = []
        var tag: UInt64 = 0
        for ms in 0..<milliseconds {
            let now = Instant.ms(Double(ms))
            for _ in 0..<2 {
                _ = queue.enqueue(LinkPacket(flow: 0, bytes: 1500, tag: tag, enqueuedAt: now), now: now)
                tag += 1
            }
            let (packet, dropped) = queue.dequeue(now: now)
            drops += dropped.map { ($0.tag, now) }
            if let packet { sent.append(packet.tag) }
        }
        return (sent, drops)
    }

    @Test func firstDropComesOneIntervalAfterSojournFirstReachesTarget() {
        var queue = CoDelQueue(limit: .packets(10_000))

        let drops = overload(&queue, milliseconds: 400).drops

        // The packet dequeued at t ms arrived at ⌊t/2⌋ ms, so its sojourn first reaches 5 ms at t = 9 ms. The first
        // drop is one interval later, at 109 ms; the next are due at 209, 209 + 100/√2 = 279.7, + 100/√3 = 337.4
        // and + 100/√4 = 387.4 ms, each taken at the first dequeue at or after it.
        #expect(drops.map(\.at) == [109, 209, 280, 338, 388].map { Instant.ms($0) })
    }

    @Test func controlLawSpacesDropsByIntervalOverRootCount() {
        var queue = CoDelQueue(limit: .packets(10_000))

        let drops = overload(&queue, milliseconds: 2_000).drops

        let gaps = zip(drops.dropFirst(), drops.dropFirst(2)).map { ($1.at - $0.at).seconds * 1000 }
        for (index, gap) in gaps.enumerated() {
            let count = Double(index + 2)
            #expect(abs(gap - 100 / count.squareRoot()) <= 1, "gap \(index) is \(gap) ms")
        }
    }

    @Test func dropScheduleMatchesRFC8289PseudocodeUnderBurstyLoad() {
        var queue = CoDelQueue(limit: .packets(100_000))
        var reference = RFC8289Reference()
        var random = SeededRandom(seed: 8289)
        var sent: [UInt64] = []
        var referenceSent: [UInt64] = []
        var drops: [(UInt64, Instant)] = []
        var tag: UInt64 = 0

        for ms in 0..<5_000 {
            let now = Instant.ms(Double(ms))
            let arrivals =
                (ms / 700) % 2 == 0 ? Int.random(in: 0...3, using: &random) : Int.random(in: 0...1, using: &random)
            for _ in 0..<arrivals {
                _ = queue.enqueue(LinkPacket(flow: 0, bytes: 1500, tag: tag, enqueuedAt: now), now: now)
                reference.queue.append((tag, 1500, Double(ms)))
                tag += 1
            }
            let (packet, dropped) = queue.dequeue(now: now)
            drops += dropped.map { ($0.tag, now) }
            if let packet { sent.append(packet.tag) }
            if let packet = reference.dequeue(Double(ms)) { referenceSent.append(packet) }
        }

        #expect(drops.count > 20)
        #expect(drops.map(\.0) == reference.drops.map(\.tag))
        #expect(drops.map { $0.1.nanoseconds } == reference.drops.map { Int64($0.at) * 1_000_000 })
        #expect(sent == referenceSent)
    }

    @Test func aDroppingEpisodeWithinSixteenIntervalsOfTheLastResumesItsDropRate() throws {
        // Overload for 600 ms, nothing for 1.7 s, overload again: the second episode's first drop comes about 12
        // intervals after the first episode's last drop was due, so RFC 8289 resumes from count − lastcount.
        var queue = CoDelQueue(limit: .packets(100_000))
        var reference = RFC8289Reference()
        var drops: [(UInt64, Instant)] = []
        var tag: UInt64 = 0

        for ms in 0..<3_100 {
            let now = Instant.ms(Double(ms))
            for _ in 0..<(ms < 600 || ms >= 2_300 ? 2 : 0) {
                _ = queue.enqueue(LinkPacket(flow: 0, bytes: 1500, tag: tag, enqueuedAt: now), now: now)
                reference.queue.append((tag, 1500, Double(ms)))
                tag += 1
            }
            drops += queue.dequeue(now: now).dropped.map { ($0.tag, now) }
            _ = reference.dequeue(Double(ms))
        }

        let second = drops.filter { $0.1 >= .ms(2_300) }
        try #require(
            second.count >= 2 && drops.count > second.count + 5,
            "\(drops.count) drops, \(second.count) in the second episode")
        #expect((second[1].1 - second[0].1) < .milliseconds(50), "the second episode restarted at count 1")
        #expect(drops.map(\.0) == reference.drops.map(\.tag))
        #expect(drops.map { $0.1.nanoseconds } == reference.drops.map { Int64($0.at) * 1_000_000 })
    }

    @Test func aStandingQueueOfOneMaximumSizeFrameBehindTheHeadIsNeverDropped() {
        // RFC 8289: no drop while the queue holds at most MAXPACKET bytes (1514) once the head has left, however
        // long each packet stood. One 1514-byte frame arrives and one leaves every 10 ms, so each waits 10 ms.
        var queue = CoDelQueue(limit: .packets(1000))
        _ = queue.enqueue(LinkPacket(flow: 0, bytes: 1514, tag: 0, enqueuedAt: .zero), now: .zero)
        var dropped: [LinkPacket] = []

        for step in 1..<200 {
            let now = Instant.ms(Double(step * 10))
            _ = queue.enqueue(LinkPacket(flow: 0, bytes: 1514, tag: UInt64(step), enqueuedAt: now), now: now)
            dropped += queue.dequeue(now: now).dropped
        }

        #expect(dropped.isEmpty)
    }

    @Test func queueBelowTargetIsNeverDropped() {
        var queue = CoDelQueue(limit: .packets(1000))
        var dropped: [LinkPacket] = []

        for ms in 0..<10_000 {
            let now = Instant.ms(Double(ms))
            for tag in 0..<3 { _ = queue.enqueue(LinkPacket(flow: 0, bytes: 1500, tag: UInt64(tag)), now: now) }
            for _ in 0..<3 { dropped += queue.dequeue(now: now + .milliseconds(4)).dropped }
        }

        #expect(dropped.isEmpty)
    }

    @Test func oneFullFrameQueuedIsNeverDroppedHoweverOld() {
        var queue = CoDelQueue(limit: .packets(1000))
        var dropped: [LinkPacket] = []

        for second in 0..<100 {
            let now = Instant.s(Double(second))
            _ = queue.enqueue(LinkPacket(flow: 0, bytes: 1500, tag: 0, enqueuedAt: now), now: now)
            _ = queue.enqueue(LinkPacket(flow: 0, bytes: 1500, tag: 1, enqueuedAt: now), now: now)
            dropped += queue.dequeue(now: now + .seconds(0.5)).dropped
            dropped += queue.dequeue(now: now + .seconds(0.5)).dropped
        }

        #expect(dropped.isEmpty)
    }

    @Test func hardLimitDropsAtTheTail() {
        var queue = CoDelQueue(limit: .packets(2))
        _ = queue.enqueue(LinkPacket(flow: 0, bytes: 1500, tag: 0), now: .zero)
        _ = queue.enqueue(LinkPacket(flow: 0, bytes: 1500, tag: 1), now: .zero)

        #expect(queue.enqueue(LinkPacket(flow: 0, bytes: 1500, tag: 2), now: .zero).map(\.tag) == [2])
    }
}
