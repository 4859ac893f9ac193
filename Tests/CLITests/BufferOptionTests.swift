import Foundation
import Testing

/// `--buffer` and `--max-buffered`: sizes outside their range are refused with the range, before anything starts.
@Suite(.serialized)
struct BufferOptionTests {
    private func run(_ options: [String]) throws -> LinkcondProcess.Result {
        try LinkcondProcess.run(["run", "--listen", "127.0.0.1:0", "--upstream", "127.0.0.1:9"] + options)
    }

    @Test func aBufferWhoseSizeOverflowsIsRefusedWithTheAcceptedRange() throws {
        let result = try run(["--buffer", "9999999999999999MiB"])

        #expect(result.status == 2, "\(result.stderr)")
        #expect(result.stderr.contains("--buffer \"9999999999999999MiB\""), "\(result.stderr)")
        #expect(result.stderr.contains("from 1B to 1GiB"), "\(result.stderr)")
    }

    @Test func aBufferAboveOneGibibyteIsRefused() throws {
        let result = try run(["--buffer", "2048MiB"])

        #expect(result.status == 2)
        #expect(result.stderr.contains("from 1B to 1GiB"), "\(result.stderr)")
    }

    @Test func aMaximumBufferedOutsideItsRangeIsRefusedWithTheRange() throws {
        let small = try run(["--max-buffered", "1KiB"])
        let huge = try run(["--max-buffered", "99999999999999999999"])

        #expect(small.status == 2 && small.stderr.contains("--max-buffered \"1KiB\""), "\(small.stderr)")
        #expect(small.stderr.contains("from 1MiB to 65536MiB"), "\(small.stderr)")
        #expect(huge.status == 2 && huge.stderr.contains("from 1MiB to 65536MiB"), "\(huge.stderr)")
    }

    @Test func aUDPIdleTimeWhoseMinutesOverflowIsRefused() throws {
        let result = try run(["--udp-idle", "999999999999999999min"])

        #expect(result.status == 2)
        #expect(result.stderr.contains("--udp-idle"), "\(result.stderr)")
    }

    /// The largest whole number of minutes: its seconds fit 64 bits no longer, and its `Duration` once trapped.
    @Test func aUDPIdleTimeOfInt64MaxMinutesIsRefusedWithoutACrash() throws {
        let result = try run(["--udp-idle", "9223372036854775807min"])

        #expect(result.status == 2, "\(result.stderr)")
        #expect(
            result.stderr.contains("--udp-idle \"9223372036854775807min\": expected a duration from 1ms to 1440min"),
            "\(result.stderr)")
    }
}
