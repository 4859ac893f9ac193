import Testing

@testable import LinkConditioner

/// When a pump writes the bytes its link model released: a lone release at once, a run of releases together,
/// no byte later than the hold after its release nor before it, at once when the loop might not come back before
/// the deadline, and at once when a batch reaches its largest write.
struct WriteBatchTests {
    let origin = Instant(nanoseconds: 1_000_000_000)
    let hold = WriteBatch.standard.longestHold

    @Test func aLoneReleaseIsWrittenAtOnce() {
        var batch = WriteBatch.standard
        batch.add(64, releasedAt: origin)

        #expect(batch.decision(at: origin, nextRelease: nil) == .write)
    }

    @Test func aReleaseWhoseNextComesOnlyAfterTheHoldIsWrittenAtOnce() {
        var batch = WriteBatch.standard
        batch.add(1448, releasedAt: origin)

        #expect(batch.decision(at: origin, nextRelease: origin + hold + .nanoseconds(1)) == .write)
        #expect(batch.decision(at: origin, nextRelease: origin + .milliseconds(10)) == .write)
    }

    @Test func aReleaseFollowedWithinTheHoldIsKeptUntilItsOldestByteHasWaitedTheHold() {
        var batch = WriteBatch.standard
        batch.add(1448, releasedAt: origin)

        #expect(batch.decision(at: origin, nextRelease: origin + .microseconds(12)) == .hold(until: origin + hold))
    }

    @Test func theDeadlineIsSetByTheOldestHeldByteNotByTheLatest() {
        var batch = WriteBatch.standard
        batch.add(1448, releasedAt: origin)
        batch.add(1448, releasedAt: origin + .microseconds(40))

        let decision = batch.decision(at: origin + .microseconds(40), nextRelease: origin + .microseconds(52))

        #expect(decision == .hold(until: origin + hold))
    }

    @Test func aBatchIsWrittenNowWhenTheLoopsSpacingCouldBringItBackOnlyAfterTheDeadline() {
        var batch = WriteBatch.standard
        batch.add(1448, releasedAt: origin)
        let now = origin + hold - batch.loopSpacing + .microseconds(1)

        #expect(batch.decision(at: now, nextRelease: now + .microseconds(5)) == .write)
    }

    @Test func aBatchWhoseOldestByteWasReleasedTheHoldAgoIsWrittenEvenWhileMoreIsComing() {
        var batch = WriteBatch.standard
        batch.add(1448, releasedAt: origin)

        #expect(batch.decision(at: origin + hold, nextRelease: origin + hold + .microseconds(5)) == .write)
    }

    @Test func aBatchReachingTheLargestWriteIsWrittenAtOnce() {
        var batch = WriteBatch.standard
        let quarter = WriteBatch.standard.largestWrite / 4
        for index in 0..<3 {
            batch.add(quarter, releasedAt: origin + .microseconds(Int64(index)))
        }
        #expect(
            batch.decision(at: origin + .microseconds(2), nextRelease: origin + .microseconds(3))
                == .hold(until: origin + hold))

        batch.add(quarter, releasedAt: origin + .microseconds(3))

        #expect(batch.decision(at: origin + .microseconds(3), nextRelease: origin + .microseconds(4)) == .write)
    }

    @Test func takingTheBatchHandsOverEveryHeldByteAndEmptiesIt() {
        var batch = WriteBatch.standard
        batch.add(1000, releasedAt: origin)
        batch.add(448, releasedAt: origin + .microseconds(10))

        #expect(batch.take() == 1448)
        #expect(batch.bytes == 0)
        #expect(batch.decision(at: origin + .microseconds(10), nextRelease: nil) == .none)
    }

    /// A 1 Gbit/s burst of 200 segments (one released every 11.6 µs), driven as a pump drives its batch: a decision
    /// at each release, and a write when the hold's deadline comes first.
    @Test func aBurstAtOneGigabitIsWrittenInBatchesNoByteLaterThanTheHoldPastItsReleaseAndTheLastAtOnce() {
        let segment = 1448
        let spacing = Duration.nanoseconds(11_584)
        let releases = (0..<200).map { origin + spacing * $0 }
        var batch = WriteBatch.standard
        var held: [Instant] = []
        var deadline: Instant?
        var writes: [(at: Instant, releases: [Instant])] = []
        func write(at now: Instant) {
            _ = batch.take()
            writes.append((now, held))
            held = []
            deadline = nil
        }

        for (index, released) in releases.enumerated() {
            if let due = deadline, due <= released { write(at: due) }
            batch.add(segment, releasedAt: released)
            held.append(released)
            let next = index + 1 < releases.count ? releases[index + 1] : nil
            switch batch.decision(at: released, nextRelease: next) {
            case .none: break
            case .write: write(at: released)
            case .hold(let until): deadline = until
            }
        }

        #expect(writes.flatMap(\.releases) == releases)
        for (at, batchReleases) in writes {
            for released in batchReleases {
                #expect(at >= released)
                #expect(at - released <= hold)
            }
        }
        #expect(writes.last?.at == releases.last)
        #expect(writes.count <= releases.count / 5, "\(writes.count) writes for \(releases.count) releases")
    }
}
