import Testing

@testable import LinkModel

/// The receiver's window autotuning and the quick ACKs it asks for, as Linux's tcp_rcv_space_adjust and
/// tcp_grow_window do them.
@Suite(.timeLimit(.minutes(5)))
struct ReceiveWindowTests {
    /// Full segment `index` arrives at `now`, echoing the ACK sent at `echo`; true if it was ACKed at once.
    @discardableResult
    private func arrive(_ index: Int, at now: Instant, echo: Instant, to receiver: inout TCPReceiver) -> Bool {
        let segment = TCPSegment(seq: Int64(index * TCPSender.mss), length: TCPSender.mss, isRetransmission: false)
        return receiver.receive(
            segment, now: now, echo: echo, idleRestart: .seconds(1), roundTrip: .milliseconds(50)) != nil
    }

    /// In-order full segments from the first, `spacing` apart from `start`, each echoing the ACK time `echo(i)`;
    /// returns whether each was ACKed at once.
    private func deliver(
        _ count: Int, to receiver: inout TCPReceiver, start: Instant, spacing: Duration, echo: (Int) -> Instant
    ) -> [Bool] {
        (0..<count).map { arrive($0, at: start + spacing * $0, echo: echo($0), to: &receiver) }
    }

    @Test func aSmallerRoundTripSampleReplacesTheEstimateAndALargerOneMovesItAnEighth() {
        var receiver = TCPReceiver()

        arrive(0, at: .ms(100), echo: .ms(20), to: &receiver)
        #expect(receiver.roundTripEstimate == .milliseconds(80))
        arrive(1, at: .ms(200), echo: .ms(40), to: &receiver)
        #expect(receiver.roundTripEstimate == .milliseconds(90))
        arrive(2, at: .ms(300), echo: .ms(270), to: &receiver)

        #expect(receiver.roundTripEstimate == .milliseconds(30))
    }

    @Test func withTenSegmentsARoundTripTheWindowStaysAndEverySecondSegmentIsAcked() {
        var receiver = TCPReceiver()
        let spacing = Duration.milliseconds(5)

        // 50 ms round trips (each segment echoes an ACK sent 50 ms before it), ten segments in each.
        let acked = deliver(60, to: &receiver, start: .ms(100), spacing: spacing) { .ms(50 + 5 * Double($0)) }

        #expect(receiver.space == TCPReceiver.initialWindow)
        #expect(receiver.window == TCPReceiver.initialWindow)
        #expect(acked.prefix(16).allSatisfy { $0 })
        #expect(acked.dropFirst(16).filter { $0 }.count == 22)
    }

    @Test func moreThanTenSegmentsARoundTripRaiseTheSpaceAndEachSegmentThatGrowsTheWindowIsAcked() {
        var receiver = TCPReceiver()
        let spacing = Duration.milliseconds(2)

        // 50 ms round trips, 25 segments in each: the second round trip raises the space to its record.
        let acked = deliver(60, to: &receiver, start: .ms(100), spacing: spacing) { .ms(50 + 2 * Double($0)) }

        // 25 segments: rcvwin = 2 · 25 + 16 = 66 segments plus twice 66 · 15 / 10, 264 segments of 3008 bytes,
        // half of which count as window.
        #expect(receiver.space == 264 * 3_008 / 2)
        #expect(receiver.window > TCPReceiver.initialWindow)
        #expect(receiver.window == TCPReceiver.initialWindow + 2 * TCPSender.mss * (60 - 26))
        #expect(acked.suffix(60 - 26).allSatisfy { $0 })
    }
}
