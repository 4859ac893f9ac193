import Testing

@testable import LinkConditioner

/// The limit_data toxic passes exactly its byte count, then ends the stream.
struct LimitDataToxicTests {
    @Test func readsPassUntilTheLimitThenTheStreamEnds() {
        let toxic = LimitDataToxic(bytes: 100)

        let first = toxic.limit(60)
        let second = toxic.limit(60)
        let third = toxic.limit(5)

        #expect(first == (60, false))
        #expect(second == (40, true))
        #expect(third == (0, true))
    }

    @Test func aLimitOfZeroEndsAtTheFirstRead() {
        #expect(LimitDataToxic(bytes: 0).limit(10) == (0, true))
    }
}
