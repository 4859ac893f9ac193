import Testing

@testable import LinkConditioner

/// How much room a full pump waits for before it reads its source again: one whole read of the loop's buffer, a
/// quarter of a buffer too small for that, and never less than a byte.
struct PumpReadRoomTests {
    let readSize = ReadBuffer().bytes.count

    @Test func aFullPumpOfTheDefaultSizeReadsAgainOnlyOnceAWholeReadFits() {
        let capacity = ProxyOptions().connectionBuffer

        #expect(StreamPump.minimumRead(capacity: capacity, readSize: readSize) == readSize)
    }

    @Test func aPumpTooSmallForFourReadsWaitsForAQuarterOfItself() {
        #expect(StreamPump.minimumRead(capacity: 64 * 1024, readSize: readSize) == 16 * 1024)
    }

    @Test func aPumpOfAFewBytesWaitsForOneByteSoAReadNeverAsksForNone() {
        #expect(StreamPump.minimumRead(capacity: 3, readSize: readSize) == 1)
    }
}
